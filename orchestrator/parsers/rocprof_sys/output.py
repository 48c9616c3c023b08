"""A rocprof-sys output directory, found and read whole into a :class:`SystemTrace`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.rocprof_sys.metadata import read_metadata
from orchestrator.parsers.rocprof_sys.models import FunctionRow, SystemTrace
from orchestrator.parsers.rocprof_sys.reading import RUN_FIX, find_files, relative
from orchestrator.parsers.rocprof_sys.wall_clock import parse_wall_clock_json, parse_wall_clock_text

PERFETTO_UI = "https://ui.perfetto.dev"
#: rocprof-sys validates its traces with trace_processor v46 and says to use this UI
#: version when the current one cannot open a trace (understanding-rocprof-sys-output.rst).
PERFETTO_UI_V46 = "https://ui.perfetto.dev/v46.0-35b3d9845/#!/"

_MARKERS = (
    "metadata*.json",
    "wall_clock*.json",
    "wall-clock*.json",
    "wall_clock*.txt",
    "wall-clock*.txt",
    "perfetto-trace*.proto",
)


def find_output_dir(path: Path) -> Path | None:
    """The rocprof-sys output directory at or under ``path`` (shallowest first), or None."""
    if path.is_file():
        path = path.parent
    if not path.is_dir():
        return None
    found = find_files(path, *_MARKERS)
    return found[0].parent if found else None


def _function_key(row: FunctionRow) -> tuple[float, str]:
    return -row.total_s, row.name


def parse_output(path: Path) -> SystemTrace:
    """A rocprof-sys output directory (``ROCPROFSYS_OUTPUT_PATH``) → :class:`SystemTrace`.

    Everything below ``path`` is read, and every path recorded is relative to it: each
    ``metadata*.json`` and ``wall_clock*.json`` / ``wall-clock*.json`` (one per process with
    ``ROCPROFSYS_USE_PID``, in time-stamped sub-folders with ``ROCPROFSYS_TIME_OUTPUT``), and
    ``wall_clock*.txt`` only when no JSON profile exists.
    """
    if not path.exists():
        raise UserError(f"{path} does not exist. Pass a rocprof-sys output directory.")
    root = path if path.is_dir() else path.parent
    if find_output_dir(root) is None:
        raise UserError(
            f"No rocprof-sys output (metadata.json, wall_clock.json, perfetto-trace.proto) "
            f"at or under {path}. {RUN_FIX}"
        )
    trace = SystemTrace(output_dir=str(root))
    trace.files = _paths(find_files(root, "*"), root)
    for meta in find_files(root, "metadata*.json"):
        read_metadata(trace, meta, root)
    profiles = [
        p
        for p in find_files(root, "wall_clock*.json", "wall-clock*.json")
        if not p.name.endswith(".tree.json")
    ]
    rows: list[FunctionRow] = []
    for profile in profiles:
        rows.extend(parse_wall_clock_json(profile, root))
    if not profiles:
        profiles = find_files(root, "wall_clock*.txt", "wall-clock*.txt")
        for text in profiles:
            rows.extend(parse_wall_clock_text(text, root))
    trace.wall_clock_files = _paths(profiles, root)
    if not profiles:
        trace.notes.append(
            "no wall_clock profile (ROCPROFSYS_PROFILE=OFF, or JSON/text output disabled)"
        )
    rows.sort(key=_function_key)
    trace.functions = rows
    tops = [row.total_s for row in rows if row.depth == 0]
    trace.wall_clock_s = max(tops) if tops else None
    found = set(_paths(find_files(root, "perfetto-trace*.proto", "*.pftrace"), root))
    found |= {f.relative for f in trace.listed_files if f.key == "perfetto" and f.relative}
    trace.perfetto_traces = sorted(found)
    trace.rocpd_databases = _paths(find_files(root, "*.db"), root)
    missing = [f.path for f in trace.listed_files if f.relative is None]
    if missing:
        trace.notes.append(
            f"{len(missing)} file(s) listed in metadata are not in {root} (written elsewhere, "
            f"or not copied): {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}"
        )
    return trace


def _paths(found: Iterable[Path], root: Path) -> list[str]:
    return [relative(p, root) for p in found]


def perfetto_hint(trace: SystemTrace | Path | str) -> str:
    """How to open a Perfetto trace (a file, or a summary's first trace): one paragraph."""
    if isinstance(trace, SystemTrace):
        if not trace.perfetto_traces:
            return (
                f"rocprof-sys wrote no Perfetto trace in {trace.output_dir} "
                "(ROCPROFSYS_TRACE=OFF, or a newer release's rocpd-only output: see "
                f"{', '.join(trace.rocpd_databases) or 'no .db file either'})."
            )
        trace = Path(trace.output_dir) / trace.perfetto_traces[0]
    return (
        f"Open {trace} in a browser at {PERFETTO_UI} ('Open trace file'), "
        f"or query it with Perfetto's trace_processor: "
        f"'trace_processor {trace}'. If the current UI cannot read it, use "
        f"{PERFETTO_UI_V46}: rocprof-sys validates its traces with trace_processor v46."
    )
