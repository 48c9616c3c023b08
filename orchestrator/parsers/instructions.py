"""Executed instructions per kernel, one model for NVIDIA's and AMD's profilers.

A codegen change moves a kernel's executed-instruction count; run-to-run noise hardly does
(a count is not a clock), so the count is judged apart from time (`verdict.instructions`).
Nsight Compute counts warp instructions (`smsp__inst_executed.sum`), rocprofv3 and
rocprof-compute wave instructions (`SQ_INSTS`, or one `SQ_INSTS_*` class): the unit is
kept with the counts, and only counts of one unit are compared.

rocprofv3's counter collection (`rocprofv3 --pmc SQ_INSTS SQ_WAVES -- …`) writes one row
per dispatch and counter (`Dispatch_Id`, `Kernel_Name`, `Counter_Name`, `Counter_Value`,
…): `parse_counter_collection` sums one counter per kernel over its dispatches.
"""

from __future__ import annotations

import csv
import io

from pydantic import BaseModel, Field

from orchestrator.core.errors import UserError

#: The counter read by default: every instruction a wave issued; its classes
#: (`SQ_INSTS_VALU`, `_SALU`, `_SMEM`, `_VMEM`, `_LDS`, …) overlap, so they are not summed.
SQ_INSTS = "SQ_INSTS"
#: The columns of rocprofv3's counter collection CSV this reader needs.
COLLECTION_COLUMNS = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")


class KernelInstructions(BaseModel):
    """One kernel's executed instructions in one run, summed over its launches."""

    name: str
    launches: int
    instructions: int

    @property
    def per_launch(self) -> float:
        """What a launch executed: runs with a different number of launches (steps, pair-list
        updates) compare on this, not on the total."""
        return self.instructions / self.launches if self.launches else 0.0


class InstructionCounts(BaseModel):
    """A run's executed instructions per kernel (`INSTRUCTIONS_FILE` beside its record)."""

    #: What counted them: "ncu smsp__inst_executed.sum", "rocprofv3 SQ_INSTS", …
    source: str
    #: "warp" (NVIDIA) or "wave" (AMD) instructions: counts of different units never compare.
    unit: str
    kernels: dict[str, KernelInstructions] = Field(default_factory=dict)


def _damaged(source: str, why: str) -> UserError:
    return UserError(
        f"The rocprofv3 counter collection {source} cannot be read: {why}. Pass the "
        f"*_counter_collection.csv that 'rocprofv3 --pmc {SQ_INSTS} --output-format csv' "
        "wrote, or profile again."
    )


def parse_counter_collection(text: str, source: str, counter: str = SQ_INSTS) -> InstructionCounts:
    """rocprofv3's counter collection CSV -> `counter` per kernel, summed over its dispatches."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLLECTION_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise _damaged(source, f"no column {', '.join(map(repr, missing))}")
    totals: dict[str, float] = {}
    dispatches: dict[str, set[str]] = {}
    for row, record in enumerate(reader, start=2):
        if record["Counter_Name"] != counter:
            continue
        try:
            value = float(record["Counter_Value"])
        except ValueError:
            raise _damaged(
                source, f"row {row} has {counter} = {record['Counter_Value'][:40]!r}"
            ) from None
        name = record["Kernel_Name"]
        totals[name] = totals.get(name, 0.0) + value
        dispatches.setdefault(name, set()).add(record["Dispatch_Id"])
    if not totals:
        raise _damaged(source, f"no {counter} row (was it among the --pmc counters?)")
    return InstructionCounts(
        source=f"rocprofv3 {counter}",
        unit="wave",
        kernels={
            name: KernelInstructions(
                name=name, launches=len(dispatches[name]), instructions=round(totals[name])
            )
            for name in sorted(totals)
        },
    )
