"""Executed instructions per kernel in words: a table beside the time verdicts.

A count is not a time: more instructions is neither faster nor slower, so the marker is
not 🚀/🐢 but its own: `CHANGED` where the code changed and the count moved beyond its
noise (a claim about the compiler), `INPUT` where the count moved and the code did not
(the run's input moved it), nothing else.
"""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from orchestrator.verdict.instructions import (
    InstructionComparison,
    KernelInstructionVerdict,
    Movement,
)

#: The code changed and the count moved.
CHANGED = "◆"
#: The count moved, the code did not: input-dependent, no claim.
INPUT = "?"
HEADERS = ("", "kernel", "instr/launch", "Δ", "spread", "code")
#: Kernel names are cut to this width in the table.
WIDTH = 60


def marker(v: KernelInstructionVerdict) -> str:
    return CHANGED if v.marked else INPUT if v.suspect else ""


def change(v: KernelInstructionVerdict) -> str:
    """`+1.93% instr`, or `same` when the count did not move beyond its noise."""
    if v.movement is Movement.NONE:
        return "same" if v.delta_pct == 0 else f"{v.delta_pct:+.3f}% (noise)"
    return f"{v.delta_pct:+.2f}% instr"


def _code(v: KernelInstructionVerdict) -> str:
    return {True: "changed", False: "same", None: "?"}[v.code_changed]


def _short(name: str) -> str:
    return name if len(name) <= WIDTH else name[: WIDTH - 1] + "…"


def rows(cmp: InstructionComparison) -> list[tuple[str, ...]]:
    """Marked kernels first, then the other moved ones, each by the size of the move."""
    order = sorted(
        cmp.kernels.values(),
        key=lambda v: (not v.marked, v.movement is Movement.NONE, -abs(v.delta_pct), v.name),
    )
    return [
        (
            marker(v), _short(v.name),
            f"{v.baseline_per_launch:,.0f} → {v.candidate_per_launch:,.0f}", change(v),
            f"{max(v.baseline_spread, v.candidate_spread):.1e}", _code(v),
        )
        for v in order
    ]  # fmt: skip


def lines(cmp: InstructionComparison, style: str = "simple") -> list[str]:
    """The table with its rule, and the kernels counted on one side only."""
    unit = f"{cmp.unit} instructions"
    out = [
        f"executed {unit} per launch ({cmp.source}; moved: beyond {cmp.k:g}x the larger "
        f"run-to-run spread, at least {cmp.k * cmp.floor:.1%}; {CHANGED} code changed and "
        f"count moved, {INPUT} count moved without a code change):",
        tabulate(rows(cmp), headers=HEADERS, tablefmt=style),
    ]
    if not cmp.code_known:
        out.append("note: no codegen diff of the two builds: no count is claimed for the compiler")
    for side, names in (("baseline", cmp.only_baseline), ("candidate", cmp.only_candidate)):
        if names:
            out.append(f"note: counted in the {side} only: {', '.join(map(_short, names))}")
    return [*out, ""]


def as_json(cmp: InstructionComparison) -> dict[str, Any]:
    """The numbers with each kernel's marker and change in words."""
    data = cmp.model_dump(mode="json")
    for name, v in cmp.kernels.items():
        data["kernels"][name] |= {"marker": marker(v), "change": change(v)}
    return data
