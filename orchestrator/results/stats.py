"""Small-sample statistics for dev-versus-baseline verdicts (standard library only).

A GROMACS run takes minutes, so a comparison has 3–10 runs per side, and run-to-run spread on
a shared machine is 5–13 % of ns/day. The tools here are chosen for that regime:

* medians and min–max / IQR spreads (robust to the odd slow run);
* an exact two-sided Mann–Whitney U test (Mann & Whitney 1947, *Ann. Math. Stat.* 18:50–60).
  The null distribution is counted exactly by dynamic programming over the pooled midranks:
  with no ties this is the classic recurrence for the number of rank configurations with a
  given rank sum (the counts behind Mann & Whitney's tables); with ties (rounded timings tie
  often) it is the exact *conditional* permutation distribution given the tie pattern, which
  stays valid where the normal approximation is poor. Above `EXACT_MAX_N` pooled runs the
  normal approximation with tie and continuity corrections is used instead;
* `min_attainable_p`, so that "too few runs to ever reach significance" is reported as such
  (asv's test, for example, cannot fire below 7 runs per side);
* a percentile bootstrap confidence interval of the ratio of medians (Efron & Tibshirani 1993,
  ch. 13). With n <= 5 per side a resampled median takes at most n distinct values, so the
  interval is coarse and tends to be too narrow; it is never used on its own.

`compare_samples` requires *both* p < alpha and a (1 - alpha) ratio CI that excludes 1. The
exact test controls the false-positive rate; the CI adds a check on the size and direction
of the effect. Requiring both is conservative, which suits noisy machines.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from pydantic import BaseModel, ConfigDict

#: Pooled run counts up to this use the exact distribution; above, the normal approximation.
EXACT_MAX_N = 40

Marker = Literal["🚀", "🐢", "•"]


def _check(values: Sequence[float], name: str) -> list[float]:
    data = [float(v) for v in values]
    if not data:
        raise ValueError(f"{name}: need at least one value")
    if not all(math.isfinite(v) for v in data):
        raise ValueError(f"{name}: values must be finite, got {data}")
    return data


def median(values: Sequence[float]) -> float:
    """Median of `values` (mean of the two middle values for an even count)."""
    return float(statistics.median(_check(values, "median")))


def spread(values: Sequence[float]) -> tuple[float, float]:
    """(min, max) of `values`."""
    data = _check(values, "spread")
    return min(data), max(data)


def iqr(values: Sequence[float]) -> float:
    """Interquartile range with linear interpolation (numpy's default); 0.0 for one value."""
    data = _check(values, "iqr")
    if len(data) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(data, n=4, method="inclusive")
    return q3 - q1


def _midranks(a: list[float], b: list[float]) -> tuple[float, list[tuple[int, int]]]:
    """Doubled rank sum of `a` and the tie groups (size, doubled midrank) of the pooled data.

    Ranks are doubled so that midranks (x.5) stay integers and the counting is exact.
    """
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    groups: list[tuple[int, int]] = []
    rank_sum2 = 0
    i = 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j][0] == pooled[i][0]:
            j += 1
        size, rank2 = j - i, 2 * i + (j - i) + 1  # midrank of positions i+1..j, doubled
        groups.append((size, rank2))
        rank_sum2 += rank2 * sum(1 for _, side in pooled[i:j] if side == 0)
        i = j
    return rank_sum2, groups


def _rank_sum_counts(groups: list[tuple[int, int]], k_total: int) -> dict[int, int]:
    """For each doubled rank sum s: how many k_total-subsets of the pooled runs have sum s.

    Dynamic programming over tie groups: taking j of a group's t runs adds j times its
    midrank, in C(t, j) ways. Without ties every group has t = 1 and this is the usual
    recurrence for the exact Mann–Whitney distribution.
    """
    layers: list[dict[int, int]] = [{} for _ in range(k_total + 1)]
    layers[0][0] = 1
    remaining = sum(t for t, _ in groups)
    for t, rank2 in groups:
        remaining -= t
        new: list[dict[int, int]] = [{} for _ in range(k_total + 1)]
        for k, layer in enumerate(layers):
            for s, count in layer.items():
                for j in range(min(t, k_total - k) + 1):
                    if k_total - (k + j) > remaining:
                        continue  # not enough runs left to fill the sample
                    cell = new[k + j]
                    key = s + j * rank2
                    cell[key] = cell.get(key, 0) + count * math.comb(t, j)
        layers = new
    return layers[k_total]


def mann_whitney_asymptotic(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann–Whitney U by the normal approximation, with tie and continuity corrections.

    Returns (U of `a`, p). Matches scipy.stats.mannwhitneyu(a, b, method="asymptotic").
    """
    xa, xb = _check(a, "a"), _check(b, "b")
    n_a, n_b, n = len(xa), len(xb), len(xa) + len(xb)
    rank_sum2, groups = _midranks(xa, xb)
    u_a = rank_sum2 / 2 - n_a * (n_a + 1) / 2
    u = max(u_a, n_a * n_b - u_a)
    tie_term = sum(t**3 - t for t, _ in groups)
    variance = n_a * n_b / 12 * ((n + 1) - (tie_term / (n * (n - 1)) if n > 1 else 0.0))
    if variance <= 0:
        return u_a, 1.0  # all values identical: no evidence of any difference
    z = (u - n_a * n_b / 2 - 0.5) / math.sqrt(variance)
    return u_a, min(1.0, math.erfc(z / math.sqrt(2)))  # 2 * P(Z > z)


def mann_whitney_exact(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann–Whitney U test; returns (U of `a`, p).

    Up to `EXACT_MAX_N` pooled runs p is exact: p = 2 * min(P(U <= u), P(U >= u)), capped at 1,
    over all C(n_a + n_b, n_a) equally likely assignments of the pooled midranks to `a`.
    Without ties this equals scipy.stats.mannwhitneyu(method="exact"); with ties it equals
    scipy's exact permutation test (method=PermutationMethod(n_resamples=inf)). Beyond
    `EXACT_MAX_N` it returns `mann_whitney_asymptotic(a, b)`.
    """
    xa, xb = _check(a, "a"), _check(b, "b")
    n_a, n_b = len(xa), len(xb)
    if n_a + n_b > EXACT_MAX_N:
        return mann_whitney_asymptotic(xa, xb)
    rank_sum2, groups = _midranks(xa, xb)
    counts = _rank_sum_counts(groups, n_a)
    total = math.comb(n_a + n_b, n_a)
    at_most = sum(c for s, c in counts.items() if s <= rank_sum2)
    at_least = sum(c for s, c in counts.items() if s >= rank_sum2)
    p = float(Fraction(min(total, 2 * min(at_most, at_least)), total))
    return rank_sum2 / 2 - n_a * (n_a + 1) / 2, p


def min_attainable_p(n_a: int, n_b: int) -> float:
    """Smallest two-sided p the exact test can give: 2 / C(n_a + n_b, n_a), at most 1.

    Reached only by complete separation without ties; ties can only raise it.
    3 vs 3 -> 0.1, 4 vs 4 -> 0.0286, 5 vs 5 -> 0.0079.
    """
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def _percentile(ordered: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default) of sorted data, q in [0, 1]."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def bootstrap_ratio_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 5000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of median(b) / median(a); deterministic for a given seed.

    Each side is resampled with replacement independently. Coarse for n <= 5 per side (few
    distinct resampled medians, intervals too narrow); pair it with `mann_whitney_exact`.
    Values must be positive (timings, ns/day).
    """
    xa, xb = _check(a, "a"), _check(b, "b")
    if min(xa + xb) <= 0:
        raise ValueError("bootstrap_ratio_ci: values must be positive")
    if not 0 < confidence < 1 or resamples < 1:
        raise ValueError("bootstrap_ratio_ci: need 0 < confidence < 1 and resamples >= 1")
    rng = random.Random(seed)
    med = statistics.median
    ratios = sorted(
        med(rng.choices(xb, k=len(xb))) / med(rng.choices(xa, k=len(xa))) for _ in range(resamples)
    )
    tail = (1 - confidence) / 2
    return _percentile(ratios, tail), _percentile(ratios, 1 - tail)


class Verdict(BaseModel):
    """Candidate (dev) versus baseline for one metric; deltas are candidate minus baseline."""

    model_config = ConfigDict(frozen=True)

    higher_is_better: bool
    threshold_pct: float
    alpha: float
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
    test_method: Literal["exact", "asymptotic"] | None
    ci_low: float | None  # (1 - alpha) CI of candidate_median / baseline_median
    ci_high: float | None
    testable: bool  # enough runs that p < alpha is attainable at all
    significant: bool  # p < alpha and the ratio CI excludes 1
    improved: bool | None  # direction of a significant change, else None
    marker: Marker  # 🚀/🐢 only when significant and |delta_pct| > threshold_pct
    note: str


def _fmt_p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:#.2g}"


def _repeats_needed(alpha: float) -> int:
    n = 2
    while min_attainable_p(n, n) >= alpha:
        n += 1
    return n


def compare_samples(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    higher_is_better: bool,
    threshold_pct: float = 2.0,
    alpha: float = 0.05,
) -> Verdict:
    """Compare runs of one metric (ms: higher_is_better=False; ns/day: True).

    With 2+ runs per side the verdict is significant only if the exact Mann–Whitney p < alpha
    *and* the (1 - alpha) bootstrap CI of the ratio of medians excludes 1; the marker fires
    only for a significant change beyond `threshold_pct`. A single run on either side shows
    the delta but no verdict. Values must be positive and finite.
    """
    if threshold_pct < 0 or not 0 < alpha < 1:
        raise ValueError("compare_samples: need threshold_pct >= 0 and 0 < alpha < 1")
    base, cand = _check(baseline, "baseline"), _check(candidate, "candidate")
    if min(base + cand) <= 0:
        raise ValueError("compare_samples: values must be positive")
    n_b, n_c = len(base), len(cand)
    med_b, med_c = median(base), median(cand)
    delta_pct = 100 * (med_c - med_b) / med_b
    better = delta_pct > 0 if higher_is_better else delta_pct < 0
    word = "faster" if better else "slower"
    min_p = min_attainable_p(n_b, n_c)
    p: float | None = None
    method: Literal["exact", "asymptotic"] | None = None
    ci: tuple[float, float] | None = None
    significant = False
    testable = n_b >= 2 and n_c >= 2 and min_p < alpha
    level = f"{100 * (1 - alpha):g}%"
    if n_b < 2 or n_c < 2:
        who = (
            "run per side" if n_b == n_c == 1 else ("baseline run" if n_b < 2 else "candidate run")
        )
        note = f"single {who}: noise unknown, Δ shown for information only"
    else:
        _, p = mann_whitney_exact(base, cand)
        method = "exact" if n_b + n_c <= EXACT_MAX_N else "asymptotic"
        ci = bootstrap_ratio_ci(base, cand, confidence=1 - alpha)
        ci_text = f"{level} CI of ratio {ci[0]:.3f}–{ci[1]:.3f}"
        if not testable:
            note = (
                f"{n_b} vs {n_c} runs cannot reach p < {alpha:g} with an exact Mann–Whitney"
                f" test (minimum p = {min_p:#.2g}); run --repeats {_repeats_needed(alpha)}"
                " or more"
            )
        elif p >= alpha:
            note = f"change within noise ({_fmt_p(p)})"
        elif ci[0] <= 1 <= ci[1]:
            note = f"inconclusive: {_fmt_p(p)} but the {ci_text} includes 1"
        else:
            significant = True
            note = f"{word} by {abs(delta_pct):.1f}% ({_fmt_p(p)}, {ci_text})"
            if abs(delta_pct) <= threshold_pct:
                note += f", within the {threshold_pct:g}% threshold"
    marker: Marker = "•"
    if significant and abs(delta_pct) > threshold_pct:
        marker = "🚀" if better else "🐢"
    return Verdict(
        higher_is_better=higher_is_better,
        threshold_pct=threshold_pct,
        alpha=alpha,
        n_baseline=n_b,
        n_candidate=n_c,
        baseline_median=med_b,
        candidate_median=med_c,
        delta_abs=med_c - med_b,
        delta_pct=delta_pct,
        baseline_spread=spread(base),
        candidate_spread=spread(cand),
        baseline_iqr=iqr(base),
        candidate_iqr=iqr(cand),
        min_attainable_p=min_p,
        p_value=p,
        test_method=method,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        testable=testable,
        significant=significant,
        improved=better if significant else None,
        marker=marker,
        note=note,
    )
