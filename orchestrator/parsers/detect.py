"""Detect what a file or folder of profiler output holds and parse it to JSON-able dicts.

Detection looks at names and headers, not at what the caller claims: an md.log by any
name, a rocprof CSV or rocpd database, or a folder of rocprof output. Run directories are
the run store's business (`orchestrator.store.runstore.inspect`), which uses these for
the files inside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.core.errors import UsageError
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.parsers.rocpd import is_sqlite
from orchestrator.parsers.rocprof import find_rocprof_files, parse_rocprof


def mdlog_dict(path: Path) -> dict[str, Any]:
    """An md.log and, when it has a cycle table, the CPU breakdown made from it."""
    log = parse_mdlog(path)
    cpu = cycle_breakdown(log) if log.cycles else None
    return {
        "mdlog": log.model_dump(mode="json"),
        "cpu_breakdown": cpu.model_dump(mode="json") if cpu else None,
    }


def _looks_like_csv(path: Path) -> bool:
    if path.suffix.lower() == ".csv":
        return True
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            first = fh.readline()
    except OSError:
        return False
    return first.startswith('"') and '","' in first


def parse_file(path: Path) -> dict[str, Any]:
    """An md.log, a rocprof CSV or a rocpd database, whatever its name, as a dict with a
    `kind` key."""
    if not path.is_file():
        raise UsageError(
            f"{path} is not a file. Pass an md.log, a rocprof CSV or a rocpd database."
        )
    if path.suffix.lower() == ".db" or is_sqlite(path) or _looks_like_csv(path):
        gpu = parse_rocprof(path)
        return {"kind": "rocprof", "path": str(path), "gpu_breakdown": gpu.model_dump(mode="json")}
    return {"kind": "mdlog", "path": str(path), **mdlog_dict(path)}


def parse_profile_dir(path: Path) -> dict[str, Any] | None:
    """A folder of rocpd databases or rocprof kernel CSVs (any depth) as a dict; None when
    it has none."""
    if not find_rocprof_files(path):
        return None
    return {
        "kind": "rocprof",
        "path": str(path),
        "gpu_breakdown": parse_rocprof(path).model_dump(mode="json"),
    }
