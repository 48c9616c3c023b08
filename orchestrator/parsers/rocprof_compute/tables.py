"""rocprof-compute's CSV files, held whole and read by column name; damage is a UserError."""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from orchestrator.core.errors import UserError

PROFILE_FIX = (
    "Profile again with 'rocprof-compute profile -n <name> -- <command>' and pass the whole "
    "workload directory (<out>/<name>/<gpu model>/)."
)


_MISSING = {"", "na", "n/a", "nan", "none", "null"}


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


@dataclass
class Table:
    """A CSV file held as rows; columns looked up by lower-cased name."""

    path: Path
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line number, cells)
    columns: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, name in enumerate(self.header):
            self.columns.setdefault(name.strip().lower(), index)

    def has(self, name: str) -> bool:
        return name.lower() in self.columns

    def text(self, cells: list[str], name: str) -> str | None:
        index = self.columns.get(name.lower())
        if index is None or index >= len(cells):
            return None
        value = cells[index].strip()
        return None if value.lower() in _MISSING else value

    def number(self, cells: list[str], name: str, line: int) -> float | None:
        value = self.text(cells, name)
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            raise UserError(
                f"{self.path} line {line}, column {name}: {value!r} is not a number. "
                "rocprof-compute writes only numbers there, so the file was edited or "
                f"damaged. {PROFILE_FIX}"
            ) from None


def _ends_with_newline(path: Path) -> bool:
    """Every writer of these files ends them with a line break; gzip checks its own end."""
    if path.suffix == ".gz":
        return True
    with path.open("rb") as handle:
        handle.seek(0, 2)
        if handle.tell() == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) in (b"\n", b"\r")


def read_table(path: Path, what: str) -> Table:
    """The whole CSV, or a UserError for a missing, empty or cut-short file."""
    try:
        handle = _open_text(path)
    except OSError as exc:
        raise UserError(f"Cannot read {path} ({what}): {exc.strerror}. {PROFILE_FIX}") from None
    try:
        with handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            rows = [(reader.line_num, row) for row in reader if any(c.strip() for c in row)]
    except (csv.Error, OSError, EOFError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} ({what}) is not a readable CSV ({exc}). {PROFILE_FIX}") from None
    if not header or not any(c.strip() for c in header):
        raise UserError(f"{path} ({what}) is empty: it has no header line. {PROFILE_FIX}")
    if not _ends_with_newline(path):
        raise UserError(
            f"{path} ({what}) ends mid-row: its last line has no line break, so the file "
            f"was cut short while it was written or copied. {PROFILE_FIX}"
        )
    for line, row in rows:
        if len(row) < len(header):
            raise UserError(
                f"{path} ({what}) line {line} has {len(row)} of the header's {len(header)} "
                "columns: the file ends mid-row (cut short while it was written or copied). "
                f"{PROFILE_FIX}"
            )
    return Table(path, header, rows)


def relative(path: Path, root: Path) -> str:
    """How a record names a file it read: relative to the folder it was found under."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
