"""Read Nsight Compute's CSV: per kernel, its launches, time and executed instructions.

What it reads is `ncu --csv --print-units base --metrics
gpu__time_duration.sum,smsp__inst_executed.sum` around mdrun: one row per launch and
metric ("ID", …, "Kernel Name", …, "Metric Name", "Metric Unit", "Metric Value"). ncu
mixes its own `==PROF==` lines into that output and writes values with thousands
separators ("2,304"), so both are taken apart here, not by the caller.

Executed instructions are the count a codegen change moves and run-to-run noise hardly
does: on the lent H100, 16 of GROMACS 2026.3's 21 kernels executed exactly the same count
in five runs of a build, and the nonbonded and prune kernels, whose pair lists change,
within 1.5e-4 (`tests/data/ncu/README.md`). Time is summed in ns, per kernel over its launches.

A CSV is someone else's file: a missing column, an unknown unit or a value that is not a
number is one paragraph naming the file and the fix.
"""

from __future__ import annotations

import csv
import io
import statistics

from pydantic import BaseModel

from orchestrator.core.errors import UserError
from orchestrator.parsers.instructions import InstructionCounts, KernelInstructions

#: The metrics this reader sums per kernel, and the unit `--print-units base` gives each.
TIME, INSTRUCTIONS = "gpu__time_duration.sum", "smsp__inst_executed.sum"
UNITS = {TIME: "ns", INSTRUCTIONS: "inst"}
#: The columns it reads.
COLUMNS = ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")
_FIX = (
    "Pass what 'ncu --csv --print-units base --metrics "
    f"{TIME},{INSTRUCTIONS} -- gmx mdrun …' wrote (its --log-file), or profile again."
)


class NcuKernel(BaseModel):
    """One kernel's launches in a profile, summed."""

    name: str
    launches: int
    time_ns: float
    #: None when the profile did not collect `smsp__inst_executed.sum`.
    instructions: int | None = None
    #: Median, 10th and 90th percentile of its launches' durations (ns): a kernel's own
    #: spread inside one run, as a kernel trace gives it on ROCm.
    median_ns: float | None = None
    p10_ns: float | None = None
    p90_ns: float | None = None


class NcuProfile(BaseModel):
    """Every kernel a profiled run launched, by the name ncu printed (mangled, with the
    CUDA profiler's `--print-kernel-base mangled`: the codegen fingerprint's keys)."""

    kernels: dict[str, NcuKernel]


def _damaged(source: str, why: str) -> UserError:
    return UserError(f"The Nsight Compute CSV {source} cannot be read: {why}. {_FIX}")


def _number(text: str, source: str, row: int) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise _damaged(source, f"row {row} has the value {text[:40]!r}, not a number") from None


def parse_ncu_csv(text: str, source: str) -> NcuProfile:
    """`ncu --csv` output (its `==PROF==` lines included) -> the kernels it profiled."""
    table = "\n".join(line for line in text.splitlines() if not line.startswith("==PROF=="))
    reader = csv.DictReader(io.StringIO(table))
    missing = [column for column in COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise _damaged(source, f"no column {', '.join(map(repr, missing))}")
    time_ns: dict[str, float] = {}
    instructions: dict[str, float] = {}
    launches: dict[str, set[str]] = {}
    durations: dict[str, list[float]] = {}
    for row, record in enumerate(reader, start=2):
        metric, name = record["Metric Name"], record["Kernel Name"]
        if metric not in UNITS:
            continue
        if record["Metric Unit"] != UNITS[metric]:
            raise _damaged(
                source, f"{metric} is in {record['Metric Unit']!r}, not {UNITS[metric]!r}"
            )
        value = _number(record["Metric Value"], source, row)
        target = time_ns if metric == TIME else instructions
        target[name] = target.get(name, 0.0) + value
        if metric == TIME:
            durations.setdefault(name, []).append(value)
        launches.setdefault(name, set()).add(record["ID"])
    if not time_ns:
        raise _damaged(source, f"no {TIME} row (was it collected?)")
    return NcuProfile(
        kernels={
            name: NcuKernel(
                name=name,
                launches=len(launches[name]),
                time_ns=time_ns[name],
                instructions=round(instructions[name]) if name in instructions else None,
                **_deciles(durations[name]),
            )
            for name in sorted(time_ns)
        }
    )


def _deciles(values: list[float]) -> dict[str, float]:
    """Median, p10 and p90 by linear interpolation (numpy's default), as rocprof's are."""
    if len(values) < 2:
        return {"median_ns": values[0], "p10_ns": values[0], "p90_ns": values[0]}
    cuts = statistics.quantiles(values, n=10, method="inclusive")
    return {"median_ns": cuts[4], "p10_ns": cuts[0], "p90_ns": cuts[8]}


def instruction_counts(profile: NcuProfile) -> InstructionCounts | None:
    """The profile's executed warp instructions per kernel; None when none were collected."""
    kernels = {
        k.name: KernelInstructions(name=k.name, launches=k.launches, instructions=k.instructions)
        for k in profile.kernels.values()
        if k.instructions is not None
    }
    return (
        InstructionCounts(source=f"ncu {INSTRUCTIONS}", unit="warp", kernels=kernels)
        if kernels
        else None
    )
