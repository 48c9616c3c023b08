"""Trace rows to call durations: the csv module's rows, or blocks of lines cut by their shape.

A trace is streamed a block of lines at a time; a block in rocprofv3's quoting is cut with
``str.split`` (:class:`Shape`), any other block is read by the ``csv`` module, and both
give the same durations.
"""

from __future__ import annotations

import csv
import io
from array import array
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from itertools import chain, repeat
from operator import length_hint, sub
from typing import TextIO


def to_int(text: str) -> int:
    """Integer nanoseconds from ``123``, ``123.000000`` or ``1.23e+02``."""
    try:
        return int(text)
    except ValueError:
        return round(float(text))


def realign(row: list[str], width: int, i_name: int) -> list[str]:
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


def _slow_duration(row: list[str], i_start: int, i_end: int | None) -> int | None:
    """Duration from float-formatted or odd cells; None when unparsable."""
    try:
        start = to_int(row[i_start])
        return start if i_end is None else to_int(row[i_end]) - start
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
        row = realign(row, width, i_name)
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


def sum_rows(
    rows: Iterable[list[str]], width: int, i_name: int, i_start: int, i_end: int | None
) -> Durations:
    """One array of integer-ns call durations per name, from csv rows (the reference)."""
    durations: Durations = {}
    for row in rows:
        got = _row_duration(row, width, i_name, i_start, i_end)
        if got is not None:
            _add(durations, *got)
    return durations


BLOCK_CHARS = 1 << 16  # read by the fast path at a time: a few hundred lines


class Shape:
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
    def learn(cls, line: str, width: int, i_name: int) -> Shape | None:
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


def sum_blocks(
    handle: TextIO, width: int, i_name: int, i_start: int, i_end: int | None
) -> Durations:
    """:func:`sum_rows` of ``csv.reader(handle)``, reading a block of lines at a time.

    The csv module spends most of a big trace's parse on cells nobody reads. A block of
    lines that all have the trace's :class:`Shape` is cut with ``str.split`` instead;
    any other block (a quote inside a name, a cell count unlike the header's, numbers
    that are not plain integers) is read by the csv module, so no result depends on this.
    """
    columns = [i - i_name for i in (i_start, i_end) if i is not None]
    if min(columns) < 1:  # numbers left of the name: no shape has them
        return sum_rows(csv.reader(handle), width, i_name, i_start, i_end)
    limit = csv.field_size_limit()  # a longer block may hold a cell the csv module refuses
    shape: Shape | None = None
    durations: defaultdict[str, array[int]] = defaultdict(lambda: array("q"))
    while block := handle.read(min(BLOCK_CHARS, limit // 2)):
        block += handle.readline()  # to a line's end
        cut = shape.cut(block, columns) if shape and len(block) < limit else None
        if cut is None and len(block) < limit:  # learn (again) from the block's first line
            shape = Shape.learn(block[: block.find("\n") + 1], width, i_name)
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
