"""asv's and LNT's change-detection rules, re-implemented from their source to compare with ours.

Reference implementations for `bench_stats` only, not product code. Each rule takes the
per-run times (seconds, lower is better) of a baseline and a candidate and answers
"faster", "slower" or None, as that tool's report would.

asv (airspeed-velocity/asv): `asv compare` marks a benchmark changed when
`_is_result_better` holds in one direction (asv/commands/compare.py): the ratio of the two
results (each the median of its samples, `compute_stats` in asv_runner/statistics.py) is
beyond `factor`, and, when both sides have more than one sample, `is_different`
(asv/_stats.py @ 4b9cb9b) says the samples differ. `is_different` runs a two-sided
Mann–Whitney U test at p < 0.002 if its gate `1 / C(n_a + n_b, min(n_a, n_b)) < 0.002`
passes, else it asks whether the 99 % intervals of the two medians overlap. Those
intervals are order-statistic intervals (`quantile_ci`); when the sample is too small for
one (n <= 7), the open end comes from the posterior of a Laplace model,
p(beta | y) ~ (sum |y_j - beta|)^-(n), extended to at least the sample's min or max. The
gate is one-sided while the test is two-sided: at 6 vs 6 the test runs but cannot reach
0.002 (the smallest p is 2/924), and there is no fallback.

LNT (llvm/llvm-lnt): `ComparisonResult.get_value_status` (lnt/server/reporting/analysis.py
@ 04bdd15) on the aggregated values (`min` by default): unchanged when |change| < 1 % or
< 0.01 (absolute, in seconds) or within 2 * 0.0001 * 2.576; with 4+ samples a side,
unchanged when `mannwhitneyu_small` (lnt/util/stats.py @ 0bac267) says "same", i.e. when
|U_a - U_b| is at most the tabulated two-sided 5 % critical value of min(U); then changed
only when |change| exceeds 2.576 population standard deviations of the *current* samples.
The delta is taken from the current minimum to the previous sample closest to it
(`absmin_diff`). `lnt_critical_u` recomputes the critical values from the exact U
distribution; they equal LNT's TABLE_0_05 for every size up to 10 (checked by hand).
Both tools compare each benchmark (here: each category) on its own, without correction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import Literal

Outcome = Literal["faster", "slower"] | None

ASV_P = 0.002


@cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of orderings giving U = 0..m*n (Mann & Whitney 1947's recurrence)."""
    if m == 0 or n == 0:
        return (1,)
    shorter = _u_counts(m, n - 1)  # the largest value is in y: U unchanged
    fewer = _u_counts(m - 1, n)  # the largest value is in x: U grows by n
    counts = [0] * (m * n + 1)
    for u, c in enumerate(shorter):
        counts[u] += c
    for u, c in enumerate(fewer):
        counts[u + n] += c
    return tuple(counts)


def _u_cdf(m: int, n: int, u: int) -> float:
    counts = _u_counts(m, n)
    return sum(counts[: u + 1]) / math.comb(m + n, m)


def asv_mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    """asv's two-sided exact U test with its conservative tie breaking (sizes <= 20)."""
    m, n = len(x), len(y)
    u = sum(1 for a in x for b in y if a > b)
    ties = sum(1 for a in x for b in y if a == b)
    if u <= m * n // 2 <= u + ties:
        ties = m * n // 2 - u
    ux1, ux2 = min(u, m * n - u), min(u + ties, m * n - (u + ties))
    ux = max(ux1, ux2)
    return _u_cdf(m, n, ux) + 1.0 - _u_cdf(m, n, max(m * n // 2, m * n - ux - 1))


def _laplace_ppf(samples: Sequence[float], q: float) -> float:
    """The q quantile of asv's Laplace posterior of the location, p ~ (sum |y_j - b|)^-n.

    Between sorted samples the sum is c * b + s with c = 2k - n (k samples below b), so
    the unnormalised CDF is closed-form on each stretch, ((c a + s)^-nu - (c b + s)^-nu) /
    (nu c) with nu = n - 1 (or length / s^n where c = 0), and so is its inverse.
    """
    y = sorted(samples)
    n, nu = len(y), len(y) - 1
    mle = _quantile(y, 0.5)
    scale = sum(abs(v - mle) for v in y) * nu ** (1 / (nu + 1))
    if scale == 0:
        return mle
    z = [(v - mle) / scale for v in y]
    pieces = []  # (low, c, s, integral over the stretch)
    for k in range(n + 1):
        low, high = (z[k - 1] if k else -math.inf), (z[k] if k < n else math.inf)
        c, s = 2 * k - n, sum(z[k:]) - sum(z[:k])
        if c == 0:
            area = (high - low) / s ** (nu + 1)
        else:
            at_low = 0.0 if math.isinf(low) else (c * low + s) ** -nu
            at_high = 0.0 if math.isinf(high) else (c * high + s) ** -nu
            area = (at_low - at_high) / (nu * c)
        pieces.append((low, c, s, area))
    rest, k = q * sum(piece[3] for piece in pieces), 0
    while k < n and rest > pieces[k][3]:
        rest -= pieces[k][3]
        k += 1
    low, c, s, _ = pieces[k]
    if c == 0:
        beta = low + rest * s ** (nu + 1)
    else:
        at_low = 0.0 if math.isinf(low) else (c * low + s) ** -nu
        beta = ((at_low - nu * c * rest) ** (-1 / nu) - s) / c
    return float(beta * scale + mle)


def _quantile(y: Sequence[float], q: float) -> float:
    ordered = sorted(y)
    z = (len(ordered) - 1) * q
    j = math.floor(z)
    if j == len(ordered) - 1:
        return ordered[-1]
    return (1 - (z - j)) * ordered[j] + (z - j) * ordered[j + 1]


def asv_ci_99(samples: Sequence[float]) -> tuple[float, float]:
    """asv's 99 % interval of the median: order statistics, Laplace posterior when open."""
    y, n = sorted(samples), len(samples)
    low, high, cum = -math.inf, math.inf, 0.0
    for k, value in enumerate(y):
        cum += math.comb(n, k) / 2**n
        if cum <= 0.005:
            low = value
        if cum >= 0.995:
            high = value
            break
    if (math.isinf(low) or math.isinf(high)) and n > 1:
        if math.isinf(low):
            low = min(_laplace_ppf(y, 0.005), min(y))
        if math.isinf(high):
            high = max(_laplace_ppf(y, 0.995), max(y))
    return low, high


def asv_is_different(a: Sequence[float], b: Sequence[float]) -> bool:
    if 1 / math.comb(len(a) + len(b), min(len(a), len(b))) < ASV_P:
        return asv_mann_whitney_p(a, b) < ASV_P
    ci_a, ci_b = asv_ci_99(a), asv_ci_99(b)
    return not (ci_a[1] >= ci_b[0] and ci_a[0] <= ci_b[1])


def asv_rule(base: Sequence[float], cand: Sequence[float], *, factor: float) -> Outcome:
    """`asv compare --factor`: the medians differ by more than `factor` and `is_different`."""
    before, after = _quantile(base, 0.5), _quantile(cand, 0.5)
    stats = len(base) > 1 and len(cand) > 1
    if stats and not asv_is_different(base, cand):
        return None
    if after < before / factor:
        return "faster"
    if before < after / factor:
        return "slower"
    return None


@cache
def lnt_critical_u(m: int, n: int, alpha: float = 0.05) -> int:
    """Largest c with 2 P(U <= c) <= alpha, or 0 when none (LNT's table keeps 0 there)."""
    counts, total, c, cum = _u_counts(m, n), math.comb(m + n, m), -1, 0
    while c + 1 < len(counts) and 2 * (cum + counts[c + 1]) <= alpha * total:
        c += 1
        cum += counts[c]
    return max(c, 0)


def lnt_same(a: Sequence[float], b: Sequence[float], alpha: float = 0.05) -> bool:
    """`mannwhitneyu_small`: "same" when |U_a - U_b| <= the critical value of min(U)."""
    flip = len(a) > len(b)
    x, y = (b, a) if flip else (a, b)
    ux = sum(1.0 if xe < ye else 0.5 if xe == ye else 0.0 for xe in x for ye in y)
    uy = len(a) * len(b) - ux
    ua, ub = (uy, ux) if flip else (ux, uy)
    return abs(ua - ub) <= lnt_critical_u(len(a), len(b), alpha)


def lnt_rule(base: Sequence[float], cand: Sequence[float]) -> Outcome:
    """LNT's `get_value_status` for one test, times in seconds, min aggregation."""
    current = min(cand)
    prev = min(base, key=lambda v: abs(current - v))  # absmin_diff: closest previous sample
    delta = current - prev
    pct = delta / prev if prev else 0.0
    if abs(pct) < 0.01 or abs(delta) < 0.01 or abs(delta) <= 2 * 0.0001 * 2.576:
        return None
    if len(cand) >= 4 and len(base) >= 4 and lnt_same(cand, base):
        return None
    if len(cand) > 1:
        mean = sum(cand) / len(cand)
        stddev = math.sqrt(sum((v - mean) ** 2 for v in cand) / len(cand))
        if abs(delta) <= stddev * 2.576:
            return None
    elif abs(pct) < 0.002:
        return None
    return "faster" if delta < 0 else "slower"
