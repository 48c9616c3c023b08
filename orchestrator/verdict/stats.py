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
* the distribution-free confidence interval of the ratio that inverts the same exact test
  (Moses; Lehmann 1963, *Ann. Math. Stat.* 34:1507; Hollander & Wolfe 1999 §4.3): the
  order statistics of the n_a * n_b log differences, cut where the exact U distribution
  puts alpha / 2 in each tail. It covers the true ratio with probability >= 1 - alpha
  under a multiplicative shift whatever the distribution, needs no resampling and cannot
  be too narrow for small n, unlike a percentile bootstrap of the medians (Efron &
  Tibshirani 1993, ch. 13), which this replaced;
* the minimum detectable change: the smallest change that gets a *marker* (significant and
  beyond the threshold) with 80 % probability (`verdict.detectable`). The test's side is
  normal theory with the size the exact test can actually attain (4 vs 4: 2/70, not 0.05)
  and the standard error s * sqrt(1/n_a + 1/n_b) inflated by sqrt(pi/3), the asymptotic
  efficiency of the U test relative to the t test under normality (Hodges & Lehmann 1956,
  *Ann. Math. Stat.* 27:324); the threshold's side is the ratio of medians, whose log has
  the standard error s * sqrt(pi/2 * (1/n_a + 1/n_b)) (the median's asymptotic variance
  pi/2 * sigma^2 / n, an upper bound for small n: 1.35 sigma^2 / n at n = 3).

`compare_samples` requires *both* p < alpha and a (1 - alpha) ratio interval that excludes
1; without ties they agree by construction. It is the test for groups that were not run
in interleaved pairs (`compare` of arbitrary groups); `bench` runs pairs and uses the paired
test of `orchestrator.verdict.paired`.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Literal

from orchestrator.verdict.defaults import ALPHA, POWER, THRESHOLD_PCT
from orchestrator.verdict.detectable import marker_change, median_sd, threshold_limit
from orchestrator.verdict.model import Verdict, direction_of
from orchestrator.verdict.student import t_ppf

#: Pooled run counts up to this use the exact distribution; above, the normal approximation.
EXACT_MAX_N = 40

#: Up to this many pairs `ratio_ci` sorts all differences; beyond, it selects (same result).
PAIRS_SORTED = 4096


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


def variance(values: Sequence[float]) -> float:
    """Sample variance (n - 1) by two passes of `math.fsum`: as exact as statistics.variance
    for timings, without its Fractions (which dominate the simulation's run time)."""
    if len(values) < 2:
        raise ValueError("variance: need at least two values")
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


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


def _midranks(a: list[float], b: list[float]) -> tuple[float, tuple[tuple[int, int], ...]]:
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
    return rank_sum2, tuple(groups)


@lru_cache(maxsize=512)
def _rank_sum_counts(groups: tuple[tuple[int, int], ...], k_total: int) -> dict[int, int]:
    """For each doubled rank sum s: how many k_total-subsets of the pooled runs have sum s.

    Dynamic programming over tie groups: taking j of a group's t runs adds j times its
    midrank, in C(t, j) ways. Without ties every group has t = 1 and this is the usual
    recurrence for the exact Mann–Whitney distribution. Cached: without ties the groups,
    hence the distribution, depend only on the sample sizes. Callers must not mutate it.
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


@lru_cache(maxsize=256)
def _u_counts(n_a: int, n_b: int) -> tuple[int, ...]:
    """Without ties: how many of the C(n_a + n_b, n_a) splits give U = 0, 1, …, n_a * n_b."""
    pooled = tuple((1, 2 * i) for i in range(1, n_a + n_b + 1))
    offset = n_a * (n_a + 1)  # doubled minimum rank sum
    counts = [0] * (n_a * n_b + 1)
    for s2, count in _rank_sum_counts(pooled, n_a).items():
        counts[(s2 - offset) // 2] += count
    return tuple(counts)


def _cut(n_a: int, n_b: int, alpha: float) -> int:
    """How many U values each two-sided tail of size < alpha holds (0: none can reject)."""
    if n_a + n_b > EXACT_MAX_N:
        z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
        return max(0, math.floor(n_a * n_b / 2 - z * math.sqrt(n_a * n_b * (n_a + n_b + 1) / 12)))
    counts, total = _u_counts(n_a, n_b), math.comb(n_a + n_b, n_a)
    k, cum = 0, 0
    while k < len(counts) and 2 * (cum + counts[k]) < alpha * total:
        cum += counts[k]
        k += 1
    return k


def attainable_alpha(n_a: int, n_b: int, alpha: float) -> float | None:
    """The largest two-sided size below `alpha` the exact test attains (None: none does)."""
    k = _cut(n_a, n_b, alpha)
    if k == 0:
        return None
    if n_a + n_b > EXACT_MAX_N:
        return alpha
    return 2 * sum(_u_counts(n_a, n_b)[:k]) / math.comb(n_a + n_b, n_a)


def ratio_ci(
    a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Distribution-free CI of the ratio b / a (Moses): None when the sizes are too small.

    The ratios b_j / a_i of all n_a * n_b pairs are sorted and the k smallest and k largest
    are cut, k from the exact null distribution of U (normal approximation beyond
    `EXACT_MAX_N`). It is exactly the set of ratios r for which the Mann–Whitney test does
    not reject "b / r and a have the same distribution" at 1 - confidence.
    """
    xa, xb = _check(a, "a"), _check(b, "b")
    if min(xa + xb) <= 0:
        raise ValueError("ratio_ci: values must be positive")
    if not 0 < confidence < 1:
        raise ValueError("ratio_ci: need 0 < confidence < 1")
    k = _cut(len(xa), len(xb), 1 - confidence)
    if k == 0:
        return None
    la, lb = sorted(math.log(x) for x in xa), sorted(math.log(y) for y in xb)
    if len(la) * len(lb) <= PAIRS_SORTED:
        diffs = sorted([y - x for x in la for y in lb])
        return math.exp(diffs[k - 1]), math.exp(diffs[len(diffs) - k])
    low = kth_difference(la, lb, k)
    high = -kth_difference(lb, la, k)  # the k-th largest of y - x: minus the k-th smallest x - y
    return math.exp(low), math.exp(high)


def kth_difference(la: Sequence[float], lb: Sequence[float], k: int) -> float:
    """The k-th smallest (1-based) of all y - x (x in `la`, y in `lb`, both sorted), without
    forming the n_a * n_b differences: bisect on the value, counting in O(n log n) per step,
    then snap to the largest actual difference at or below the bound found."""
    lo, hi = lb[0] - la[-1], lb[-1] - la[0]

    def at_most(t: float) -> int:
        return sum(len(la) - bisect_left(la, y - t) for y in lb)

    while hi - lo > 1e-13 * max(1.0, abs(lo), abs(hi)):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if at_most(mid) >= k else (mid, hi)
    slack = 1e-12 * max(1.0, abs(hi))  # y - (y - hi) need not round back to hi
    return max(y - la[i] for y in lb if (i := bisect_left(la, y - hi - slack)) < len(la))


def min_detectable_pct(
    a: Sequence[float],
    b: Sequence[float],
    *,
    alpha: float,
    power: float = POWER,
    threshold_pct: float = THRESHOLD_PCT,
) -> float | None:
    """The change (%) that gets a marker with `power`, given the spread (see the module
    docstring); None: the sizes cannot reach `alpha`, or no spread was observed."""
    xa, xb = _check(a, "a"), _check(b, "b")
    n_a, n_b = len(xa), len(xb)
    size = attainable_alpha(n_a, n_b, alpha) if n_a >= 2 and n_b >= 2 else None
    if size is None:
        return None
    la, lb = [math.log(v) for v in xa], [math.log(v) for v in xb]
    df = n_a + n_b - 2
    pooled = ((n_a - 1) * variance(la) + (n_b - 1) * variance(lb)) / df
    if pooled <= 0:
        return None
    scale = median_sd(math.sqrt(pooled * (1 / n_a + 1 / n_b)), df)
    shift = marker_change(
        se_test=scale * math.sqrt(math.pi / 3), se_est=scale * math.sqrt(math.pi / 2), df=df,
        q=t_ppf(1 - size / 2, df), limit=threshold_limit(threshold_pct), power=power,
    )  # fmt: skip
    return 100 * math.expm1(shift)


def compare_samples(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    higher_is_better: bool,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
    power: float = POWER,
) -> Verdict:
    """Compare two independent groups of runs of one metric (ms: higher_is_better=False).

    With 2+ runs per side the verdict is significant only if the exact Mann–Whitney p < alpha
    *and* the (1 - alpha) distribution-free interval of the ratio excludes 1; the marker
    fires only for a significant change beyond `threshold_pct`. A single run on either side
    shows the delta but no verdict. Values must be positive and finite.
    """
    if threshold_pct < 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(
            "compare_samples: need threshold_pct >= 0, 0 < alpha < 1 and 0 < power < 1"
        )
    base, cand = _check(baseline, "baseline"), _check(candidate, "candidate")
    if min(base + cand) <= 0:
        raise ValueError("compare_samples: values must be positive")
    n_b, n_c = len(base), len(cand)
    med_b, med_c = median(base), median(cand)
    delta_pct = 100 * (med_c - med_b) / med_b
    better = delta_pct > 0 if higher_is_better else delta_pct < 0
    min_p = min_attainable_p(n_b, n_c)
    p: float | None = None
    method: Literal["exact", "asymptotic"] | None = None
    ci: tuple[float, float] | None = None
    mdc: float | None = None
    significant = False
    testable = n_b >= 2 and n_c >= 2 and min_p < alpha
    if n_b >= 2 and n_c >= 2:
        _, p = mann_whitney_exact(base, cand)
        method = "exact" if n_b + n_c <= EXACT_MAX_N else "asymptotic"
        ci = ratio_ci(base, cand, confidence=1 - alpha)
        mdc = min_detectable_pct(base, cand, alpha=alpha, power=power, threshold_pct=threshold_pct)
        significant = testable and ci is not None and p < alpha and not ci[0] <= 1 <= ci[1]
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
        mdc_pct=mdc,
        power=power,
        testable=testable,
        significant=significant,
        improved=better if significant else None,
        direction=direction_of(significant, better, delta_pct, threshold_pct),
    )
