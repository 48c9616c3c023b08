"""What "could have detected ±X %" means: the smallest change that gets a *marker*.

A marker (🚀/🐢) needs two things at once: a significant test (|t| > q, the two-sided
quantile at alpha) *and* an estimated change beyond the threshold. The textbook minimum
detectable change, (t_{1-a/2} + t_{power}) * se, looks at the first only: at CV 1 % and
10 pairs it states ±1.37 %, below the 2 % threshold, and a true 1.37 % change gets a
marker in 6.6 % of trials. The figure here is the change whose *marker* probability is
`power`, for normal log timings whose true spread is the one observed, read
median-unbiasedly (`median_sd`).

For an estimate m ~ N(mu, se_est^2) of the log change and a spread estimate
s = sigma * U with U = sqrt(chi2_df / df), independent of m (normal theory), the marker
in the direction of mu > 0 fires when m > max(limit, q * se_test * U), so

    P(marker | mu) = E_U[ Phi((mu - max(limit, q * se_test * U)) / se_est) ]

(the opposite tail, a marker of the wrong sign, is below 1e-6 wherever P is near 0.75
and left out: it would only make the figure smaller). The expectation is a Simpson sum
over the chi density of U (`_chi_nodes`), and the figure the root of P = power, found by
a safeguarded Newton iteration. The limit is
the threshold on the log scale in its harder direction, -log(1 - t) (a 2 % slowdown of
time is log 1.02 = 0.0198, a 2 % speed-up log 0.98 = -0.0202): the figure holds for a
change either way. Simulated through the product's verdict functions in
`benchmarks/bench_stats.py` ("Is 'could have detected ±X%' honest?").
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

#: Simpson intervals over the chi density (64 agree with 1024 to 1e-5 in P).
NODES = 64
#: The root is found to this marker probability (the figure to about 1e-4 of itself).
TOLERANCE = 1e-6


@lru_cache(maxsize=256)
def _chi_nodes(df: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Points u and weights of U = sqrt(chi2_df / df) (the observed sd over the true one).

    Its density is proportional to u^(df-1) exp(-df u^2 / 2); the grid spans 9 standard
    deviations of U (sd ~ 1 / sqrt(2 df)) on each side, weights normalised to sum to 1.
    """
    width = 9.0 / math.sqrt(2.0 * df)
    low, high = max(0.0, 1.0 - width), 1.0 + width
    step = (high - low) / NODES
    points, weights = [], []
    for i in range(NODES + 1):
        u = low + i * step
        if u == 0.0:
            density = math.exp(0.5) if df == 1 else 0.0
        else:
            density = math.exp((df - 1) * math.log(u) - df * (u * u - 1.0) / 2.0)
        simpson = 1.0 if i in (0, NODES) else (4.0 if i % 2 else 2.0)
        if density * simpson > 1e-14:
            points.append(u)
            weights.append(density * simpson)
    total = math.fsum(weights)
    return tuple(points), tuple(w / total for w in weights)


@lru_cache(maxsize=256)
def chi_median(df: int) -> float:
    """The median of U = sqrt(chi2_df / df): bisection on the regularized lower incomplete
    gamma P(df / 2, x / 2) = 1/2, by its power series (DLMF 8.11.4; x is near df here,
    where the series converges in a few dozen terms)."""
    a = df / 2.0

    def cdf(x: float) -> float:
        term = total = 1.0 / a
        n = 0
        while term > 1e-17 * total:
            n += 1
            term *= (x / 2.0) / (a + n)
            total += term
        return math.exp(a * math.log(x / 2.0) - x / 2.0 - math.lgamma(a)) * total

    lo, hi = 0.0, df + 10.0 * math.sqrt(2.0 * df) + 10.0
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if cdf(mid) < 0.5 else (lo, mid)
    return math.sqrt((lo + hi) / 2.0 / df)


def median_sd(sd: float, df: int) -> float:
    """The true sd that makes `sd` the median observation: sd / median(U).

    The figure is stated for the spread the runs showed, but a small sample usually shows
    less than there is (with 3 pairs the median s is 0.83 sigma), and a figure computed
    from s itself got the marker in only 63–70 % of trials at 3 pairs. Scaled this way the
    stated figure is as often above as below the one for the true spread, so a true change
    of the typical stated figure gets the marker with probability `power`.
    """
    return sd / chi_median(df)


def threshold_limit(threshold_pct: float) -> float:
    """The marker's threshold on the log scale, in its harder direction (see above)."""
    t = threshold_pct / 100.0
    return -math.log1p(-t) if t < 1.0 else math.log1p(t)


def _power_and_slope(
    shift: float, *, se_test: float, se_est: float, df: int, q: float, limit: float
) -> tuple[float, float]:
    """P(marker) at `shift` and its derivative in `shift` (for Newton's method)."""
    points, weights = _chi_nodes(df)
    scale = 1.0 / (se_est * math.sqrt(2.0))
    total = slope = 0.0
    for u, w in zip(points, weights, strict=True):
        z = (shift - max(limit, q * se_test * u)) * scale
        total += w * math.erfc(-z)
        slope += w * math.exp(-z * z)
    return total / 2.0, slope * scale / math.sqrt(math.pi)


def marker_power(
    shift: float, *, se_test: float, se_est: float, df: int, q: float, limit: float
) -> float:
    """P(marker) for a true log change `shift` >= 0 (formula in the module docstring)."""
    if se_est <= 0.0:
        return float(shift > max(limit, 0.0))
    return _power_and_slope(shift, se_test=se_test, se_est=se_est, df=df, q=q, limit=limit)[0]


def marker_change(
    *, se_test: float, se_est: float, df: int, q: float, limit: float, power: float
) -> float:
    """The smallest true log change whose marker probability is `power` (0 < power < 1).

    Newton's method from the larger of the two one-condition answers, kept inside a
    bracket that it narrows (bisecting when a step leaves it): P rises in the change, and
    P(mu) <= Phi((mu - limit) / se_est) puts the root at or above `lo`.
    """
    if se_test <= 0.0 or se_est <= 0.0:
        return limit
    z = NormalDist().inv_cdf(power)
    lo, hi = limit + z * se_est, math.inf
    x = max(lo, (q + z) * se_test)
    for _ in range(100):
        p, slope = _power_and_slope(x, se_test=se_test, se_est=se_est, df=df, q=q, limit=limit)
        if abs(p - power) < TOLERANCE:
            return x
        if p < power:
            lo = x
        else:
            hi = x
        step = x - (p - power) / slope if slope > 0 else math.nan
        if lo < step < hi:
            x = step
        else:
            x = (lo + hi) / 2.0 if math.isfinite(hi) else 2.0 * x - limit + se_est
    return x
