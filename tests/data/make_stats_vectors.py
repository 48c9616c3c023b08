"""Write tests/data/stats_vectors.json: reference values from scipy for tests/test_stats.py.

Run once (needs scipy and numpy; neither is a runtime dependency of the orchestrator):

    python tests/data/make_stats_vectors.py

For every case it stores the inputs, scipy's U of `a`, and the two-sided p of
* the exact test: `mannwhitneyu(method="exact")` when there are no ties, else the exact
  permutation test `mannwhitneyu(method=PermutationMethod(n_resamples=inf))`, which enumerates
  all C(n_a + n_b, n_a) splits of the pooled midranks; null for cases too large to enumerate;
* the asymptotic test: `mannwhitneyu(method="asymptotic")` (tie and continuity corrections).
Bootstrap cases store scipy's percentile CI of the ratio of medians as a sanity reference
(a different random stream, so the test compares loosely), and quantile cases numpy's
median and IQR.
"""

from __future__ import annotations

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


def _ratio_of_medians(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    ratio: np.ndarray = np.median(b, axis=axis) / np.median(a, axis=axis)
    return ratio


def _bootstrap(name: str, a: list[float], b: list[float]) -> dict[str, object]:
    res = stats.bootstrap(
        (a, b),
        _ratio_of_medians,
        vectorized=True,
        n_resamples=5000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(1),
    )
    ci = res.confidence_interval
    return {"name": name, "a": a, "b": b, "ci_low": ci.low, "ci_high": ci.high}


def main() -> None:
    cases = _cases()
    rng = np.random.default_rng(7)
    a15, b15 = _rounded(rng, 15, 100, 2), _rounded(rng, 15, 98, 2)
    data = {
        "generator": "tests/data/make_stats_vectors.py",
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "mann_whitney": [{"name": name} | _mwu(a, b) for name, a, b in cases],
        "bootstrap": [
            _bootstrap("15v15 2% shift", a15, b15),
            _bootstrap("8v8 measurements.md", cases[19][1], cases[19][2]),
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
