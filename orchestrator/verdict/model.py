"""A verdict as numbers: which way a metric moved, by how much, how sure, under which rules.

Nothing in it is for people: `report.words` makes the marker (🚀 🐢 • ⚠) and the note from
these fields, so what a verdict means is read from `direction` and the flags, never from
a string.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from orchestrator.verdict.defaults import POWER


class Direction(StrEnum):
    """Which way a metric moved, as a marker claims it: `faster` (better: more ns/day,
    less time) or `slower` only for a significant change beyond the threshold."""

    FASTER = "faster"
    SLOWER = "slower"
    #: No marker: within noise, within the threshold, or not testable.
    NONE = "none"


#: What the verdicts corrected for their number together were
#: (`verdicts.adjust_for_many_categories`).
Among = Literal[
    "categories", "changed kernel", "changed kernels", "changed category", "changed categories"
]  # fmt: skip


class TooBusy(BaseModel):
    """Why a comparison has no verdict: the runs that shared the machine were left out
    (`verdict.busy`), and too few clean pairs (unpaired: runs a side) remained."""

    model_config = ConfigDict(frozen=True)

    paired: bool
    #: Pairs (unpaired: runs of both sides) left out, and how many there were in all.
    left_out: int
    total: int
    #: Clean pairs (paired: both the same) or clean runs of each side that remained.
    clean_baseline: int
    clean_candidate: int
    #: The clean pairs (runs a side) a verdict needs.
    needed: int


def direction_of(
    significant: bool, better: bool, delta_pct: float, threshold_pct: float
) -> Direction:
    """Faster or slower only for a significant change beyond the threshold, else none."""
    if significant and abs(delta_pct) > threshold_pct:
        return Direction.FASTER if better else Direction.SLOWER
    return Direction.NONE


class Verdict(BaseModel):
    """Candidate (dev) versus baseline for one metric; deltas are candidate minus baseline.

    `delta_pct` is the change the test is about: the ratio of medians (unpaired) or the
    geometric mean of the pair ratios (paired); `delta_abs` is that change in the metric's
    unit, at the baseline median. `mdc_pct` is the change the test would have found with
    probability `power` at `alpha`, given the observed spread (None: no change at all).
    """

    model_config = ConfigDict(frozen=True)

    higher_is_better: bool
    threshold_pct: float
    alpha: float
    paired: bool = False
    n_baseline: int
    n_candidate: int
    baseline_median: float
    candidate_median: float
    delta_abs: float
    delta_pct: float
    baseline_spread: tuple[float, float]  # (min, max)
    candidate_spread: tuple[float, float]
    baseline_iqr: float
    candidate_iqr: float
    min_attainable_p: float
    p_value: float | None  # None when a side has fewer than 2 runs
    test_method: Literal["exact", "asymptotic", "paired-t"] | None
    ci_low: float | None  # (1 - alpha) CI of the ratio candidate / baseline
    ci_high: float | None
    mdc_pct: float | None = None
    power: float = POWER
    testable: bool  # enough runs that p < alpha is attainable at all
    significant: bool  # p < alpha and the ratio CI excludes 1 (after any correction)
    improved: bool | None  # direction of a significant change, else None
    direction: Direction
    #: The energies of the runs disagree: a speed-up here is not to be believed.
    suspect: bool = False
    #: The test was significant, but not after correcting for this many tests among
    #: `among` (Benjamini–Hochberg); None: no correction took it away.
    corrected_for: int | None = None
    among: Among = "categories"
    #: False: the recipe declares no better direction; the numbers are shown only.
    judged: bool = True
    #: The host was too busy to judge: the test is left out, the Δ shown for information.
    too_busy: TooBusy | None = None

    @property
    def claimed(self) -> Direction:
        """The direction to act on: a speed-up of suspect runs is none."""
        if self.suspect and self.direction is Direction.FASTER:
            return Direction.NONE
        return self.direction

    def replaced(self, **changes: Any) -> Verdict:
        """A copy with `changes`, validated (`model_copy` would not check them)."""
        return Verdict.model_validate({**self.model_dump(), **changes})
