"""One verdict and many: which test a pair of samples gets, and the correction for their number.

Its own module because `compare` (whole comparisons) and `controlled` (changed kernels
against the unchanged ones) both judge many names at once, and `compare` holds the
controlled verdicts: the shared rule lives below both.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.verdict.model import Among, Direction, Verdict
from orchestrator.verdict.paired import compare_pairs
from orchestrator.verdict.stats import compare_samples


def verdict(
    b: Sequence[float], c: Sequence[float], *, paired: bool, higher_is_better: bool,
    threshold_pct: float, alpha: float,
) -> Verdict:  # fmt: skip
    test = compare_pairs if paired else compare_samples
    return test(b, c, higher_is_better=higher_is_better, threshold_pct=threshold_pct, alpha=alpha)


def adjust_for_many_categories(
    verdicts: dict[str, Verdict], alpha: float, what: Among = "categories"
) -> dict[str, Verdict]:
    """Benjamini–Hochberg across categories: seven tests at 5% would cry wolf too often.

    A category keeps its verdict only if its p-value survives the step-up procedure
    (Benjamini & Hochberg 1995), which bounds the expected share of false findings at
    `alpha` and, when nothing changed at all, the chance of any finding. Categories of one
    run are positively correlated (a slow run slows them all); the bound still holds under
    such positive regression dependence (Benjamini & Yekutieli 2001, *Ann. Stat.* 29:1165),
    and the simulation in `benchmarks/bench_stats.py` measures it with correlated categories.
    """
    tested = sorted((v.p_value, k) for k, v in verdicts.items() if v.p_value is not None)
    m, passed = len(tested), 0
    for rank, (p, _) in enumerate(tested, start=1):
        if p <= alpha * rank / m:
            passed = rank
    keep = {k for _, k in tested[:passed]}
    out = {}
    for name, v in verdicts.items():
        if v.significant and name not in keep:
            v = v.replaced(significant=False, improved=None, direction=Direction.NONE,
                           corrected_for=m, among=what)  # fmt: skip
        out[name] = v
    return out
