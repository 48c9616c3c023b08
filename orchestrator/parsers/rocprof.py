"""Parse rocprofv3 / legacy rocprof kernel CSVs into a per-category :class:`KernelBreakdown`.

rocprofv3's ``rocpd`` databases (ROCm 7.0's default) are read by :mod:`.rocpd` and summed
here the same way, so both formats of one run give the same breakdown.

Columns are found by header *name* (case and ``_`` insensitive), never by position: the
kernel_trace layout changed from 18 to 19 to 22 columns across ROCm 6.x-7.x, ``rocpd2csv``
prepends ``Guid`` and renames ``LDS_Block_Size`` to ``Lds_Block_Size``, and legacy rocprof
uses ``KernelName``/``BeginNs``/``EndNs``. Traces are streamed a block of lines at a time:
a block in rocprofv3's quoting (texts quoted, numbers not) is checked by counting quotes
and commas, then cut with ``str.split`` (:class:`_Shape`: about twice the speed of the
stdlib ``csv`` module on a 1M-row trace); any other block is read by the ``csv`` module,
and both give the same rows. Each distinct kernel name is categorized once, and every
call's duration is kept as an integer in one ``array('q')`` per name (8 bytes a call):
totals stay exact and the median/p10/p90 of each kernel's calls come for free (sorting one
name at a time).

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
import io
import re
from array import array
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Iterator
from itertools import chain, repeat
from operator import length_hint, sub
from pathlib import Path
from typing import TextIO

from orchestrator.core.errors import UserError
from orchestrator.parsers.breakdown import (
    CategoryTotal,
    KernelBreakdown,
    KernelRow,
    build_breakdown,
)
from orchestrator.parsers.categories import classify
from orchestrator.parsers.rocpd import agents_note, is_sqlite, read_rocpd

__all__ = [
    "CategoryTotal",
    "KernelBreakdown",
    "KernelRow",
    "find_rocprof_files",
    "parse_kernel_csv",
    "parse_rocprof",
]

_ROCPD_LABEL = "rocpd kernel dispatches"

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


def _row_duration(
    row: list[str], width: int, i_name: int, i_start: int, i_end: int | None
) -> tuple[str, int] | None:
    """``(raw name, ns ≥ 0)`` of one csv row; None for a blank, short or unparsable row.

    ``i_end`` None means ``i_start`` is already a duration column (legacy DurationNs).
    """
    if len(row) > width:
        row = _realign(row, width, i_name)
    try:
        name = row[i_name]
        start = int(row[i_start])
        duration = start if i_end is None else int(row[i_end]) - start
    except IndexError:
        return None  # blank or short line
    except ValueError:
        slow = _slow_duration(row, i_start, i_end)
        if slow is None:
            return None  # unparsable numbers: skip the row rather than guess
        duration = slow
    return name, duration if duration > 0 else 0


def _add(durations: Durations, name: str, duration: int) -> None:
    slot = durations.get(name)
    if slot is None:
        slot = durations[name] = array("q")
    slot.append(duration)


def _sum_rows(
    rows: Iterable[list[str]], width: int, i_name: int, i_start: int, i_end: int | None
) -> Durations:
    """One array of integer-ns call durations per name, from csv rows (the reference)."""
    durations: Durations = {}
    for row in rows:
        got = _row_duration(row, width, i_name, i_start, i_end)
        if got is not None:
            _add(durations, *got)
    return durations


_BLOCK_CHARS = 1 << 16  # read by the fast path at a time: a few hundred lines


class _Shape:
    """How the lines of one trace are quoted, learnt from a line and checked per block.

    rocprofv3 quotes text cells and not numbers: ``"KERNEL_DISPATCH","Agent 4",1,1,852831,
    1,10,"void foo<(Bar)1, true>(int)",1,1551874061245694,...``. Cut at its quotes, such a
    line is quoted texts (the kernel name last) with fixed separators (``,``) between
    them, then the unquoted cells left of the name, then those after it. The csv module
    cuts every line of that shape into the same columns, whatever the quoted texts hold,
    so a block of such lines is checked by counting quotes and commas and cut with
    ``str.split``: no Python code runs per cell, and per line only to file a duration.
    """

    def __init__(
        self, quotes: int, between: list[tuple[int, str]], left: int, right: int, end: str
    ):
        self.quotes = quotes  # per line
        self.between = between  # (index among a line's parts cut at quotes, its text)
        self.left = left  # commas from the last quoted text before the name up to it
        self.right = right  # commas after the name: as many cells
        self.end = end  # of each line: "\n" or "\r\n" (Python's csv.writer)

    @classmethod
    def learn(cls, line: str, width: int, i_name: int) -> _Shape | None:
        """The shape of ``line``, if it has one and the csv module finds the name there."""
        end = "\r\n" if line.endswith("\r\n") else "\n"
        parts = line.split('"')
        quotes = len(parts) - 1
        if quotes < 4 or quotes % 2 or parts[0] or not line.endswith(end):
            return None
        if "\r" in line[: -len(end)]:
            return None
        separators = parts[2 : quotes - 1 : 2]  # between quoted texts, up to the name's
        if not all(text[:1] == "," == text[-1:] for text in separators):
            return None
        if parts[-1][:1] != "," or sum(text.count(",") for text in separators) != i_name:
            return None
        try:  # the csv module agrees
            row = next(csv.reader([line]))
        except csv.Error:
            return None
        if len(row) != width or row[i_name] != parts[-2]:
            return None
        between = [(j, parts[j]) for j in range(2, quotes - 2, 2)]
        return cls(quotes, between, parts[-3].count(","), parts[-1].count(","), end)

    def cut(self, block: str, columns: list[int]) -> tuple[list[str], list[list[str]]] | None:
        """Names, and cells after them (``columns``: 1 is the next), if all lines fit."""
        parts = block.split('"')
        q, right = self.quotes, self.right
        lines, odd = divmod(len(parts) - 1, q)
        if odd or parts[0]:
            return None
        if any(parts[j::q] != [text] * lines for j, text in self.between):
            return None
        lefts = parts[q - 2 :: q]
        joined = '"'.join(lefts)  # each starts and ends with a comma and ends no line
        if joined[:1] != "," or joined[-1:] != "," or "\n" in joined or "\r" in joined:
            return None
        if not joined.count(',"') == lines - 1 == joined.count('",'):
            return None
        if list(map(str.count, lefts, repeat(","))) != [self.left] * lines:
            return None
        # What follows each name ends its line, and no line end is elsewhere; every
        # `right`-th cell of all that ends a line: so each line has `right` cells there.
        tails = parts[q::q]
        if not all(map(str.endswith, tails, repeat(self.end))):
            return None
        after = "".join(tails)
        if after.count("\n") != lines or after.count("\r") != self.end.count("\r") * lines:
            return None
        cells = after.split(",")
        if len(cells) != lines * right + 1 or cells[0]:
            return None
        if not all(map(str.endswith, cells[right::right], repeat(self.end))):
            return None
        return parts[q - 1 :: q], [cells[k::right] for k in columns]


def _times(after: list[list[str]]) -> list[int] | None:
    """End - Start per line (a duration column alone: itself); None if not plain integers."""
    try:
        starts = map(int, after[0])
        if len(after) == 1:
            return list(starts)
        return list(map(sub, map(int, after[1]), starts))
    except ValueError:
        return None


def _block_rows(block: str, handle: Iterator[str]) -> Iterator[list[str]]:
    """The csv module's rows of ``block`` (a record it leaves open reads on from the file)."""
    lines = iter(io.StringIO(block, newline="").readlines())
    for row in csv.reader(chain(lines, handle)):
        yield row
        if not length_hint(lines):
            return


def _sum_blocks(
    handle: TextIO, width: int, i_name: int, i_start: int, i_end: int | None
) -> Durations:
    """:func:`_sum_rows` of ``csv.reader(handle)``, reading a block of lines at a time.

    The csv module spends most of a big trace's parse on cells nobody reads. A block of
    lines that all have the trace's :class:`_Shape` is cut with ``str.split`` instead;
    any other block (a quote inside a name, a cell count unlike the header's, numbers
    that are not plain integers) is read by the csv module, so no result depends on this.
    """
    columns = [i - i_name for i in (i_start, i_end) if i is not None]
    if min(columns) < 1:  # numbers left of the name: no shape has them
        return _sum_rows(csv.reader(handle), width, i_name, i_start, i_end)
    limit = csv.field_size_limit()  # a longer block may hold a cell the csv module refuses
    shape: _Shape | None = None
    durations: defaultdict[str, array[int]] = defaultdict(lambda: array("q"))
    while block := handle.read(min(_BLOCK_CHARS, limit // 2)):
        block += handle.readline()  # to a line's end
        cut = shape.cut(block, columns) if shape and len(block) < limit else None
        if cut is None and len(block) < limit:  # learn (again) from the block's first line
            shape = _Shape.learn(block[: block.find("\n") + 1], width, i_name)
            cut = shape.cut(block, columns) if shape else None
        times = _times(cut[1]) if cut else None
        if cut is None or times is None:
            for row in _block_rows(block, handle):
                got = _row_duration(row, width, i_name, i_start, i_end)
                if got is not None:
                    _add(durations, *got)
            continue
        if min(times) < 0:
            times = [time if time > 0 else 0 for time in times]
        # Each time into its name's array, looped over in C: a Python loop costs as much
        # as all the rest of the fast path.
        deque(map(array.append, map(durations.__getitem__, cut[0]), times), maxlen=0)
    return dict(durations)


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
    return _from_trace(_COUNTER_LABEL, _sum_rows(rows, cols[""], *idx))


def _read_file(path: Path, fast: bool = True) -> FileData:
    """``(label, calls per raw name, ns per raw name, call durations or None)``.

    ``fast`` False reads traces with the csv module alone (the reference of the tests).
    """
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

            def trace(i_name: int, i_start: int, i_end: int | None) -> Durations:
                if fast:  # the csv reader has read the header alone: go on from there
                    return _sum_blocks(handle, width, i_name, i_start, i_end)
                return _sum_rows(reader, width, i_name, i_start, i_end)

            if "countername" in cols:
                return _counter_file(path, cols, reader)
            if _has(cols, _TRACE_V3):
                label = "rocpd2csv kernel_trace" if "guid" in cols else "rocprofv3 kernel_trace"
                idx = [cols[k] for k in _TRACE_V3]
                return _from_trace(label, trace(idx[0], idx[1], idx[2]))
            if _has(cols, _TRACE_V1):
                idx = [cols[k] for k in _TRACE_V1]
                return _from_trace("rocprof v1 trace", trace(idx[0], idx[1], idx[2]))
            if _has(cols, _TRACE_V1_DURATION):
                idx = [cols[k] for k in _TRACE_V1_DURATION]
                return _from_trace("rocprof v1 trace", trace(idx[0], idx[1], None))
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


def _is_rocpd(path: Path) -> bool:
    return path.suffix.lower() == ".db" or is_sqlite(path)


def _combine(files: list[Path]) -> KernelBreakdown:
    labels: list[str] = []
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    durations: dict[str, list[array[int]]] = {}
    agents: Counter[str] = Counter()
    for path in files:
        if _is_rocpd(path):
            dispatches, on = read_rocpd(path)
            agents.update(on)
            label, c, t, d = _from_trace(_ROCPD_LABEL, dispatches)
        else:
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
        notes=[note] if (note := agents_note(agents)) else [],
    )


def parse_kernel_csv(path: Path) -> KernelBreakdown:
    """One rocprofv3 kernel_trace/kernel_stats CSV or rocpd database, or a legacy rocprof
    results CSV."""
    return _combine([path])


def find_rocprof_files(directory: Path) -> list[Path]:
    """rocprofv3's rocpd databases, else kernel CSVs, under ``directory`` (recursive).

    A run of ROCm 7.0 or later writes rocpd by default (``<host>/<pid>_results.db``); where
    both formats were written they hold the same dispatches, so the databases are read.
    Traces win over stats because summing End-Start per dispatch is exact; within the
    chosen kind every file (one per process id) is returned, to be summed.
    """

    def glob(pattern: str) -> list[Path]:
        return sorted(p for p in directory.rglob(pattern) if p.is_file())

    databases = glob("*.db")
    if databases:
        return databases

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
            if any(path.rglob("*counter_collection.csv")):
                hint = (
                    " It holds counter_collection.csv files (rocprofv3 --pmc, one per pass, "
                    "each pass a rerun): pass one of them by name."
                )
            raise UserError(
                f"No rocpd database (*.db) or rocprof kernel CSV (*kernel_trace.csv, "
                f"*kernel_stats.csv, results.stats.csv) under {path}.{hint} Profile with "
                "'rocprofv3 --kernel-trace --output-format rocpd -d <dir> -- gmx mdrun ...'."
            )
        return _combine(files)
    if not path.exists():
        raise UserError(
            f"{path} does not exist. Pass a rocpd database, a rocprof CSV or their directory."
        )
    return parse_kernel_csv(path)
