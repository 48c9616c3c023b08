"""Executed instructions per kernel, judged apart from time: a count hardly drifts.

A clock is noisy and needs many runs before a test can speak; an executed-instruction
count repeats exactly for most kernels (16 of GROMACS 2026.3's 21 CUDA kernels in five
runs on an H100) and moves only with data-dependent control flow elsewhere (pair lists:
up to 1.5e-4). nikic's LLVM compile-time tracker reads `instructions:u` for the same
reason. So a kernel whose code changed and whose count per launch moved beyond its own
run-to-run spread gets a marker at once, without waiting for timing statistics:

    moved  <=>  |delta| > INSTRUCTION_K * max(spread_baseline, spread_candidate, INSTRUCTION_FLOOR)

where a side's spread is (max - min) / median of its runs' counts per launch (one run: 0,
and the floor alone bounds the noise). A kernel that moved while the codegen diff says its
code did not change is `suspect`: its input changed (a dynamic pair list, another number
of atoms), which is no claim about the compiler. Counts per launch, not totals: runs that
launch a kernel a different number of times (steps, pair-list updates) still compare.
Numbers only; `report.instructions` words them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import StrEnum
from statistics import median

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.parsers.instructions import InstructionCounts
from orchestrator.verdict.defaults import INSTRUCTION_FLOOR, INSTRUCTION_K


class Movement(StrEnum):
    """Which way a kernel's executed instructions per launch moved, beyond the noise."""

    MORE = "more"
    FEWER = "fewer"
    NONE = "none"


class KernelInstructionVerdict(BaseModel):
    """One kernel's instructions per launch on both sides, and whether they moved."""

    model_config = ConfigDict(frozen=True)

    name: str
    n_baseline: int
    n_candidate: int
    #: Median instructions per launch, and median total per run, of each side.
    baseline_per_launch: float
    candidate_per_launch: float
    baseline_total: float
    candidate_total: float
    #: Candidate over baseline per launch, minus one, in percent.
    delta_pct: float
    #: (max - min) / median of each side's counts per launch (0 for one run).
    baseline_spread: float
    candidate_spread: float
    #: The |delta_pct| a move must exceed: k x max(spreads, floor), in percent.
    limit_pct: float
    movement: Movement
    #: Whether the codegen diff says this kernel's code changed; None: not known.
    code_changed: bool | None
    #: Moved and its code changed: a claim about the compiler.
    marked: bool
    #: Moved while its code did not change: its input moved it, no claim.
    suspect: bool


class InstructionComparison(BaseModel):
    """Every kernel counted in all runs of both sides, under one rule."""

    model_config = ConfigDict(frozen=True)

    source: str
    unit: str
    k: float
    floor: float
    #: Whether a codegen diff said which kernels changed (else nothing is marked).
    code_known: bool
    kernels: dict[str, KernelInstructionVerdict]
    #: Kernels counted on one side only (or not in every run of it).
    only_baseline: list[str] = Field(default_factory=list)
    only_candidate: list[str] = Field(default_factory=list)


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: the run-to-run spread of one side (0 for a single run)."""
    middle = median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def _common(runs: Sequence[InstructionCounts]) -> set[str]:
    return set.intersection(*(set(r.kernels) for r in runs)) if runs else set()


def judge_kernel(
    name: str, base: Sequence[float], cand: Sequence[float], *, code_changed: bool | None,
    totals: tuple[Sequence[float], Sequence[float]] = ((), ()),
    k: float = INSTRUCTION_K, floor: float = INSTRUCTION_FLOOR,
) -> KernelInstructionVerdict:  # fmt: skip
    """One kernel from each side's counts per launch (one value a run)."""
    b, c = median(base), median(cand)
    delta = c / b - 1 if b else 0.0
    s_b, s_c = spread(base), spread(cand)
    limit = k * max(s_b, s_c, floor)
    movement = Movement.NONE
    if abs(delta) > limit:
        movement = Movement.MORE if delta > 0 else Movement.FEWER
    moved = movement is not Movement.NONE
    return KernelInstructionVerdict(
        name=name, n_baseline=len(base), n_candidate=len(cand),
        baseline_per_launch=b, candidate_per_launch=c,
        baseline_total=median(totals[0]) if totals[0] else 0.0,
        candidate_total=median(totals[1]) if totals[1] else 0.0,
        delta_pct=100 * delta, baseline_spread=s_b, candidate_spread=s_c,
        limit_pct=100 * limit, movement=movement, code_changed=code_changed,
        marked=moved and code_changed is True, suspect=moved and code_changed is False,
    )  # fmt: skip


def compare_instructions(
    base: Sequence[InstructionCounts], cand: Sequence[InstructionCounts],
    changed: Collection[str] | None = None, *, known: Collection[str] | None = None,
    k: float = INSTRUCTION_K, floor: float = INSTRUCTION_FLOOR,
) -> InstructionComparison | None:  # fmt: skip
    """Every kernel counted in all runs of both sides; None without runs on a side or
    when the sides counted different units (warp and wave instructions never compare).

    `changed`: the kernels (by the profiler's names) whose code the codegen diff says
    changed, None when no diff is known; `known`: the names the diff could place at all
    (None: every name), so that a kernel it could not match is neither changed nor not.
    """
    if not base or not cand or {r.unit for r in [*base, *cand]} != {base[0].unit}:
        return None
    in_base, in_cand = _common(base), _common(cand)
    verdicts = {}
    for name in sorted(in_base & in_cand):
        status = None
        if changed is not None and (known is None or name in known):
            status = name in changed
        verdicts[name] = judge_kernel(
            name,
            [r.kernels[name].per_launch for r in base],
            [r.kernels[name].per_launch for r in cand],
            code_changed=status,
            totals=(
                [r.kernels[name].instructions for r in base],
                [r.kernels[name].instructions for r in cand],
            ),
            k=k, floor=floor,
        )  # fmt: skip
    return InstructionComparison(
        source=base[0].source, unit=base[0].unit, k=k, floor=floor,
        code_known=changed is not None, kernels=verdicts,
        only_baseline=sorted(in_base - in_cand), only_candidate=sorted(in_cand - in_base),
    )  # fmt: skip
