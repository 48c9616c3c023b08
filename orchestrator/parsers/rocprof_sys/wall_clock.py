"""The flat wall-clock profile, from timemory's ``wall_clock.json`` or its text table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from orchestrator.core.errors import UserError
from orchestrator.parsers.rocprof_sys.models import FunctionRow
from orchestrator.parsers.rocprof_sys.reading import (
    RUN_FIX,
    json_int,
    json_number,
    json_object,
    load_json,
    relative,
)

_UNITS = {"sec": 1.0, "s": 1.0, "msec": 1e-3, "ms": 1e-3, "usec": 1e-6, "us": 1e-6}
_UNITS |= {"nsec": 1e-9, "ns": 1e-9, "min": 60.0}

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


def parse_wall_clock_json(path: Path, root: Path | None = None) -> list[FunctionRow]:
    """Call sites of a flat timemory ``wall_clock.json`` (placeholders without prefix skipped)."""
    data = load_json(path, "rocprof-sys wall-clock profile")
    try:
        metric = data["timemory"]["wall_clock"]
        ranks = metric["ranks"]
    except (KeyError, TypeError):
        raise UserError(
            f"{path} has no ['timemory']['wall_clock']['ranks'] list, so it is not a flat "
            "timemory wall-clock profile (the .tree.json holds the hierarchical one). "
            f"Enable ROCPROFSYS_JSON_OUTPUT=ON. {RUN_FIX}"
        ) from None
    unit = str(json_object(metric).get("unit_repr", "sec")).strip().lower()
    scale = _UNITS.get(unit, 1.0)
    source = relative(path, root) if root else path.name
    rows: list[FunctionRow] = []
    for item_rank in ranks if isinstance(ranks, list) else []:
        rank_data = json_object(item_rank)
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
            stats, inner = json_object(entry.get("stats")), json_object(entry.get("entry"))
            total = json_number(stats.get("sum"))
            if total is None:
                total = json_number(inner.get("repr_data")) or 0.0
            depths.append(int(entry.get("depth", 0)))
            totals.append(total * scale)
        for entry, depth, total, self_s in zip(
            entries, depths, totals, _self_times(depths, totals, gaps), strict=True
        ):
            stats, inner = json_object(entry.get("stats")), json_object(entry.get("entry"))
            rank, thread, name = _split_prefix(entry["prefix"])
            count = stats.get("count", inner.get("laps", 0))

            def scaled(key: str, stats: dict[str, Any] = stats) -> float | None:
                value = json_number(stats.get(key))
                return None if value is None else value * scale

            rows.append(
                FunctionRow(
                    name=name,
                    rank=rank if rank is not None else json_int(rank_data.get("rank")),
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
        raise UserError(f"Cannot read {path}: {exc.strerror}. {RUN_FIX}") from None
    source = relative(path, root) if root else path.name
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
            f"{path} has no timemory table row ('| |0>>> name | COUNT | DEPTH | ...'). {RUN_FIX}"
        )
    return rows
