"""Tolerant parser for GROMACS md.log files (4.6-2026, release and ``-dev`` builds).

Every part of a log is optional: a crashed, truncated or GPU-less run, or the tail of a
cluster job's log without its header, still yields what it has, with the rest ``None``
and the absent parts named in ``MdLog.missing``. Only a file with neither a GROMACS header
nor any part of a run's output (cycle table, Performance line, averages) is an error.
Tables are read by their headers (Performance units, cycle table rows, 15-character
energy label columns), never by assuming a fixed column count, because the columns
changed in 2026 (``(ms/step)``, ``(Matom*steps/s)``) and with ``GMX_DETAILED_PERF_STATS``.
Versions are read from 2016+ (``GROMACS version: 2022.5``), 5.x (``VERSION 5.1.4``) and
4.x (``:-)  VERSION 4.6.7  (-:``) spellings.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.core.errors import UserError
from orchestrator.parsers.breakdown import Breakdown, build_breakdown
from orchestrator.parsers.categories import (
    PME_SPREAD_GATHER,
    categorize_cycle_row,
    cycle_row_counted,
    cycle_row_known,
)
from orchestrator.parsers.mdlog_cycles import CycleRow, Section, nonbonded_on_gpu, parse_cycles

__all__ = ["CycleRow", "MdLog", "PmeTuningStep", "Section", "cycle_breakdown", "parse_mdlog"]


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
    #: "TERM" when mdrun was told to stop early (`Received the TERM signal`): its
    #: performance then covers fewer steps than asked, so it is no benchmark.
    stopped_by_signal: str | None = None
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
    #: The short-range nonbonded work ran on a GPU (``-nb gpu``, GPU wait rows, GPU task
    #: lines): the CPU ``Force`` row then holds bonded and other work, not nbnxm.
    nonbonded_on_gpu: bool = False
    #: Parts this log lacks, e.g. ``header`` for a cluster job's tail: ``header``,
    #: ``version``, ``command_line``, ``input_parameters``, ``atoms``, ``performance``,
    #: ``timing``, ``cycle_table``, ``energies``, ``finished``.
    missing: list[str] = Field(default_factory=list)


_HEADER = re.compile(
    r"^\s*:-\) GROMACS - |^G(?:ROMACS|romacs) version:|^GROMACS:\s+gmx"
    r"|:-\)\s+G  R  O  M  A  C  S\s+\(-:",
    re.M,
)
# What a log without its header (a cluster job's tail) still shows of a run.
_BODY = re.compile(
    r"R E A L   C Y C L E|^Performance:|A V E R A G E S|^(?:Started|Finished) mdrun", re.M
)
_VERSION = re.compile(r"^G(?:ROMACS|romacs) version:\s+(?:VERSION\s+)?(\S+)", re.M)
_VERSION_BANNER = re.compile(r":-\)\s+(?:GROMACS - [^,\n]*,\s+)?(?:VERSION\s+)?(\S+)\s+\(-:")
_ATOMS = re.compile(r"^There are:\s+(\d+)\s+Atoms", re.M)
_RESET = re.compile(r"^step\s+(\d+): resetting all time and cycle counters", re.M)
_SIGNAL = re.compile(r"^Received the (?:second )?(\w+) signal", re.M)
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
    """Parse md.log content; UserError if it has neither a header nor any run output."""
    has_header = _HEADER.search(text) is not None
    if not has_header and not _BODY.search(text):
        raise UserError(
            f"{path} is not a GROMACS md.log: it has no ':-) GROMACS - ...' header, no "
            "'GROMACS version:' line and no part of a run's output (cycle accounting, "
            "Performance line, averages). Pass the log mdrun wrote (-g, default md.log)."
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
    cycles = parse_cycles(lines)
    energies = _energies(lines)
    finished = re.search(r"^Finished mdrun on (?:rank|node)", text, re.M) is not None
    present = {
        "header": has_header,
        "version": version is not None,
        "command_line": command is not None,
        "input_parameters": bool(params),
        "atoms": atoms is not None,
        "performance": bool(perf),
        "timing": bool(times),
        "cycle_table": bool(cycles),
        "energies": energies is not None,
        "finished": finished,
    }
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
        finished=finished,
        stopped_by_signal=signal.group(1) if (signal := _SIGNAL.search(text)) else None,
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
        cycles=cycles,
        energies=energies,
        simd=info.get("SIMD instructions"),
        gpu_support=info.get("GPU support"),
        compiler=info.get("C++ compiler"),
        command_line=command,
        build_info=info,
        nonbonded_on_gpu=nonbonded_on_gpu(text, cycles, command),
        missing=[part for part, found in present.items() if not found],
    )


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


def parse_mdlog(path: Path) -> MdLog:
    """Parse one md.log file (see :func:`parse_mdlog_text`)."""
    return parse_mdlog_text(_read(path), str(path))


def cycle_breakdown(log: MdLog) -> Breakdown:
    """CPU time per category from the cycle table, without double counting.

    Uses the PME breakdown rows instead of their parent ``PME mesh``; skips ``Rest``,
    ``Total`` and sub-counter rows. Times are the table's wall seconds; with separate PME
    ranks PP and PME rows overlap in time, so their sum exceeds the run's wall time.
    ``Force`` is ``other`` when the nonbonded work ran on a GPU; a combined ``PME
    spread/gather`` row keeps its own category. Both are said in ``notes``.
    """
    has_pme_breakdown = any(row.section == "pme" for row in log.cycles)
    rows = [
        (
            row.name,
            categorize_cycle_row(row.name, log.nonbonded_on_gpu),
            row.calls or 0,
            round(row.wall_seconds * 1e9),
            cycle_row_known(row.name),
        )
        for row in log.cycles
        if cycle_row_counted(row.name, row.section, has_pme_breakdown)
    ]
    notes = []
    if log.nonbonded_on_gpu and any(name == "Force" for name, *_ in rows):
        notes.append(
            "nonbonded ran on a GPU: the CPU 'Force' row (bonded and other force work) is "
            "in 'other', not 'nbnxm'"
        )
    if any(category == PME_SPREAD_GATHER for _, category, *_ in rows):
        notes.append(
            "this GROMACS times PME spread and gather in one 'PME spread/gather' row: it is "
            f"in '{PME_SPREAD_GATHER}', and pme_spread/pme_gather are not measured apart"
        )
    return build_breakdown("md.log cycle accounting", [log.path], rows, notes=notes)
