"""``metadata.json``: the tool's version, its settings and the files it says it wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.core.errors import UserError
from orchestrator.parsers.rocprof_sys.models import OutputFile, SystemTrace
from orchestrator.parsers.rocprof_sys.reading import (
    RUN_FIX,
    json_object,
    json_text,
    load_json,
    relative,
)

#: Settings worth keeping with a result: what was traced and how the output was laid out.
SETTINGS_OF_INTEREST = (
    "TRACE",
    "PROFILE",
    "USE_SAMPLING",
    "SAMPLING_FREQ",
    "USE_PROCESS_SAMPLING",
    "USE_ROCM",
    "USE_ROCPROFILER",
    "ROCM_EVENTS",
    "TIMEMORY_COMPONENTS",
    "PAPI_EVENTS",
    "FLAT_PROFILE",
    "TIMELINE_PROFILE",
    "OUTPUT_PATH",
    "OUTPUT_PREFIX",
    "OUTPUT_FILE",
    "TIME_OUTPUT",
    "USE_PID",
    "JSON_OUTPUT",
    "TEXT_OUTPUT",
    "TREE_OUTPUT",
    "COLLAPSE_THREADS",
    "COLLAPSE_PROCESSES",
)
_SETTING_PREFIXES = ("ROCPROFSYS_", "OMNITRACE_")
_METADATA_ROOTS = ("rocprof-sys", "rocprofiler-systems", "omnitrace")


def _metadata(data: Any) -> dict[str, Any] | None:
    for root in _METADATA_ROOTS:
        block = json_object(json_object(data).get(root))
        if isinstance(block.get("metadata"), dict):
            return json_object(block["metadata"])
    return None


def _setting_value(entry: Any) -> str | int | float | bool | None:
    value = entry.get("value") if isinstance(entry, dict) else entry
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value)


def _listed_files(output: Any) -> Iterator[tuple[str, str, str]]:
    """(kind, key, path) of metadata's ``output`` block."""
    if not isinstance(output, dict):
        return
    for kind, groups in output.items():
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict):
                continue
            values = group.get("value")
            for value in values if isinstance(values, list) else [values]:
                if isinstance(value, str):
                    yield str(kind), str(group.get("key", "")), value


def _locate(listed: str, root: Path) -> str | None:
    """Where a listed (possibly absolute, other-machine) path is under ``root``, if there."""
    candidate = Path(listed)
    if not candidate.is_absolute() and (root / candidate).is_file():
        return str(candidate)
    parts = candidate.parts
    for start in range(len(parts)):
        tail = Path(*parts[start:]) if parts[start:] else None
        if tail is not None and not tail.is_absolute() and (root / tail).is_file():
            return str(tail)
    return None


def read_metadata(trace: SystemTrace, path: Path, root: Path) -> None:
    """Add one metadata file to ``trace``: the first file to name a version or setting wins."""
    meta = _metadata(load_json(path, "rocprof-sys metadata"))
    if meta is None:
        raise UserError(
            f"{path} has no ['rocprof-sys' or 'rocprofiler-systems']['metadata'] object, so it "
            f"is not rocprof-sys metadata. {RUN_FIX}"
        )
    trace.metadata_files.append(relative(path, root))
    info = json_object(meta.get("info"))
    for prefix in ("ROCPROFSYS_", "OMNITRACE_"):
        trace.tool_version = trace.tool_version or json_text(info.get(prefix + "VERSION"))
        trace.rocm_version = trace.rocm_version or json_text(info.get(prefix + "ROCM_VERSION"))
    trace.timemory_version = trace.timemory_version or json_text(info.get("TIMEMORY_VERSION"))
    if trace.launched is None and info.get("LAUNCH_DATE"):
        trace.launched = f"{info['LAUNCH_DATE']} {info.get('LAUNCH_TIME', '')}".strip()
    settings = json_object(meta.get("settings"))
    command = settings.get("command_line", meta.get("command_line"))
    if not trace.command_line and isinstance(command, list):
        trace.command_line = [str(part) for part in command]
    for name, entry in settings.items():
        for prefix in _SETTING_PREFIXES:
            if name.startswith(prefix) and name[len(prefix) :] in SETTINGS_OF_INTEREST:
                trace.settings.setdefault(name, _setting_value(entry))
    for kind, key, listed in _listed_files(meta.get("output")):
        found = _locate(listed, root)
        trace.listed_files.append(OutputFile(kind=kind, key=key, path=listed, relative=found))
