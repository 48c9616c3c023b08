"""The one exception type users see: a one-paragraph message, never a traceback."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix; `message` names the thing and the fix.

    Exit code 2 is for bad input (settings, arguments), 1 for everything else
    (missing engine, failed build, failed run).
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class UsageError(UserError):
    """Bad arguments or settings: exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)
