"""Parse rocprofv3 / legacy rocprof kernel CSVs into a per-category :class:`KernelBreakdown`.

Columns are found by header *name* (case and ``_`` insensitive), never by position: the
kernel_trace layout changed from 18 to 19 to 22 columns across ROCm 6.x-7.x, ``rocpd2csv``
prepends ``Guid`` and renames ``LDS_Block_Size`` to ``Lds_Block_Size``, and legacy rocprof
uses ``KernelName``/``BeginNs``/``EndNs``. Traces are streamed with the stdlib ``csv``
module, each distinct kernel name is categorized once, and durations are summed as integer
nanoseconds, so a million-row trace takes about a second.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
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
    """Normalised column name → index (first occurrence wins)."""
    try:
        header = next(reader)
    except StopIteration:
        raise UserError(
            f"{path} is empty: expected a rocprof CSV with a header ({_EXPECTED})."
        ) from None
    columns: dict[str, int] = {}
    for index, column in enumerate(header):
        columns.setdefault(_norm(column), index)
    return columns


def _has(columns: dict[str, int], required: tuple[str, ...]) -> bool:
    return all(key in columns for key in required)


def _slow_duration(row: list[str], i_start: int, i_end: int | None) -> int | None:
    """Duration from float-formatted or odd cells; None when unparsable."""
    try:
        start = _to_int(row[i_start])
        return start if i_end is None else _to_int(row[i_end]) - start
    except (IndexError, ValueError):
        return None


def _sum_trace(
    reader: Iterator[list[str]], i_name: int, i_start: int, i_end: int | None
) -> tuple[dict[str, int], dict[str, int]]:
    """Stream rows into per-name call counts and integer-ns totals (the hot loop).

    ``i_end`` None means ``i_start`` is already a duration column (legacy DurationNs).
    """
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    i_a, i_b = (i_start, i_end) if i_end is not None else (i_start, i_start)
    sign = 1 if i_end is not None else 0
    for row in reader:
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
        if duration < 0:
            duration = 0
        if name in total:
            total[name] += duration
            calls[name] += 1
        else:
            total[name] = duration
            calls[name] = 1
    return calls, total


def _sum_stats(
    reader: Iterator[list[str]], path: Path, i_name: int, i_calls: int, i_total: int
) -> tuple[dict[str, int], dict[str, int]]:
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    for line, row in enumerate(reader, start=2):
        if not row:
            continue
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


def _read_file(path: Path) -> tuple[str, dict[str, int], dict[str, int]]:
    """``(source label, calls per raw name, ns per raw name)`` for one CSV."""
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
            if _has(cols, _TRACE_V3):
                label = "rocpd2csv kernel_trace" if "guid" in cols else "rocprofv3 kernel_trace"
                idx = [cols[k] for k in _TRACE_V3]
                return (label, *_sum_trace(reader, idx[0], idx[1], idx[2]))
            if _has(cols, _TRACE_V1):
                idx = [cols[k] for k in _TRACE_V1]
                return ("rocprof v1 trace", *_sum_trace(reader, idx[0], idx[1], idx[2]))
            if _has(cols, _TRACE_V1_DURATION):
                idx = [cols[k] for k in _TRACE_V1_DURATION]
                return ("rocprof v1 trace", *_sum_trace(reader, idx[0], idx[1], None))
            if _has(cols, _STATS):
                v3 = "minns" in cols or "kernel_stats" in path.name
                label = "rocprofv3 kernel_stats" if v3 else "rocprof v1 stats"
                idx = [cols[k] for k in _STATS]
                return (label, *_sum_stats(reader, path, idx[0], idx[1], idx[2]))
        except csv.Error as exc:
            raise UserError(f"{path} is not a well-formed CSV ({exc}). Regenerate it.") from None
    raise UserError(
        f"{path} has none of the columns of a rocprof kernel CSV (found: "
        f"{', '.join(sorted(cols)) or 'none'}). Expected {_EXPECTED}."
    )


def _rows(
    calls: dict[str, int], total: dict[str, int]
) -> Iterable[tuple[str, str, int, int, bool]]:
    for raw, ns in total.items():
        name = _clean_name(raw)
        category, known = classify(name)
        yield name, category, calls[raw], ns, known


def _combine(files: list[Path]) -> KernelBreakdown:
    labels: list[str] = []
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    for path in files:
        label, c, t = _read_file(path)
        if label not in labels:
            labels.append(label)
        for name, ns in t.items():
            total[name] = total.get(name, 0) + ns
            calls[name] = calls.get(name, 0) + c[name]
    return build_breakdown(" + ".join(labels), [str(p) for p in files], _rows(calls, total))


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
            raise UserError(
                f"No rocprof kernel CSV (*kernel_trace.csv, *kernel_stats.csv, "
                f"results.stats.csv) under {path}.{hint} Profile with "
                "'rocprofv3 --kernel-trace --stats --output-format csv -d <dir> -- gmx mdrun ...'."
            )
        return _combine(files)
    if not path.exists():
        raise UserError(f"{path} does not exist. Pass a rocprof CSV or its output directory.")
    return parse_kernel_csv(path)
