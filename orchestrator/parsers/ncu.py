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

from pydantic import BaseModel

from orchestrator.core.errors import UserError

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


class NcuProfile(BaseModel):
    """Every kernel a profiled run launched, by the name ncu printed (demangled)."""

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
            )
            for name in sorted(time_ns)
        }
    )
