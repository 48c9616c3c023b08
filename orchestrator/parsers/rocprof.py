"""Parse rocprofv3 / legacy rocprof kernel CSVs into a per-category :class:`KernelBreakdown`.

Columns are found by header *name* (case and ``_`` insensitive), never by position: the
kernel_trace layout changed from 18 to 19 to 22 columns across ROCm 6.x-7.x, ``rocpd2csv``
prepends ``Guid`` and renames ``LDS_Block_Size`` to ``Lds_Block_Size``, and legacy rocprof
uses ``KernelName``/``BeginNs``/``EndNs``. Traces are streamed with the stdlib ``csv``
module, each distinct kernel name is categorized once, and every call's duration is kept
as an integer in one ``array('q')`` per name (8 bytes a call): totals stay exact and the
median/p10/p90 of each kernel's calls come for free (sorting one name at a time).

Real files are messier than the format documents:

* Legacy ``results.stats.csv`` files exist whose kernel names are not quoted although they
  contain commas; such a row has more cells than the header, and the numeric columns are
  then read from the right (the name is the only free-text column).
* Legacy rocprof lists ``<barrier packet>`` and ``Unknown command type`` rows among the
  kernels; they are reported in the breakdown's ``excluded`` list, not as kernel time.
* rocprofv3 ``counter_collection.csv`` (``--pmc``) has one row *per counter* per dispatch,
  all with the same timestamps. It is accepted and each dispatch counted once (first row
  per ``Dispatch_Id``): a user who passes it wants the kernel times it holds, and refusing
  would leave nothing to look at. Its label says so, because counter collection
  serialises dispatches and perturbs them: compare it only with another counter file.
"""

from __future__ import annotations

import csv
import re
from array import array
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.breakdown import (
    CategoryTotal,
    KernelBreakdown,
    KernelRow,
    build_breakdown,
)
from orchestrator.parsers.categories import classify

__all__ = [
    "CategoryTotal",
    "KernelBreakdown",
    "KernelRow",
    "find_rocprof_files",
    "parse_kernel_csv",
    "parse_rocprof",
]

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
_NOT_KERNEL = re.compile(
    r"(api|domain|hip|hsa|copy|memory|allocation|marker|rccl|scratch)[_.]?stats"
)
_CLONE_SUFFIX = " [clone .kd]"


def _norm(column: str) -> str:
    return re.sub(r"[^a-z0-9]", "", column.lower())


def _clean_name(name: str) -> str:
    """Legacy rocprof appends `` [clone .kd]``; drop it so names match rocprofv3's."""
    name = name.strip()
    return name[: -len(_CLONE_SUFFIX)] if name.endswith(_CLONE_SUFFIX) else name


def _to_int(text: str) -> int:
    """Integer nanoseconds from ``123``, ``123.000000`` or ``1.23e+02``."""
    try:
        return int(text)
    except ValueError:
        return round(float(text))


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


def _realign(row: list[str], width: int, i_name: int) -> list[str]:
    """A row whose unquoted name held commas, put back into ``width`` cells.

    The name is the only free-text column, so the surplus cells belong to it and every
    other column is found by counting from the right.
    """
    while len(row) > width and not row[-1]:
        row = row[:-1]  # a trailing comma is no part of the name
    extra = len(row) - width
    if extra <= 0:
        return row
    name = ",".join(row[i_name : i_name + extra + 1])
    return [*row[:i_name], name, *row[i_name + extra + 1 :]]


def _has(columns: dict[str, int], required: tuple[str, ...]) -> bool:
    return all(key in columns for key in required)


def _slow_duration(row: list[str], i_start: int, i_end: int | None) -> int | None:
    """Duration from float-formatted or odd cells; None when unparsable."""
    try:
        start = _to_int(row[i_start])
        return start if i_end is None else _to_int(row[i_end]) - start
    except (IndexError, ValueError):
        return None


Durations = dict[str, "array[int]"]


def _sum_trace(
    reader: Iterable[list[str]], width: int, i_name: int, i_start: int, i_end: int | None
) -> Durations:
    """Stream rows into one array of integer-ns call durations per name (the hot loop).

    ``i_end`` None means ``i_start`` is already a duration column (legacy DurationNs).
    """
    durations: Durations = {}
    i_a, i_b = (i_start, i_end) if i_end is not None else (i_start, i_start)
    sign = 1 if i_end is not None else 0
    for row in reader:
        if len(row) > width:
            row = _realign(row, width, i_name)
        try:
            name = row[i_name]
            duration = int(row[i_b]) - sign * int(row[i_a])
        except IndexError:
            continue  # blank or short line
        except ValueError:
            slow = _slow_duration(row, i_start, i_end)
            if slow is None:
                continue  # unparsable numbers: skip the row rather than guess
            duration = slow
        slot = durations.get(name)
        if slot is None:
            slot = durations[name] = array("q")
        slot.append(duration if duration > 0 else 0)
    return durations


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
        row = _realign(row, width, i_name)
        try:
            name = row[i_name]
            n = _to_int(row[i_calls])
            ns = _to_int(row[i_total])
        except (IndexError, ValueError):
            raise UserError(
                f"{path} line {line}: cannot read Calls/TotalDurationNs from {row!r}. "
                "Regenerate the file with rocprofv3 --stats --output-format csv."
            ) from None
        calls[name] = calls.get(name, 0) + n
        total[name] = total.get(name, 0) + ns
    return calls, total


FileData = tuple[str, dict[str, int], dict[str, int], Durations | None]


def _from_trace(label: str, durations: Durations) -> FileData:
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
    return _from_trace(_COUNTER_LABEL, _sum_trace(rows, cols[""], *idx))


def _read_file(path: Path) -> FileData:
    """``(label, calls per raw name, ns per raw name, call durations or None)``."""
    if _NOT_KERNEL.search(path.name.lower()):
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
            if "countername" in cols:
                return _counter_file(path, cols, reader)
            if _has(cols, _TRACE_V3):
                label = "rocpd2csv kernel_trace" if "guid" in cols else "rocprofv3 kernel_trace"
                idx = [cols[k] for k in _TRACE_V3]
                return _from_trace(label, _sum_trace(reader, width, idx[0], idx[1], idx[2]))
            if _has(cols, _TRACE_V1):
                idx = [cols[k] for k in _TRACE_V1]
                trace = _sum_trace(reader, width, idx[0], idx[1], idx[2])
                return _from_trace("rocprof v1 trace", trace)
            if _has(cols, _TRACE_V1_DURATION):
                idx = [cols[k] for k in _TRACE_V1_DURATION]
                trace = _sum_trace(reader, width, idx[0], idx[1], None)
                return _from_trace("rocprof v1 trace", trace)
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


def _rows(
    calls: dict[str, int], total: dict[str, int]
) -> Iterable[tuple[str, str, int, int, bool]]:
    for raw, ns in total.items():
        name = _clean_name(raw)
        category, known = classify(name)
        yield name, category, calls[raw], ns, known


def _quantile(ordered: list[int], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, ``inclusive``)."""
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _call_stats(
    durations: dict[str, list[array[int]]], calls: dict[str, int]
) -> dict[str, tuple[float, float, float]]:
    """``(median, p10, p90)`` in µs per clean name, when every call has a duration."""
    by_name: dict[str, list[array[int]]] = {}
    for raw, parts in durations.items():
        by_name.setdefault(_clean_name(raw), []).extend(parts)
    stats: dict[str, tuple[float, float, float]] = {}
    for name, parts in by_name.items():
        ordered = sorted(parts[0] if len(parts) == 1 else chain.from_iterable(parts))
        if not ordered or len(ordered) != calls.get(name):
            continue
        stats[name] = (
            _quantile(ordered, 0.5) / 1e3,
            _quantile(ordered, 0.1) / 1e3,
            _quantile(ordered, 0.9) / 1e3,
        )
    return stats


def _combine(files: list[Path]) -> KernelBreakdown:
    labels: list[str] = []
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    durations: dict[str, list[array[int]]] = {}
    for path in files:
        label, c, t, d = _read_file(path)
        if label not in labels:
            labels.append(label)
        for name, ns in t.items():
            total[name] = total.get(name, 0) + ns
            calls[name] = calls.get(name, 0) + c[name]
        for name, values in (d or {}).items():
            durations.setdefault(name, []).append(values)
    clean_calls: dict[str, int] = {}
    for raw, n in calls.items():
        clean_calls[_clean_name(raw)] = clean_calls.get(_clean_name(raw), 0) + n
    return build_breakdown(
        " + ".join(labels),
        [str(p) for p in files],
        _rows(calls, total),
        call_stats=_call_stats(durations, clean_calls),
    )


def parse_kernel_csv(path: Path) -> KernelBreakdown:
    """One rocprofv3 kernel_trace/kernel_stats CSV, or a legacy rocprof results CSV."""
    return _combine([path])


def find_rocprof_files(directory: Path) -> list[Path]:
    """Kernel CSVs under ``directory`` (recursive, hostname sub-folders included).

    Traces win over stats because summing End-Start per dispatch is exact; within the
    chosen kind every file (one per process id) is returned, to be summed.
    """

    def glob(pattern: str) -> list[Path]:
        return sorted(p for p in directory.rglob(pattern) if p.is_file())

    v1_stats = [p for p in glob("*.stats.csv") if not _NOT_KERNEL.search(p.name.lower())]
    siblings = [stats.with_name(stats.name[: -len(".stats.csv")] + ".csv") for stats in v1_stats]
    v1_traces = sorted({p for p in siblings if p.is_file()} | set(glob("results.csv")))
    for found in (glob("*kernel_trace.csv"), v1_traces, glob("*kernel_stats.csv"), v1_stats):
        if found:
            return found
    return []


def parse_rocprof(path: Path) -> KernelBreakdown:
    """A kernel CSV or a directory of rocprof output → breakdown (files summed)."""
    if path.is_dir():
        files = find_rocprof_files(path)
        if not files:
            hint = ""
            if any(path.rglob("*.db")):
                hint = (
                    " It holds rocpd databases (.db): convert them with "
                    "'rocpd2csv' or rerun rocprofv3 with --output-format csv."
                )
            elif any(path.rglob("*counter_collection.csv")):
                hint = (
                    " It holds counter_collection.csv files (rocprofv3 --pmc, one per pass, "
                    "each pass a rerun): pass one of them by name."
                )
            raise UserError(
                f"No rocprof kernel CSV (*kernel_trace.csv, *kernel_stats.csv, "
                f"results.stats.csv) under {path}.{hint} Profile with "
                "'rocprofv3 --kernel-trace --stats --output-format csv -d <dir> -- gmx mdrun ...'."
            )
        return _combine(files)
    if not path.exists():
        raise UserError(f"{path} does not exist. Pass a rocprof CSV or its output directory.")
    return parse_kernel_csv(path)
