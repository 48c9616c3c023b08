"""Atomic file writes: a file that exists is complete, whatever interrupts the writer.

Everything the tool leaves on disk (result.json, lockfiles, reports, downloaded
inputs, checksum sidecars) goes through `atomic_writer`: a temporary name in the same
directory, flushed and fsync'd, then renamed over the target.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_writer(path: Path, suffix: str = ".tmp") -> Iterator[IO[bytes]]:
    """Yield a binary file that replaces `path` when the block ends without an exception.

    The temporary file is `.<name>.<random><suffix>` beside `path`, so a crash leaves
    at most a dot-file that a later sweep can recognise (inputs use `.part`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write `data` (text is UTF-8) to `path` atomically; return `path`."""
    with atomic_writer(path) as out:
        out.write(data.encode() if isinstance(data, str) else data)
    return path
