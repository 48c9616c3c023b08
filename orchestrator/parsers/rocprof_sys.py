"""Parse a rocprof-sys (formerly Omnitrace) output directory into a :class:`SystemTrace`.

rocprof-sys writes ``<OUTPUT_PATH>[/<TIMESTAMP>]/[<PREFIX>]<DATA_NAME>[-<PID>].<EXT>``
(``docs/how-to/understanding-rocprof-sys-output.rst``): ``metadata[-<pid>].json`` (settings,
environment, the list of files it wrote), ``perfetto-trace[-<pid>].proto`` (the timeline),
rocpd ``.db`` databases on newer releases, and one timemory file per component, of which
``wall_clock[-<pid>].json`` is the flat call-site profile:
``["timemory"]["wall_clock"]["ranks"][i]["graph"][j]`` with ``prefix`` (``|0>>> |_name``:
thread 0, ``|_`` per nesting level; ``|MM|NN>>>`` is rank MM, thread NN), ``depth``,
``entry.laps`` and ``stats{sum, count, min, max, mean, stddev}`` in ``unit_repr`` units.
The docs spell it both ``wall_clock`` and ``wall-clock``; both are globbed, and the text
table ``wall_clock.txt`` is read when no JSON was written.

The flat graph lists call sites in depth-first order, so a call site's children are the
entries that follow it one level deeper; its *self* time is its total minus theirs,
floored at zero as timemory's own ``% SELF`` column is (worker threads' regions are nested
under the parallel region that started them, so children can outlast their parent).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from orchestrator.core.errors import UserError

__all__ = [
    "FunctionRow",
    "OutputFile",
    "SystemTrace",
    "find_output_dir",
    "parse_output",
    "parse_wall_clock_json",
    "parse_wall_clock_text",
    "perfetto_hint",
]

SCHEMA_VERSION = 1
PERFETTO_UI = "https://ui.perfetto.dev"
#: rocprof-sys validates its traces with trace_processor v46 and says to use this UI
#: version when the current one cannot open a trace (understanding-rocprof-sys-output.rst).
PERFETTO_UI_V46 = "https://ui.perfetto.dev/v46.0-35b3d9845/#!/"
_RUN_FIX = (
    "Run the program under 'rocprof-sys-run' or 'rocprof-sys-sample' with "
    "ROCPROFSYS_OUTPUT_PATH set, let it exit normally (the files are written at exit), and "
    "pass that directory."
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
_UNITS = {"sec": 1.0, "s": 1.0, "msec": 1e-3, "ms": 1e-3, "usec": 1e-6, "us": 1e-6}
_UNITS |= {"nsec": 1e-9, "ns": 1e-9, "min": 60.0}


class OutputFile(BaseModel):
    """One file ``metadata.json`` says was written."""

    kind: str = Field(description="metadata's group: json, text, protobuf, ...")
    key: str = Field(description="the component or writer, e.g. wall_clock, perfetto")
    path: str = Field(description="as listed (often absolute, on the profiled machine)")
    relative: str | None = Field(None, description="where it is, relative to the output dir")


class FunctionRow(BaseModel):
    """One call site of the flat wall-clock profile."""

    name: str
    rank: int | None = None
    thread: int | None = None
    depth: int
    count: int
    total_s: float
    mean_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    stddev_s: float | None = None
    self_s: float | None = None
    source: str = Field(description="the file it was read from")


class SystemTrace(BaseModel):
    """What a rocprof-sys run left, summarised for ``result.json`` and reports."""

    schema_version: int = SCHEMA_VERSION
    source: str = "rocprof-sys"
    output_dir: str = Field(description="the directory given; every path is relative to it")
    tool_version: str | None = None
    timemory_version: str | None = None
    rocm_version: str | None = None
    launched: str | None = Field(None, description="LAUNCH_DATE LAUNCH_TIME from metadata")
    command_line: list[str] = Field(default_factory=list)
    settings: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    metadata_files: list[str] = Field(default_factory=list)
    files: list[str] = Field(
        default_factory=list, description="every file under output_dir, relative to it"
    )
    listed_files: list[OutputFile] = Field(
        default_factory=list, description="the files metadata says were written"
    )
    perfetto_traces: list[str] = Field(default_factory=list, description="relative paths")
    rocpd_databases: list[str] = Field(default_factory=list, description="relative paths")
    wall_clock_files: list[str] = Field(default_factory=list)
    wall_clock_s: float | None = Field(
        None, description="the longest top-level (depth 0) region: the program's main"
    )
    functions: list[FunctionRow] = Field(default_factory=list, description="by total, desc")
    notes: list[str] = Field(default_factory=list)


# --- helpers -------------------------------------------------------------------------------


def _load_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read {path} ({what}): {exc.strerror}. {_RUN_FIX}") from None
    if not text.strip():
        raise UserError(f"{path} ({what}) is empty. {_RUN_FIX}")
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
            f"{path} ({what}): {why}; line {exc.lineno}, column {exc.colno}: {exc.msg}. {_RUN_FIX}"
        ) from None


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _glob(root: Path, *patterns: str) -> list[Path]:
    found = {p for pattern in patterns for p in root.rglob(pattern) if p.is_file()}
    return sorted(found, key=lambda p: (len(p.parts), str(p)))


_PREFIX = re.compile(r"^\|(\d+)(?:\|(\d+))?>>>\s?(.*)$")


def _split_prefix(prefix: str) -> tuple[int | None, int | None, str]:
    """``|0>>>   |_name`` → (rank, thread, name): decoration stripped."""
    match = _PREFIX.match(prefix.strip())
    if match is None:
        return None, None, prefix.strip()
    first, second, rest = match.groups()
    rank, thread = (int(first), int(second)) if second is not None else (None, int(first))
    name = rest.strip()
    return rank, thread, name[2:].strip() if name.startswith("|_") else name


def _self_times(depths: list[int], totals: list[float], gaps: set[int]) -> list[float | None]:
    """Self time per entry of a depth-first list: total minus the direct children's totals.

    ``gaps`` are positions (indexes of the entry that follows) where the file had an entry
    without a prefix (the docs' ``"..."`` placeholders): any call site open there may have
    lost a child, so its self time is unknown (None).
    """
    selfs: list[float | None] = list(totals)
    stack: list[int] = []
    for index, depth in enumerate(depths):
        if index in gaps:
            for open_index in stack:
                selfs[open_index] = None
        while stack and depths[stack[-1]] >= depth:
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is not None and depths[parent] == depth - 1:
            value = selfs[parent]
            selfs[parent] = None if value is None else value - totals[index]
        stack.append(index)
    if len(depths) in gaps:
        for open_index in stack:
            selfs[open_index] = None
    return [None if value is None else max(value, 0.0) for value in selfs]


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int | float) and value != "" else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (the samples hold placeholders)."""
    return value if isinstance(value, dict) else {}


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


# --- wall clock ----------------------------------------------------------------------------


def parse_wall_clock_json(path: Path, root: Path | None = None) -> list[FunctionRow]:
    """Call sites of a flat timemory ``wall_clock.json`` (placeholders without prefix skipped)."""
    data = _load_json(path, "rocprof-sys wall-clock profile")
    try:
        metric = data["timemory"]["wall_clock"]
        ranks = metric["ranks"]
    except (KeyError, TypeError):
        raise UserError(
            f"{path} has no ['timemory']['wall_clock']['ranks'] list, so it is not a flat "
            "timemory wall-clock profile (the .tree.json holds the hierarchical one). "
            f"Enable ROCPROFSYS_JSON_OUTPUT=ON. {_RUN_FIX}"
        ) from None
    unit = str(_dict(metric).get("unit_repr", "sec")).strip().lower()
    scale = _UNITS.get(unit, 1.0)
    source = _relative(path, root) if root else path.name
    rows: list[FunctionRow] = []
    for item_rank in ranks if isinstance(ranks, list) else []:
        rank_data = _dict(item_rank)
        graph = rank_data.get("graph", [])
        entries: list[dict[str, Any]] = []
        gaps: set[int] = set()
        for item in graph if isinstance(graph, list) else []:
            if isinstance(item, dict) and isinstance(item.get("prefix"), str):
                entries.append(item)
            else:
                gaps.add(len(entries))
        depths: list[int] = []
        totals: list[float] = []
        for entry in entries:
            stats, inner = _dict(entry.get("stats")), _dict(entry.get("entry"))
            total = _float(stats.get("sum"))
            if total is None:
                total = _float(inner.get("repr_data")) or 0.0
            depths.append(int(entry.get("depth", 0)))
            totals.append(total * scale)
        for entry, depth, total, self_s in zip(
            entries, depths, totals, _self_times(depths, totals, gaps), strict=True
        ):
            stats, inner = _dict(entry.get("stats")), _dict(entry.get("entry"))
            rank, thread, name = _split_prefix(entry["prefix"])
            count = stats.get("count", inner.get("laps", 0))

            def scaled(key: str, stats: dict[str, Any] = stats) -> float | None:
                value = _float(stats.get(key))
                return None if value is None else value * scale

            rows.append(
                FunctionRow(
                    name=name,
                    rank=rank if rank is not None else _int_or_none(rank_data.get("rank")),
                    thread=thread,
                    depth=depth,
                    count=int(count) if isinstance(count, int | float) else 0,
                    total_s=total,
                    mean_s=scaled("mean"),
                    min_s=scaled("min"),
                    max_s=scaled("max"),
                    stddev_s=scaled("stddev"),
                    self_s=self_s,
                    source=source,
                )
            )
    return rows


_TEXT_ROW = re.compile(
    r"^\|\s(?P<label>\|.*?>>>.*?)\s*\|\s*(?P<count>\d+)\s*\|\s*(?P<depth>\d+)\s*\|"
    r"\s*(?P<metric>\S+)\s*\|\s*(?P<unit>\S+)\s*\|\s*(?P<sum>\S+)\s*\|\s*(?P<mean>\S+)\s*\|"
    r"\s*(?P<min>\S+)\s*\|\s*(?P<max>\S+)\s*\|\s*\S+\s*\|\s*(?P<stddev>\S+)\s*\|"
    r"\s*(?P<self>\S+)\s*\|\s*$"
)


def parse_wall_clock_text(path: Path, root: Path | None = None) -> list[FunctionRow]:
    """Call sites of timemory's text table ``wall_clock.txt`` (labels may be truncated)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UserError(f"Cannot read {path}: {exc.strerror}. {_RUN_FIX}") from None
    source = _relative(path, root) if root else path.name
    rows: list[FunctionRow] = []
    for line in lines:
        match = _TEXT_ROW.match(line.strip())
        if match is None:
            continue
        try:
            scale = _UNITS.get(match["unit"].lower(), 1.0)
            total = float(match["sum"]) * scale
            self_pct = float(match["self"])
            rank, thread, name = _split_prefix(match["label"])
            rows.append(
                FunctionRow(
                    name=name,
                    rank=rank,
                    thread=thread,
                    depth=int(match["depth"]),
                    count=int(match["count"]),
                    total_s=total,
                    mean_s=float(match["mean"]) * scale,
                    min_s=float(match["min"]) * scale,
                    max_s=float(match["max"]) * scale,
                    stddev_s=float(match["stddev"]) * scale,
                    self_s=total * self_pct / 100.0,
                    source=source,
                )
            )
        except ValueError:
            continue  # a row whose numbers timemory did not print (e.g. 'nan'): not a call site
    if not rows:
        raise UserError(
            f"{path} has no timemory table row ('| |0>>> name | COUNT | DEPTH | ...'). {_RUN_FIX}"
        )
    return rows


# --- metadata ------------------------------------------------------------------------------


def _metadata(data: Any) -> dict[str, Any] | None:
    for root in _METADATA_ROOTS:
        block = _dict(_dict(data).get(root))
        if isinstance(block.get("metadata"), dict):
            return _dict(block["metadata"])
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


def _read_metadata(trace: SystemTrace, path: Path, root: Path) -> None:
    meta = _metadata(_load_json(path, "rocprof-sys metadata"))
    if meta is None:
        raise UserError(
            f"{path} has no ['rocprof-sys' or 'rocprofiler-systems']['metadata'] object, so it "
            f"is not rocprof-sys metadata. {_RUN_FIX}"
        )
    trace.metadata_files.append(_relative(path, root))
    info = _dict(meta.get("info"))
    for prefix in ("ROCPROFSYS_", "OMNITRACE_"):
        trace.tool_version = trace.tool_version or _text(info.get(prefix + "VERSION"))
        trace.rocm_version = trace.rocm_version or _text(info.get(prefix + "ROCM_VERSION"))
    trace.timemory_version = trace.timemory_version or _text(info.get("TIMEMORY_VERSION"))
    if trace.launched is None and info.get("LAUNCH_DATE"):
        trace.launched = f"{info['LAUNCH_DATE']} {info.get('LAUNCH_TIME', '')}".strip()
    settings = _dict(meta.get("settings"))
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


# --- the output directory ------------------------------------------------------------------

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
    found = _glob(path, *_MARKERS)
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
            f"at or under {path}. {_RUN_FIX}"
        )
    trace = SystemTrace(output_dir=str(root))
    trace.files = _paths(_glob(root, "*"), root)
    for meta in _glob(root, "metadata*.json"):
        _read_metadata(trace, meta, root)
    profiles = [
        p
        for p in _glob(root, "wall_clock*.json", "wall-clock*.json")
        if not p.name.endswith(".tree.json")
    ]
    rows: list[FunctionRow] = []
    for profile in profiles:
        rows.extend(parse_wall_clock_json(profile, root))
    if not profiles:
        profiles = _glob(root, "wall_clock*.txt", "wall-clock*.txt")
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
    found = set(_paths(_glob(root, "perfetto-trace*.proto", "*.pftrace"), root))
    found |= {f.relative for f in trace.listed_files if f.key == "perfetto" and f.relative}
    trace.perfetto_traces = sorted(found)
    trace.rocpd_databases = _paths(_glob(root, "*.db"), root)
    missing = [f.path for f in trace.listed_files if f.relative is None]
    if missing:
        trace.notes.append(
            f"{len(missing)} file(s) listed in metadata are not in {root} (written elsewhere, "
            f"or not copied): {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}"
        )
    return trace


def _paths(found: Iterable[Path], root: Path) -> list[str]:
    return [_relative(p, root) for p in found]


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
