"""Write tests/data/stats_vectors.json: reference values from scipy for tests/test_stats.py.

Run once (needs scipy, numpy and asv-runner; none is a runtime dependency of the orchestrator):

    python tests/data/make_stats_vectors.py

For every case it stores the inputs, scipy's U of `a`, and the two-sided p of
* the exact test: `mannwhitneyu(method="exact")` when there are no ties, else the exact
  permutation test `mannwhitneyu(method=PermutationMethod(n_resamples=inf))`, which enumerates
  all C(n_a + n_b, n_a) splits of the pooled midranks; null for cases too large to enumerate;
* the asymptotic test: `mannwhitneyu(method="asymptotic")` (tie and continuity corrections).
Ratio-CI cases store the distribution-free (Moses) interval of b / a, with the exact null
distribution of U counted by brute force over every split (itertools, independent of the
dynamic programming under test); t cases scipy.stats.t quantiles and two-sided tails;
paired cases scipy's one-sample t test on the log ratios (p and 95 % interval); asv cases
the 99 % interval of the median from asv_runner's own `compute_stats`, for the reference
re-implementation in benchmarks/reference_rules.py; quantile cases numpy's median and IQR.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import scipy  # type: ignore[import-untyped, unused-ignore]
from scipy import stats  # type: ignore[import-untyped, unused-ignore]

OUT = Path(__file__).with_name("stats_vectors.json")


def _rounded(rng: np.random.Generator, n: int, loc: float, scale: float) -> list[float]:
    return [round(float(v), 3) for v in rng.normal(loc, scale, n)]


def _cases() -> list[tuple[str, list[float], list[float]]]:
    rng = np.random.default_rng(20240611)
    return [
        ("3v3 no ties, overlapping", [10.2, 10.9, 10.5], [10.4, 11.3, 10.7]),
        ("3v3 complete separation", [10.0, 10.1, 10.2], [11.0, 11.1, 11.2]),
        ("4v4 no ties, shifted", [5.1, 5.3, 5.0, 5.6], [5.5, 5.9, 5.7, 5.4]),
        ("4v4 complete separation", [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]),
        ("5v5 no ties, 10% shift", _rounded(rng, 5, 100, 3), _rounded(rng, 5, 110, 3)),
        ("5v5 no ties, A/A", _rounded(rng, 5, 100, 3), _rounded(rng, 5, 100, 3)),
        ("5v5 complete separation, reversed", [9.0, 8.0, 7.0, 6.0, 5.5], [1.0, 2.0, 3.0, 4, 5]),
        ("7v7 no ties, 5% shift", _rounded(rng, 7, 100, 4), _rounded(rng, 7, 105, 4)),
        ("7v7 no ties, A/A", _rounded(rng, 7, 50, 2), _rounded(rng, 7, 50, 2)),
        ("3v6 unequal sizes", [12.1, 12.7, 12.4], [11.2, 12.5, 11.9, 12.0, 11.6, 12.3]),
        ("6v3 unequal sizes, separated", [1.1, 1.2, 1.3, 1.4, 1.5, 1.6], [2.1, 2.2, 2.3]),
        ("2v2 separated", [1.0, 2.0], [3.0, 4.0]),
        ("10v10 no ties", _rounded(rng, 10, 20, 1), _rounded(rng, 10, 21, 1)),
        ("20v20 no ties (exact limit)", _rounded(rng, 20, 30, 2), _rounded(rng, 20, 31, 2)),
        ("4v4 ties across samples", [1.0, 2.0, 2.0, 3.0], [2.0, 3.0, 3.0, 4.0]),
        ("5v5 rounded timings with ties", [1.2, 1.3, 1.3, 1.4, 1.2], [1.4, 1.5, 1.4, 1.6, 1.5]),
        ("3v3 identical samples", [4.0, 5.0, 6.0], [4.0, 5.0, 6.0]),
        ("4v4 all values equal", [7.0, 7.0, 7.0, 7.0], [7.0, 7.0, 7.0, 7.0]),
        ("4v4 ties, complete separation", [1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0]),
        (
            "8v8 ns/day, gcc -ntomp 1 vs clang-15 (measurements.md)",
            [24.1, 22.2, 24.2, 24.2, 21.1, 20.9, 23.5, 23.4],
            [35.8, 28.9, 28.0, 37.2, 32.1, 39.9, 39.2, 35.8],
        ),
        (
            "8v8 ns/day, gcc -ntomp 2 vs -ntomp 1 reversed roles",
            [37.1, 37.1, 36.4, 41.2, 39.5, 36.7, 37.5, 41.7],
            [35.8, 28.9, 28.0, 37.2, 32.1, 39.9, 39.2, 35.8],
        ),
        (
            "25v25 with ties (asymptotic only)",
            [round(v, 1) for v in _rounded(rng, 25, 10, 0.5)],
            [round(v, 1) for v in _rounded(rng, 25, 10.3, 0.5)],
        ),
        ("30v30 no ties (asymptotic only)", _rounded(rng, 30, 10, 1), _rounded(rng, 30, 10.5, 1)),
    ]


def _mwu(a: list[float], b: list[float]) -> dict[str, object]:
    ties = len(set(a + b)) < len(a) + len(b)
    n = len(a) + len(b)
    asym = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    exact: float | None
    if n > 40:
        exact, how = None, None
    elif ties:
        assert math.comb(n, len(a)) <= 2_000_000
        perm = stats.PermutationMethod(n_resamples=np.inf)
        res = stats.mannwhitneyu(a, b, alternative="two-sided", method=perm)
        exact, how = float(res.pvalue), "permutation"
    else:
        res = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact")
        exact, how = float(res.pvalue), "exact"
    return {
        "a": a,
        "b": b,
        "ties": ties,
        "u": float(asym.statistic),
        "p_exact": exact,
        "exact_method": how,
        "p_asymptotic": float(asym.pvalue),
    }


def _ratio_ci(name: str, a: list[float], b: list[float], confidence: float) -> dict[str, object]:
    """Moses interval: cut k ratios from each end, k from U's exact null by enumeration."""
    n_a, n_b = len(a), len(b)
    counts = np.zeros(n_a * n_b + 1, dtype=np.int64)
    ranks = range(1, n_a + n_b + 1)
    for chosen in itertools.combinations(ranks, n_a):
        counts[sum(chosen) - n_a * (n_a + 1) // 2] += 1
    total = math.comb(n_a + n_b, n_a)
    k = 0
    while 2 * counts[: k + 1].sum() < (1 - confidence) * total:
        k += 1
    ratios = np.sort(np.log(np.array(b))[None, :] - np.log(np.array(a))[:, None], axis=None)
    ci = None if k == 0 else [float(np.exp(ratios[k - 1])), float(np.exp(ratios[-k]))]
    return {"name": name, "a": a, "b": b, "confidence": confidence, "k": k, "ci": ci}


def _paired(name: str, a: list[float], b: list[float]) -> dict[str, object]:
    d = np.log(np.array(b) / np.array(a))
    res = stats.ttest_1samp(d, 0.0)
    ci = res.confidence_interval(0.95)
    return {
        "name": name,
        "a": a,
        "b": b,
        "p": float(res.pvalue),
        "ci": [float(np.exp(ci.low)), float(np.exp(ci.high))],
    }


def _asv_ci() -> list[dict[str, object]]:
    from asv_runner.statistics import compute_stats  # type: ignore[import-untyped, unused-ignore]

    rng = np.random.default_rng(11)
    rows = []
    for n in (2, 3, 4, 5, 6, 7, 8, 10):
        y = [round(float(v), 4) for v in rng.lognormal(0.0, 0.05, n)]
        _, st = compute_stats(y, 1)
        rows.append({"samples": y, "ci_99": [st["ci_99_a"], st["ci_99_b"]]})
    return rows


def _t_values() -> list[dict[str, float]]:
    rows = []
    for df in (1, 2, 3, 4, 5, 7, 9, 13, 19, 29, 39):
        for q in (0.6, 0.8, 0.9, 0.975, 0.995, 0.9995):
            rows.append({"df": df, "q": q, "ppf": float(stats.t.ppf(q, df))})
        for t in (0.0, 0.3, 1.0, 2.5, 7.0, 40.0):
            rows.append({"df": df, "t": t, "sf2": float(2 * stats.t.sf(t, df))})
    return rows


def main() -> None:
    cases = _cases()
    rng = np.random.default_rng(7)
    a15, b15 = _rounded(rng, 15, 100, 2), _rounded(rng, 15, 98, 2)
    data = {
        "generator": "tests/data/make_stats_vectors.py",
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "mann_whitney": [{"name": name} | _mwu(a, b) for name, a, b in cases],
        "ratio_ci": [
            _ratio_ci("12v12 2% shift", a15[:12], b15[:12], 0.95),
            _ratio_ci("8v8 measurements.md", cases[19][1], cases[19][2], 0.95),
            _ratio_ci("5v5 10% shift", cases[4][1], cases[4][2], 0.95),
            _ratio_ci("4v4 shifted", cases[2][1], cases[2][2], 0.95),
            _ratio_ci("4v4 at 99%: no interval", cases[2][1], cases[2][2], 0.99),
            _ratio_ci("3v3 separation: no interval", cases[1][1], cases[1][2], 0.95),
            _ratio_ci("7v7 A/A", cases[8][1], cases[8][2], 0.90),
        ],
        "t": _t_values(),
        "asv_ci_99": _asv_ci(),
        "paired_t": [
            _paired("8 pairs measurements.md", cases[19][1], cases[19][2]),
            _paired("5 pairs A/A", cases[5][1], cases[5][2]),
            _paired("7 pairs 5% shift", cases[7][1], cases[7][2]),
            _paired("3 pairs", [10.2, 10.9, 10.5], [10.4, 11.3, 10.7]),
            _paired("2 pairs", [1.0, 2.0], [1.1, 2.3]),
        ],
        "quantiles": [
            {
                "values": v,
                "median": float(np.median(v)),
                "iqr": float(np.percentile(v, 75) - np.percentile(v, 25)),
            }
            for v in ([3.0, 1.0, 2.0], [4.0, 1.0, 3.0, 2.0], cases[19][1], cases[13][1], [5.0])
        ],
    }
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
