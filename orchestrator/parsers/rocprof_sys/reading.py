"""Reading rocprof-sys's JSON, whose samples hold placeholders where values should be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.core.errors import UserError

RUN_FIX = (
    "Run the program under 'rocprof-sys-run' or 'rocprof-sys-sample' with "
    "ROCPROFSYS_OUTPUT_PATH set, let it exit normally (the files are written at exit), and "
    "pass that directory."
)


def load_json(path: Path, what: str) -> Any:
    """The file's JSON, or a UserError saying whether it was cut short or damaged."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read {path} ({what}): {exc.strerror}. {RUN_FIX}") from None
    if not text.strip():
        raise UserError(f"{path} ({what}) is empty. {RUN_FIX}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) - 1
        why = (
            "it ends mid-way, as a run killed before it exited leaves it"
            if cut
            else "it is not valid JSON (edited or damaged)"
        )
        raise UserError(
            f"{path} ({what}): {why}; line {exc.lineno}, column {exc.colno}: {exc.msg}. {RUN_FIX}"
        ) from None


def relative(path: Path, root: Path) -> str:
    """How a record names a file: relative to the output directory when under it."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def find_files(root: Path, *patterns: str) -> list[Path]:
    """Files matching any pattern at any depth, shallowest first, then by path."""
    found = {p for pattern in patterns for p in root.rglob(pattern) if p.is_file()}
    return sorted(found, key=lambda p: (len(p.parts), str(p)))


def json_text(value: Any) -> str | None:
    """A scalar as text; None for an empty string or a placeholder object."""
    return str(value) if isinstance(value, str | int | float) and value != "" else None


def json_int(value: Any) -> int | None:
    """An integer, not a bool (which JSON's ``true`` would pass as)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (the samples hold placeholders)."""
    return value if isinstance(value, dict) else {}


def json_number(value: Any) -> float | None:
    """A number as float; None for a bool or anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
