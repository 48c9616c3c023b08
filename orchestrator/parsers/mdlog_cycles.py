"""md.log's real-cycle-and-time accounting table, from GROMACS 4.6 to 2026.

Split from :mod:`orchestrator.parsers.mdlog` because the table is the part whose layout
moved most: 4.6 prints ``Nodes Th. Count Wall t (s) G-Cycles %`` and lists the PME
breakdown under a bare rule (no ``Breakdown of`` title), rows without threads carry only
a rank count (``Total 20 ...``), 2016 titles it ``Breakdown of PME mesh computation``,
2026 ``Breakdown of PME mesh activities`` under an ``Activity:`` header.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

Section = Literal["main", "pme", "pp"]


class CycleRow(BaseModel):
    """One row of the real-cycle-and-time accounting table (or of a breakdown under it)."""

    name: str
    ranks: int | None = None
    threads: int | None = None
    calls: int | None = None
    wall_seconds: float
    giga_cycles: float
    percent: float
    section: Section = Field(description="main table, PME mesh breakdown or PP sub-counters")
    pme_only: bool = Field(False, description="row marked '*': timed on separate PME ranks")


_ROW = re.compile(
    r"^\s(?P<name>\S.*?)\s+"
    r"(?:(?P<ranks>\d+|N/A)\s+(?:(?P<threads>\d+|N/A)\s+(?P<calls>\d+)\s+)?)?"
    r"(?P<wall>\d+\.\d+)\s+(?P<gcycles>\d+\.\d+)\s+(?P<pct>\d+\.\d+)\s*$"
)
_END = ("GPU timings", "Core t (s)", "Time:", "Performance:", "NODE (s)")

# Rows that exist only when the short-range nonbonded work runs on a GPU (2018-2026 and
# 4.6-2016 names), and log lines that say so.
_NB_GPU_ROWS = frozenset(
    {"Wait GPU NB local", "Wait GPU NB nonloc.", "Wait GPU local", "Wait GPU nonlocal"}
)
_NB_GPU_LINE = re.compile(
    r"^PP tasks will do .*short-ranged.* interactions on the GPU"
    r"|^Using (?:GPU|CUDA|OpenCL|SYCL|HIP) \S+ non-?bonded",
    re.M,
)
_NB_FLAG = re.compile(r"(?:^|\s)-nb\s+(\w+)")


def parse_cycles(lines: list[str]) -> list[CycleRow]:
    """The rows of the last cycle table in ``lines`` (empty when there is none)."""
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if "R E A L   C Y C L E" in lines[i]:
            start = i
            break
    if start is None:
        return []
    rows: list[CycleRow] = []
    section: Section = "main"
    after_total = False
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if stripped.startswith(_END):
            break
        if stripped.startswith("Breakdown of"):
            section = "pme" if "PME mesh" in stripped else "pp"
            continue
        m = _ROW.match(line)
        if not m:
            continue
        name = m.group("name").strip()
        pme_only = name.endswith("*")
        if pme_only:
            name = name[:-1].rstrip()
        row_section = section
        if section == "main" and after_total:
            # 4.6-5.0: the PME breakdown (and sub-counters) follow Total with no title.
            row_section = "pme" if name.startswith("PME ") else "pp"
        after_total = after_total or (section == "main" and name == "Total")
        ranks, threads, calls = (m.group(k) for k in ("ranks", "threads", "calls"))
        rows.append(
            CycleRow(
                name=name,
                ranks=int(ranks) if ranks and ranks.isdigit() else None,
                threads=int(threads) if threads and threads.isdigit() else None,
                calls=int(calls) if calls else None,
                wall_seconds=float(m.group("wall")),
                giga_cycles=float(m.group("gcycles")),
                percent=float(m.group("pct")),
                section=row_section,
                pme_only=pme_only,
            )
        )
    return rows


def nonbonded_on_gpu(text: str, rows: list[CycleRow], command_line: str | None) -> bool:
    """Whether md.log shows the short-range nonbonded work ran on a GPU.

    An explicit ``-nb cpu``/``-nb gpu`` on the command line decides; otherwise any GPU
    nonbonded wait row in the cycle table or a GPU task-assignment/kernel line does.
    """
    flag = _NB_FLAG.search(command_line or "")
    if flag and flag.group(1) in ("cpu", "gpu"):
        return flag.group(1) == "gpu"
    return any(row.name in _NB_GPU_ROWS for row in rows) or bool(_NB_GPU_LINE.search(text))
