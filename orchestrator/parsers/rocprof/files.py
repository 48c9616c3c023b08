"""One rocprof kernel CSV: its layout found by header name, read to calls and durations."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.rocprof.blocks import Durations, realign, sum_blocks, sum_rows, to_int

# Layouts: (source label, required normalised columns). Checked in this order.
_TRACE_V3 = ("kernelname", "starttimestamp", "endtimestamp")
_TRACE_V1 = ("kernelname", "beginns", "endns")
_TRACE_V1_DURATION = ("kernelname", "durationns")
_STATS = ("name", "calls", "totaldurationns")
_EXPECTED = (
    "kernel_trace: Kernel_Name, Start_Timestamp, End_Timestamp; "
    "kernel_stats: Name, Calls, TotalDurationNs; "
    "legacy rocprof: KernelName, BeginNs, EndNs (results.csv)"
)
_COUNTER_LABEL = "rocprofv3 counter_collection (each dispatch once; timed under --pmc)"
NOT_KERNEL = re.compile(
    r"(api|domain|hip|hsa|copy|memory|allocation|marker|rccl|scratch)[_.]?stats"
)


def _norm(column: str) -> str:
    return re.sub(r"[^a-z0-9]", "", column.lower())


def _header(reader: Iterator[list[str]], path: Path) -> dict[str, int]:
    """Normalised column name → index (first occurrence wins); ``""`` → column count."""
    try:
        header = next(reader)
    except StopIteration:
        raise UserError(
            f"{path} is empty: expected a rocprof CSV with a header ({_EXPECTED})."
        ) from None
    columns: dict[str, int] = {}
    for index, column in enumerate(header):
        columns.setdefault(_norm(column), index)
    columns[""] = len(header)
    return columns


def _has(columns: dict[str, int], required: tuple[str, ...]) -> bool:
    return all(key in columns for key in required)


def _first_row_per_dispatch(reader: Iterator[list[str]], i_dispatch: int) -> Iterator[list[str]]:
    """counter_collection rows, one per dispatch (the others repeat it per counter)."""
    seen: set[str] = set()
    for row in reader:
        if len(row) <= i_dispatch or row[i_dispatch] in seen:
            continue
        seen.add(row[i_dispatch])
        yield row


def _sum_stats(
    reader: Iterator[list[str]], path: Path, width: int, idx: list[int]
) -> tuple[dict[str, int], dict[str, int]]:
    i_name, i_calls, i_total = idx
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    for line, row in enumerate(reader, start=2):
        if not row:
            continue
        row = realign(row, width, i_name)
        try:
            name = row[i_name]
            n = to_int(row[i_calls])
            ns = to_int(row[i_total])
        except (IndexError, ValueError):
            raise UserError(
                f"{path} line {line}: cannot read Calls/TotalDurationNs from {row!r}. "
                "Regenerate the file with rocprofv3 --stats --output-format csv."
            ) from None
        calls[name] = calls.get(name, 0) + n
        total[name] = total.get(name, 0) + ns
    return calls, total


FileData = tuple[str, dict[str, int], dict[str, int], Durations | None]


def from_trace(label: str, durations: Durations) -> FileData:
    calls = {name: len(values) for name, values in durations.items()}
    total = {name: sum(values) for name, values in durations.items()}
    return label, calls, total, durations


def _counter_file(path: Path, cols: dict[str, int], reader: Iterator[list[str]]) -> FileData:
    if not (_has(cols, _TRACE_V3) and "dispatchid" in cols):
        raise UserError(
            f"{path} is a rocprofv3 counter_collection file without Start_Timestamp/"
            "End_Timestamp/Dispatch_Id columns, so it holds no kernel times. Pass the "
            "kernel_trace.csv of a run with 'rocprofv3 --kernel-trace --output-format csv'."
        )
    idx = [cols[k] for k in _TRACE_V3]
    rows = _first_row_per_dispatch(reader, cols["dispatchid"])
    return from_trace(_COUNTER_LABEL, sum_rows(rows, cols[""], *idx))


def read_file(path: Path, fast: bool = True) -> FileData:
    """``(label, calls per raw name, ns per raw name, call durations or None)``.

    ``fast`` False reads traces with the csv module alone (the reference of the tests).
    """
    if NOT_KERNEL.search(path.name.lower()):
        raise UserError(
            f"{path} holds API/domain statistics, not kernels. Pass the kernel_trace.csv or "
            "kernel_stats.csv (rocprofv3 --kernel-trace --stats --output-format csv)."
        )
    try:
        handle = path.open(newline="", encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise UserError(f"Cannot read {path}: {exc.strerror}. Check the path.") from None
    with handle:
        reader = csv.reader(handle)
        try:
            cols = _header(reader, path)
            width = cols[""]

            def trace(i_name: int, i_start: int, i_end: int | None) -> Durations:
                if fast:  # the csv reader has read the header alone: go on from there
                    return sum_blocks(handle, width, i_name, i_start, i_end)
                return sum_rows(reader, width, i_name, i_start, i_end)

            if "countername" in cols:
                return _counter_file(path, cols, reader)
            if _has(cols, _TRACE_V3):
                label = "rocpd2csv kernel_trace" if "guid" in cols else "rocprofv3 kernel_trace"
                idx = [cols[k] for k in _TRACE_V3]
                return from_trace(label, trace(idx[0], idx[1], idx[2]))
            if _has(cols, _TRACE_V1):
                idx = [cols[k] for k in _TRACE_V1]
                return from_trace("rocprof v1 trace", trace(idx[0], idx[1], idx[2]))
            if _has(cols, _TRACE_V1_DURATION):
                idx = [cols[k] for k in _TRACE_V1_DURATION]
                return from_trace("rocprof v1 trace", trace(idx[0], idx[1], None))
            if _has(cols, _STATS):
                v3 = "minns" in cols or "kernel_stats" in path.name
                label = "rocprofv3 kernel_stats" if v3 else "rocprof v1 stats"
                idx = [cols[k] for k in _STATS]
                return (label, *_sum_stats(reader, path, width, idx), None)
        except csv.Error as exc:
            raise UserError(f"{path} is not a well-formed CSV ({exc}). Regenerate it.") from None
    found = ", ".join(sorted(c for c in cols if c)) or "none"
    raise UserError(
        f"{path} has none of the columns of a rocprof kernel CSV (found: {found}). "
        f"Expected {_EXPECTED}."
    )
