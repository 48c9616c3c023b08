"""``python -m orchestrator parse <path>``: detect what a path holds and parse it to JSON.

Accepted: an md.log file, a rocprof CSV, a directory of rocprof output, or a run directory
(``topol.log`` or ``md.log``, optionally with ``rocprof/``). Detection looks at names and
headers, not at what the caller claims, so the same command works on anything a run left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.errors import UsageError, UserError
from orchestrator.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.rocprof import find_rocprof_files, parse_rocprof

RUN_LOG_NAMES = ("topol.log", "md.log")


def _mdlog_dict(path: Path) -> dict[str, Any]:
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


def parse_path(path: Path) -> dict[str, Any]:
    """Parse whatever ``path`` is into a JSON-able dict with a ``kind`` key."""
    if not path.exists():
        raise UsageError(
            f"{path} does not exist. Pass an md.log, a rocprof CSV, a rocprof output "
            "directory or a run directory (with topol.log)."
        )
    if path.is_file():
        if _looks_like_csv(path):
            gpu = parse_rocprof(path)
            return {
                "kind": "rocprof",
                "path": str(path),
                "gpu_breakdown": gpu.model_dump(mode="json"),
            }
        return {"kind": "mdlog", "path": str(path), **_mdlog_dict(path)}
    if not path.is_dir():
        raise UsageError(f"{path} is neither a file nor a directory. Pass a log, CSV or folder.")
    log_path = next((path / n for n in RUN_LOG_NAMES if (path / n).is_file()), None)
    if log_path is not None:
        result: dict[str, Any] = {"kind": "run", "path": str(path), **_mdlog_dict(log_path)}
        prof_dir = path / "rocprof"
        has_prof = prof_dir.is_dir() and bool(find_rocprof_files(prof_dir))
        result["gpu_breakdown"] = (
            parse_rocprof(prof_dir).model_dump(mode="json") if has_prof else None
        )
        return result
    if find_rocprof_files(path):
        return {
            "kind": "rocprof",
            "path": str(path),
            "gpu_breakdown": parse_rocprof(path).model_dump(mode="json"),
        }
    raise UserError(
        f"{path} holds neither a run (topol.log or md.log) nor rocprof kernel CSVs "
        "(*kernel_trace.csv, *kernel_stats.csv, results.stats.csv). Pass one of those."
    )
