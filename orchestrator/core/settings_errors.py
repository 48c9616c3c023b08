"""The paragraph for a setting that cannot be read: which variable, what is wrong, the fix.

Two ways a value fails. pydantic-settings reads a table or list setting's environment
value as JSON before validating it, and a value that is not JSON stops it there
(`SettingsError`, naming only the field): `not_json` names the variables given and
how to write them. Every other wrong value is a `ValidationError` naming the field,
the value and what it should be: `invalid`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from orchestrator.core.errors import UsageError
from orchestrator.core.urls import without_userinfo

#: How a table and a list are written in an ORCH_* variable.
JSON_TABLE = """'{"key": "value"}'"""
JSON_LIST = """'["a", "b"]'"""


def env_name(loc: tuple[Any, ...]) -> str:
    """The variable of a setting's location: ("slurm", "extra_args") is ORCH_SLURM__EXTRA_ARGS."""
    return "ORCH_" + "__".join(str(part).upper() for part in loc)


def invalid(exc: ValidationError, secrets: Collection[str]) -> UsageError:
    """Each wrong value with its variable, what was given (never a secret) and why."""
    problems = []
    for err in exc.errors(include_url=False):
        name = env_name(tuple(err["loc"]))
        given = err.get("input")
        secret = bool(err["loc"]) and err["loc"][0] in secrets
        if isinstance(given, str):
            given = without_userinfo(given)  # a URL's token is a secret too
        shown = "" if secret or isinstance(given, dict) else f" (got {given!r})"
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "is not a known setting; see the settings table in docs/settings.md"
        elif err["type"] in ("model_type", "dict_type"):
            msg += f"; give it as JSON ({JSON_TABLE}) or one variable a key ({name}__KEY=value)"
        problems.append(f"{name}{shown}: {msg}")
    return UsageError("Invalid setting. " + "; ".join(problems) + ".")


def not_json(exc: SettingsError) -> UsageError:
    """An `ORCH_<TABLE>` (or `ORCH_<TABLE>__<KEY>`) value that is not the JSON its setting
    needs: the variables given, why, and the two ways to write it."""
    found = re.search(r'field "(\w+)"', str(exc))
    table = env_name((found.group(1),)) if found else "ORCH_"
    given = [
        f"{name}={value!r}" for name, value in sorted(os.environ.items())
        if name.upper() == table or name.upper().startswith(f"{table}__")
    ]  # fmt: skip
    why = f" ({exc.__cause__})" if exc.__cause__ else ""
    return UsageError(
        f"Invalid setting: {', '.join(given) or table} could not be read{why}. A setting "
        f"that holds a table or a list takes JSON in the environment ({table}={JSON_TABLE}, "
        f"a list as {JSON_LIST}), or one variable per key ({table}__KEY=value); "
        "docs/settings.md lists them."
    )
