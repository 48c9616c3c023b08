"""A comparison as a script reads it: the numbers behind the verdict and the exit code.

The report (`report.text`) is for people: emoji markers, aligned columns. A script
wants the same verdict as fields (pyperf's `CompareResult` style: numbers in, text on
demand): which way it moved, the ratio and its interval, the p-value, and what it was
held to (threshold, alpha), for the headline and each category, kernel and metric.
`judgement_of` makes one from a `Comparison` (or from none: nothing was measured), and
`exit_code` is the one rule `bench` and `compare` end by (`core.exits`). The words of
`--json` (the headline's text, why it could not judge, each metric's marker and note) are
added by `report.as_json`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.core.exits import ExitCode
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.model import Direction, Verdict

Word = Literal["faster", "slower", "no change", "could not judge", "nothing measured"]


class Interval(BaseModel):
    """The (1 - alpha) interval of the ratio candidate / baseline."""

    low: float
    high: float


class MetricJudgement(BaseModel):
    """One metric's verdict; `ratio` is candidate / baseline of the metric itself (ns/day:
    above 1 is faster; a time: below 1 is faster)."""

    #: `faster`/`slower` only for a marker (significant and beyond the threshold), and
    #: never `faster` for suspect runs.
    direction: Direction
    significant: bool
    ratio: float
    delta_pct: float
    interval: Interval | None
    p_value: float | None
    test: str | None
    threshold_pct: float
    alpha: float
    higher_is_better: bool
    n_baseline: int
    n_candidate: int
    baseline_median: float
    candidate_median: float
    #: The change a test of this size would have found with 80 % probability, percent.
    detectable_pct: float | None
    #: Whether this many runs can reach p < alpha at all.
    testable: bool

    @classmethod
    def of(cls, v: Verdict) -> MetricJudgement:
        interval = None
        if v.ci_low is not None and v.ci_high is not None:
            interval = Interval(low=v.ci_low, high=v.ci_high)
        return cls(
            direction=v.claimed, significant=v.significant,
            ratio=1 + v.delta_pct / 100, delta_pct=v.delta_pct, interval=interval,
            p_value=v.p_value, test=v.test_method, threshold_pct=v.threshold_pct,
            alpha=v.alpha, higher_is_better=v.higher_is_better, n_baseline=v.n_baseline,
            n_candidate=v.n_candidate, baseline_median=v.baseline_median,
            candidate_median=v.candidate_median, detectable_pct=v.mdc_pct,
            testable=v.testable,
        )  # fmt: skip


class Headline(MetricJudgement):
    """The verdict that decides: ns/day, or a kernel recipe's headline metric."""

    name: str
    unit: str


class Judgement(BaseModel):
    """`bench --json` and `compare --json`: the verdict and every metric's numbers."""

    verdict: Word
    exit_code: int
    system: str | None = None
    label: str | None = None
    #: What the candidate was measured against (`parent 1a2b3c4d`, `HEAD …`, `stable`).
    base: str | None = None
    baseline: list[str] = Field(default_factory=list)
    candidate: list[str] = Field(default_factory=list)
    paired: bool = False
    runs: int = 0
    headline: Headline | None = None
    #: Time per category (ms) and per top kernel (median call, µs): lower is better.
    categories: dict[str, MetricJudgement] = Field(default_factory=dict)
    kernels: dict[str, MetricJudgement] = Field(default_factory=dict)
    #: A kernel recipe's other metrics, each in its declared direction.
    metrics: dict[str, MetricJudgement] = Field(default_factory=dict)
    suspect: bool = False
    #: The host was too busy to judge (`verdict.busy`).
    too_busy: bool = False
    #: Pairs (unpaired: runs) left out because a run shared the machine.
    left_out: list[str] = Field(default_factory=list)
    #: Kernels (CPU: hot functions) the two builds compiled differently; None: unknown.
    changed_kernels: int | None = None
    #: `bench` only: where the time went.
    elapsed_seconds: float | None = None
    container_seconds: float | None = None


def exit_code(cmp: Comparison | None) -> ExitCode:
    """How `bench` and `compare` end: SLOWER for a slowdown of the headline, UNJUDGED when
    no verdict could be given (a busy host, too few runs, suspect energies), else OK (no
    change, faster, or nothing measured because no kernel changed)."""
    if cmp is None:
        return ExitCode.OK
    v = cmp.headline
    if v.direction is Direction.SLOWER:
        return ExitCode.SLOWER
    if cmp.too_busy or cmp.suspect or not v.testable:
        return ExitCode.UNJUDGED
    return ExitCode.OK


_WORDS: dict[Direction, Word] = {Direction.FASTER: "faster", Direction.SLOWER: "slower"}


def judgement_of(cmp: Comparison | None) -> Judgement:
    """`cmp` as fields; None when no run was made (nothing measured)."""
    if cmp is None:
        return Judgement(verdict="nothing measured", exit_code=ExitCode.OK)
    code = exit_code(cmp)
    v = cmp.headline
    word = _WORDS.get(v.claimed) or (
        "could not judge" if code == ExitCode.UNJUDGED else "no change"
    )
    return Judgement(
        verdict=word, exit_code=code, system=cmp.system, label=cmp.label, base=cmp.base,
        baseline=cmp.baseline,
        candidate=cmp.candidate, paired=cmp.paired, runs=cmp.runs,
        headline=Headline(name=cmp.headline_name, unit=cmp.headline_unit,
                          **MetricJudgement.of(v).model_dump()),
        categories=_each(cmp.categories), kernels=_each(cmp.kernels),
        metrics=_each(cmp.metrics), suspect=cmp.suspect, too_busy=cmp.too_busy is not None,
        left_out=cmp.left_out,
        changed_kernels=len(cmp.codegen.changed) if cmp.codegen is not None else None,
    )  # fmt: skip


def _each(verdicts: dict[str, Verdict]) -> dict[str, MetricJudgement]:
    return {name: MetricJudgement.of(v) for name, v in verdicts.items()}
