"""The one exception type users see: a one-paragraph message, never a traceback."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from orchestrator.core.exits import ExitCode


class UserError(Exception):
    """A problem the user can fix; `message` names the thing and the fix.

    Exit code 2 is for bad input (settings, arguments), 1 for everything else
    (missing engine, failed build, failed run): `core.exits`.
    """

    def __init__(self, message: str, exit_code: int = ExitCode.ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class UsageError(UserError):
    """Bad arguments or settings: exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=ExitCode.USAGE)


#: The errnos of a write that found no room: a full filesystem, or a full quota.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class NoSpace(UserError):
    """A write found no room; `path` is where, and `failure` says so in a run record.

    Not a failed build or a failed run of the thing measured: a bisect stops at it
    rather than skipping a commit that would have built on a roomier disk.
    """

    def __init__(self, message: str, path: Path | str, added: str = "") -> None:
        super().__init__(message)
        self.path = Path(path)
        #: The sentences `adding` put after the first paragraph's fix.
        self.added = added

    @property
    def failure(self) -> str:
        return f"no space left on device: {self.path}"

    def adding(self, sentence: str) -> NoSpace:
        """The same error with one more sentence (what became of the run, the image)."""
        return NoSpace(f"{self.message} {sentence}", self.path, f"{self.added} {sentence}".strip())


def no_space(path: Path, what: str) -> NoSpace:
    """The paragraph for `what` not fitting at `path`: where, how much room, and the fix."""
    mount = _mount_point(path)
    return NoSpace(
        f"No space left on device: {what} could not be written to {path} (the filesystem "
        f"mounted at {mount} has {_free(mount)} free). Free space there (`df -h {mount}` shows "
        "it), or point the tool at a larger filesystem (ORCH_RESULTS_DIR for runs, records "
        "and logs, ORCH_CACHE_DIR for downloaded inputs, TMPDIR for build contexts), then run "
        "the command again.",
        path,
    )


#: Less room than this where a program failed: it most likely failed for want of room.
NEARLY_FULL_BYTES = 1 << 20


def filled_up(path: Path, what: str) -> NoSpace | None:
    """`no_space(path, what)` when the filesystem holding `path` is (all but) full: for a
    program that failed writing there and said so in its own words, or not at all."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return no_space(path, what) if stat.f_bavail * stat.f_frsize < NEARLY_FULL_BYTES else None


def is_no_space(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS


@contextlib.contextmanager
def space_for(path: Path, what: str) -> Iterator[None]:
    """Turn a write that finds no room inside the block into `no_space(path, what)`."""
    try:
        yield
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            raise no_space(path, what) from None
        raise


def _mount_point(path: Path) -> Path:
    path = path.absolute()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def _free(mount: Path) -> str:
    try:
        stat = os.statvfs(mount)
    except OSError:
        return "an unknown amount"
    free = float(stat.f_bavail * stat.f_frsize)
    if free < 1024:
        return f"{free:.0f} bytes"
    for unit in ("kB", "MB", "GB"):
        free /= 1024
        if free < 1024 or unit == "GB":
            break
    return f"{free:.1f} {unit}"
