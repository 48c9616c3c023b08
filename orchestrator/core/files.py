"""Atomic file writes: a file that exists is complete, whatever interrupts the writer.

Everything the tool leaves on disk (result.json, lockfiles, reports, downloaded
inputs, checksum sidecars) goes through `atomic_writer`: a temporary name in the same
directory, flushed and fsync'd, then renamed over the target. It gets the mode any
other new file would (0644 under umask 022), not `mkstemp`'s private 0600, so a team's
shared results folder stays readable. Everything read back goes through `read_model`,
which turns a missing, cut-short or edited file into one paragraph naming the file and
the fix.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TypeVar

from pydantic import BaseModel, ValidationError

from orchestrator.core.errors import UserError, space_for


@contextlib.contextmanager
def atomic_writer(path: Path, suffix: str = ".tmp", what: str = "") -> Iterator[IO[bytes]]:
    """Yield a binary file that replaces `path` when the block ends without an exception.

    The temporary file is `.<name>.<random><suffix>` beside `path`, so a crash leaves
    at most a dot-file that a later sweep can recognise (inputs use `.part`). A disk
    that fills up (ENOSPC, EDQUOT) removes the temporary file and raises `NoSpace`
    naming `path` (as `what`, when given): the old file, if any, stays whole.
    """
    with space_for(path, what or "a file"):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
        try:
            os.fchmod(fd, new_mode())
            with os.fdopen(fd, "wb") as out:
                yield out
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)  # a full disk too: the space goes back
            raise


_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process's umask, read without changing it where Linux says it (4.7 and later);
    elsewhere set and put back at once."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def new_mode(executable: bool = False) -> int:
    """The mode `open()` gives a new file under the current umask (0644 under umask 022;
    `executable`, as `mkdir()` gives a folder: 0755), for what `tempfile` makes private."""
    return (0o777 if executable else 0o666) & ~umask()


def write_atomic(path: Path, data: str | bytes, what: str = "") -> Path:
    """Write `data` (text is UTF-8) to `path` atomically; return `path`."""
    with atomic_writer(path, what=what) as out:
        out.write(data.encode() if isinstance(data, str) else data)
    return path


# Reading records -----------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


class DamagedRecord(UserError):
    """A record on disk (or in a label) is missing, truncated or not what it should be."""


def read_model(path: Path, model: type[M], what: str, fix: str) -> M:
    """The `model` stored as JSON in `path`, or a `DamagedRecord` naming it and `fix`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DamagedRecord(f"{path} ({what}) is missing. {fix}") from None
    except OSError as exc:
        raise DamagedRecord(f"{path} ({what}) cannot be read: {exc.strerror}. {fix}") from None
    return parse_model(raw, model, f"{path} ({what})", fix)


def parse_model(raw: str | bytes, model: type[M], where: str, fix: str) -> M:
    """`raw` JSON as `model`, or a `DamagedRecord` saying what is wrong with `where`."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise DamagedRecord(f"{where} is damaged: {damage(exc)}. {fix}") from None


def damage(exc: ValidationError) -> str:
    """One line on what is wrong: cut short, not JSON, or which field is wrong."""
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        detail = str(first.get("ctx", {}).get("error", first["msg"]))
        cut = "EOF" in detail
        return f"{'it ends mid-way' if cut else 'it is not valid JSON'} ({detail})"
    where = ".".join(str(p) for p in first["loc"]) or "the top level"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"
