"""Tolerant parser for GROMACS md.log files (2021-2026, release and ``-dev`` builds).

Every part of a log is optional: a crashed, truncated or GPU-less run still yields what it
has, with the rest ``None``. Only a file with no GROMACS header at all is an error. Tables
are read by their headers (Performance units, cycle table rows, 15-character energy label
columns), never by assuming a fixed column count, because the columns changed in 2026
(``(ms/step)``, ``(Matom*steps/s)``) and with ``GMX_DETAILED_PERF_STATS``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.core.errors import UserError
from orchestrator.parsers.breakdown import KernelBreakdown, build_breakdown
from orchestrator.parsers.categories import categorize_cycle_row, cycle_row_counted, cycle_row_known

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


class PmeTuningStep(BaseModel):
    """One ``step N: timed with pme grid ...`` line of PME load balancing."""

    step: int
    grid: list[int]
    cutoff: float
    mcycles: float


class MdLog(BaseModel):
    """What an md.log says about a run; absent parts are None (or empty)."""

    path: str
    gmx_version: str | None = None
    ns_per_day: float | None = None
    hour_per_ns: float | None = None
    ms_per_step: float | None = None
    matom_steps_per_s: float | None = None
    performance: dict[str, float] = Field(default_factory=dict, description="unit -> value")
    wall_seconds: float | None = None
    core_seconds: float | None = None
    atoms: int | None = None
    finished: bool = False
    reset_step: int | None = None
    nsteps: int | None = None
    dt_ps: float | None = None
    nstlist: int | None = None
    pme_grid: list[int] | None = None
    coulomb_cutoff: float | None = None
    pme_tuning: list[PmeTuningStep] = Field(default_factory=list)
    cycles: list[CycleRow] = Field(default_factory=list)
    energies: dict[str, float] | None = None
    simd: str | None = None
    gpu_support: str | None = None
    compiler: str | None = None
    command_line: str | None = None
    build_info: dict[str, str] = Field(default_factory=dict)


_HEADER = re.compile(r"^\s*:-\) GROMACS - |^GROMACS version:|^GROMACS:\s+gmx", re.M)
_VERSION = re.compile(r"^GROMACS version:\s+(\S+)", re.M)
_VERSION_BANNER = re.compile(r":-\) GROMACS - [^,\n]*,\s+(\S+)\s+\(-:")
_ATOMS = re.compile(r"^There are:\s+(\d+)\s+Atoms", re.M)
_RESET = re.compile(r"^step\s+(\d+): resetting all time and cycle counters", re.M)
_NSTEPS_OVERRIDE = re.compile(r"Overriding nsteps with value passed on the command line: (-?\d+)")
_NSTLIST = re.compile(r"^Changing nstlist from \d+ to (\d+)", re.M)
_PARAM = re.compile(r"^\s+([A-Za-z][\w-]*)\s+=\s+(\S+)\s*$", re.M)
_TIMED = re.compile(
    r"^step\s+(\d+): timed with pme grid (\d+) (\d+) (\d+), coulomb cutoff ([\d.]+): "
    r"([\d.]+) M-cycles",
    re.M,
)
_OPTIMAL = re.compile(r"^\s+optimal pme grid (\d+) (\d+) (\d+), coulomb cutoff ([\d.]+)", re.M)
_LB_FINAL = re.compile(r"^\s+final\s+([\d.]+) nm\s+[\d.]+ nm\s+(\d+)\s+(\d+)\s+(\d+)", re.M)
_TIME = re.compile(r"^\s*Time:\s+([\d.]+)\s+([\d.]+)", re.M)
_UNIT = re.compile(r"\(([^()]*)\)")
_ROW = re.compile(
    r"^\s(?P<name>\S.*?)\s+(?:(?P<ranks>\d+|N/A)\s+(?P<threads>\d+|N/A)\s+(?P<calls>\d+)\s+)?"
    r"(?P<wall>\d+\.\d+)\s+(?P<gcycles>\d+\.\d+)\s+(?P<pct>\d+\.\d+)\s*$"
)
_BUILD_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9 +/#()._-]*?):\s+(\S.*?)\s*$")
_PERF_KEYS = {
    "ns/day": "ns_per_day",
    "hour/ns": "hour_per_ns",
    "ms/step": "ms_per_step",
    "Matom*steps/s": "matom_steps_per_s",
}
_LABEL_WIDTH = 15


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except IsADirectoryError:
        raise UserError(
            f"{path} is a directory, not an md.log file; pass the log itself."
        ) from None
    except OSError as exc:
        raise UserError(f"Cannot read md.log {path}: {exc.strerror}. Check the path.") from None


def _params(text: str) -> dict[str, str]:
    """The ``Input Parameters:`` block, keys normalised to dashes; first value wins."""
    params: dict[str, str] = {}
    start = text.find("Input Parameters:")
    if start < 0:
        return params
    end = text.find("Started mdrun", start)
    for m in _PARAM.finditer(text, start, end if end > 0 else len(text)):
        params.setdefault(m.group(1).replace("_", "-"), m.group(2))
    return params


def _build_info(lines: list[str]) -> tuple[dict[str, str], str | None]:
    """``Label:   value`` lines of the version block, and the command line."""
    info: dict[str, str] = {}
    command: str | None = None
    for i, line in enumerate(lines[:400]):
        if line.startswith("Command line:") and command is None:
            parts = []
            for follow in lines[i + 1 : i + 20]:
                if not follow.startswith(" ") or not follow.strip():
                    break
                parts.append(follow.strip())
            command = " ".join(parts) or None
        elif line.startswith("GROMACS version:"):
            for follow in lines[i:]:
                if not follow.strip():
                    break
                m = _BUILD_LINE.match(follow)
                if m:
                    info.setdefault(m.group(1), m.group(2))
            break
    return info, command


def _performance(lines: list[str]) -> dict[str, float]:
    """Zip the ``(unit)`` header tokens with the values of the last Performance line."""
    for i in range(len(lines) - 1, 0, -1):
        if lines[i].lstrip().startswith("Performance:"):
            units = _UNIT.findall(lines[i - 1])
            values = lines[i].split()[1:]
            out: dict[str, float] = {}
            for unit, raw in zip(units, values, strict=False):
                value = _float(raw)
                if value is not None:
                    out[unit] = value
            return out
    return {}


def _cycles(lines: list[str]) -> list[CycleRow]:
    start = next((i for i, ln in enumerate(lines) if "R E A L   C Y C L E" in ln), None)
    if start is None:
        return []
    rows: list[CycleRow] = []
    section: Section = "main"
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if stripped.startswith(("GPU timings", "Core t (s)", "Time:", "Performance:")):
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
                section=section,
                pme_only=pme_only,
            )
        )
    return rows


def _is_values(line: str) -> list[float] | None:
    tokens = line.split()
    if not tokens:
        return None
    values = [_float(t) for t in tokens]
    return None if any(v is None for v in values) else [v for v in values if v is not None]


def _energies(lines: list[str]) -> dict[str, float] | None:
    """The averages block: label lines in 15-char right-aligned columns over value lines."""
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if "A V E R A G E S" in lines[i]:
            start = i
            break
    if start is None:
        return None
    energies: dict[str, float] = {}
    i = start + 1
    while i < len(lines) - 1:
        line = lines[i]
        if "M E G A" in line or "R E A L" in line or line.startswith("Finished mdrun"):
            break
        values = _is_values(lines[i + 1]) if line.strip() else None
        if values is not None and _is_values(line) is None:
            width = len(line.rstrip())
            ncols = -(-width // _LABEL_WIDTH)
            if ncols == len(values):
                for col, value in enumerate(values):
                    label = line[col * _LABEL_WIDTH : (col + 1) * _LABEL_WIDTH].strip()
                    if label:
                        energies[label] = value
                i += 2
                continue
        i += 1
    return energies or None


def _grid_and_cutoff(text: str, params: dict[str, str]) -> tuple[list[int] | None, float | None]:
    """Final PME grid and Coulomb cut-off: after tuning if it ran, else the input values."""
    final = list(_LB_FINAL.finditer(text))
    if final:
        m = final[-1]
        return [int(m.group(k)) for k in (2, 3, 4)], float(m.group(1))
    optimal = list(_OPTIMAL.finditer(text))
    if optimal:
        m = optimal[-1]
        return [int(m.group(k)) for k in (1, 2, 3)], float(m.group(4))
    cutoff = _float(params.get("rcoulomb", ""))
    uses_mesh = any(
        key in params.get(name, "").upper()
        for name in ("coulombtype", "vdw-type", "vdwtype")
        for key in ("PME", "P3M")
    )
    dims = [params.get(f"fourier-n{d}", "") for d in "xyz"]
    if uses_mesh and all(d.isdigit() and int(d) > 0 for d in dims):
        return [int(d) for d in dims], cutoff
    return None, cutoff


def parse_mdlog_text(text: str, path: str = "<text>") -> MdLog:
    """Parse md.log content; raises UserError if it has no GROMACS header at all."""
    if not _HEADER.search(text):
        raise UserError(
            f"{path} is not a GROMACS md.log: it has no ':-) GROMACS - ...' header or "
            "'GROMACS version:' line. Pass the log mdrun wrote (-g, default md.log)."
        )
    lines = text.splitlines()
    params = _params(text)
    info, command = _build_info(lines)
    version = _VERSION.search(text) or _VERSION_BANNER.search(text)
    perf = _performance(lines)
    times = list(_TIME.finditer(text))
    atoms = _ATOMS.search(text)
    resets = list(_RESET.finditer(text))
    override = _NSTEPS_OVERRIDE.search(text)
    nsteps_raw = override.group(1) if override else params.get("nsteps")
    nstlist = list(_NSTLIST.finditer(text))
    grid, cutoff = _grid_and_cutoff(text, params)
    return MdLog(
        path=path,
        gmx_version=version.group(1) if version else None,
        ns_per_day=perf.get("ns/day"),
        hour_per_ns=perf.get("hour/ns"),
        ms_per_step=perf.get("ms/step"),
        matom_steps_per_s=perf.get("Matom*steps/s"),
        performance=perf,
        core_seconds=float(times[-1].group(1)) if times else None,
        wall_seconds=float(times[-1].group(2)) if times else None,
        atoms=int(atoms.group(1)) if atoms else None,
        finished=re.search(r"^Finished mdrun on rank", text, re.M) is not None,
        reset_step=int(resets[-1].group(1)) if resets else None,
        nsteps=int(nsteps_raw) if nsteps_raw and nsteps_raw.lstrip("-").isdigit() else None,
        dt_ps=_float(params.get("dt", "")),
        nstlist=int(nstlist[-1].group(1)) if nstlist else _int_or_none(params.get("nstlist")),
        pme_grid=grid,
        coulomb_cutoff=cutoff,
        pme_tuning=[
            PmeTuningStep(
                step=int(m.group(1)),
                grid=[int(m.group(k)) for k in (2, 3, 4)],
                cutoff=float(m.group(5)),
                mcycles=float(m.group(6)),
            )
            for m in _TIMED.finditer(text)
        ],
        cycles=_cycles(lines),
        energies=_energies(lines),
        simd=info.get("SIMD instructions"),
        gpu_support=info.get("GPU support"),
        compiler=info.get("C++ compiler"),
        command_line=command,
        build_info=info,
    )


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


def parse_mdlog(path: Path) -> MdLog:
    """Parse one md.log file (see :func:`parse_mdlog_text`)."""
    return parse_mdlog_text(_read(path), str(path))


def cycle_breakdown(log: MdLog) -> KernelBreakdown:
    """CPU time per category from the cycle table, without double counting.

    Uses the PME breakdown rows instead of their parent ``PME mesh``; skips ``Rest``,
    ``Total`` and sub-counter rows. Times are the table's wall seconds; with separate PME
    ranks PP and PME rows overlap in time, so their sum exceeds the run's wall time.
    """
    has_pme_breakdown = any(row.section == "pme" for row in log.cycles)
    rows = [
        (
            row.name,
            categorize_cycle_row(row.name),
            row.calls or 0,
            round(row.wall_seconds * 1e9),
            cycle_row_known(row.name),
        )
        for row in log.cycles
        if cycle_row_counted(row.name, row.section, has_pme_breakdown)
    ]
    return build_breakdown("md.log cycle accounting", [log.path], rows)
