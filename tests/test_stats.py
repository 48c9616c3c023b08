"""orchestrator.stats against scipy reference values (tests/data/stats_vectors.json)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest

from orchestrator.report import words
from orchestrator.verdict import stats, student
from tests.test_paired import independent_marker_change, independent_typical_sd

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "stats_vectors.json").read_text(encoding="utf-8")
)
MWU = VECTORS["mann_whitney"]


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


@pytest.mark.parametrize("case", MWU, ids=_ids(MWU))
def test_mann_whitney_matches_scipy(case: dict[str, Any]) -> None:
    u, p = stats.mann_whitney_exact(case["a"], case["b"])
    assert u == case["u"]
    if case["p_exact"] is not None:
        assert len(case["a"]) + len(case["b"]) <= stats.EXACT_MAX_N
        assert p == pytest.approx(case["p_exact"], rel=0, abs=1e-9)
    else:  # too large for the exact path: scipy's asymptotic value
        assert len(case["a"]) + len(case["b"]) > stats.EXACT_MAX_N
        assert p == pytest.approx(case["p_asymptotic"], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("case", MWU, ids=_ids(MWU))
def test_mann_whitney_asymptotic_matches_scipy(case: dict[str, Any]) -> None:
    u, p = stats.mann_whitney_asymptotic(case["a"], case["b"])
    assert u == case["u"]
    assert p == pytest.approx(case["p_asymptotic"], rel=1e-9, abs=1e-12)


def test_vectors_cover_the_required_cases() -> None:
    names = " ".join(_ids(MWU))
    for needed in ("3v3", "4v4", "5v5", "7v7", "ties", "identical", "separation", "3v6"):
        assert needed in names
    assert any(c["ties"] and c["exact_method"] == "permutation" for c in MWU)


def test_mann_whitney_symmetry() -> None:
    a, b = [1.0, 2.5, 3.0, 7.0], [2.0, 4.0, 5.0, 6.0, 8.0]
    u_ab, p_ab = stats.mann_whitney_exact(a, b)
    u_ba, p_ba = stats.mann_whitney_exact(b, a)
    assert u_ab + u_ba == len(a) * len(b)
    assert p_ab == pytest.approx(p_ba, abs=1e-12)


def test_identical_samples_give_p_one() -> None:
    assert stats.mann_whitney_exact([4.0, 5.0, 6.0], [4.0, 5.0, 6.0])[1] == 1.0
    assert stats.mann_whitney_exact([7.0] * 3, [7.0] * 3)[1] == 1.0


@pytest.mark.parametrize(
    ("n_a", "n_b", "expected"),
    [(3, 3, 0.1), (4, 4, 2 / 70), (5, 5, 2 / 252), (3, 6, 2 / 84), (1, 1, 1.0), (2, 2, 1 / 3)],
)
def test_min_attainable_p(n_a: int, n_b: int, expected: float) -> None:
    assert stats.min_attainable_p(n_a, n_b) == pytest.approx(expected, abs=1e-12)


def test_min_attainable_p_is_reached_by_complete_separation() -> None:
    for n in (3, 4, 5, 6):
        low, high = [float(i) for i in range(n)], [float(i + 100) for i in range(n)]
        assert stats.mann_whitney_exact(low, high)[1] == pytest.approx(
            stats.min_attainable_p(n, n), abs=1e-12
        )


@pytest.mark.parametrize("case", VECTORS["quantiles"])
def test_median_and_iqr_match_numpy(case: dict[str, Any]) -> None:
    assert stats.median(case["values"]) == pytest.approx(case["median"], abs=1e-12)
    assert stats.iqr(case["values"]) == pytest.approx(case["iqr"], abs=1e-12)
    assert stats.spread(case["values"]) == (min(case["values"]), max(case["values"]))


@pytest.mark.parametrize("case", VECTORS["ratio_ci"], ids=_ids(VECTORS["ratio_ci"]))
def test_ratio_ci_matches_brute_force_enumeration(case: dict[str, Any]) -> None:
    got = stats.ratio_ci(case["a"], case["b"], confidence=case["confidence"])
    if case["ci"] is None:
        assert got is None
    else:
        assert got == pytest.approx(tuple(case["ci"]), rel=1e-12)


@pytest.mark.parametrize("case", VECTORS["ratio_ci"][:4], ids=_ids(VECTORS["ratio_ci"][:4]))
def test_ratio_ci_is_the_set_of_ratios_the_exact_test_accepts(case: dict[str, Any]) -> None:
    """Inverting the Mann–Whitney test: inside the interval the shifted data are accepted."""
    a, b, alpha = case["a"], case["b"], 1 - case["confidence"]
    ci = stats.ratio_ci(a, b, confidence=case["confidence"])
    assert ci is not None
    low, high = ci
    for r, accepted in ((low * 1.0001, True), (high / 1.0001, True), (low / 1.001, False),
                        (high * 1.001, False), (math.sqrt(low * high), True)):  # fmt: skip
        p = stats.mann_whitney_exact(a, [v / r for v in b])[1]
        assert (p >= alpha) is accepted, (r, p)


def test_attainable_alpha_is_the_exact_tests_real_size() -> None:
    assert stats.attainable_alpha(3, 3, 0.05) is None
    assert stats.attainable_alpha(4, 4, 0.05) == pytest.approx(2 / 70)
    assert stats.attainable_alpha(5, 5, 0.05) == pytest.approx(8 / 252)
    assert stats.attainable_alpha(5, 5, 0.01) == pytest.approx(2 / 252)


def test_no_change_states_what_it_could_have_detected() -> None:
    base, cand = [100.0, 103.0, 98.0, 101.0, 99.5], [99.0, 102.0, 100.5, 98.5, 101.5]
    v = stats.compare_samples(base, cand, higher_is_better=False)
    assert v.mdc_pct is not None and 2.0 < v.mdc_pct < 10.0
    assert (f"could have detected ±{v.mdc_pct:.1f}% (a marker with 80% probability: p < 0.05 "
            "and beyond ±2%)") in words.note(v)  # fmt: skip
    noisier = stats.compare_samples(base, [c * (1 + (i - 2) / 50) for i, c in enumerate(cand)],
                                    higher_is_better=False)  # fmt: skip
    assert noisier.mdc_pct is not None and noisier.mdc_pct > v.mdc_pct
    more = stats.compare_samples(base * 2, cand * 2, higher_is_better=False)
    assert more.mdc_pct is not None and more.mdc_pct < v.mdc_pct
    untestable = stats.compare_samples(base[:3], cand[:3], higher_is_better=False)
    assert untestable.mdc_pct is None


@pytest.mark.parametrize(
    ("base", "cand", "alpha"),
    [
        ([100.0, 103.0, 98.0, 101.0, 99.5], [99.0, 102.0, 100.5, 98.5, 101.5], 0.05),
        ([10.0, 10.1, 9.95, 10.05], [10.02, 9.98, 10.07, 10.0], 0.05),
        ([50.0, 51.0, 49.5, 50.2, 50.8, 49.9, 50.4], [50.1, 50.3, 49.8, 50.9, 50.0, 50.6], 0.01),
    ],
)
def test_unpaired_detectable_change_matches_an_independent_computation(
    base: list[float], cand: list[float], alpha: float
) -> None:
    """The unpaired figure, recomputed from its definition by another numeric route (scipy
    is not among the dev dependencies): the exact test's attainable size counted from all
    C(n_a + n_b, n_a) rank splits, the pooled log sd read median-unbiasedly, and the marker
    probability summed over the chi-square density with bisection on the change."""
    n_a, n_b = len(base), len(cand)
    total = math.comb(n_a + n_b, n_a)
    us = sorted(sum(r for r in ranks) - n_a * (n_a + 1) // 2
                for ranks in itertools.combinations(range(1, n_a + n_b + 1), n_a))  # fmt: skip
    size = max(2 * k / total for k in range(1, total + 1)
               if 2 * k / total < alpha and (k == total or us[k] != us[k - 1]))  # fmt: skip
    la, lb = [math.log(x) for x in base], [math.log(x) for x in cand]
    ss = sum((x - sum(la) / n_a) ** 2 for x in la) + sum((x - sum(lb) / n_b) ** 2 for x in lb)
    df = n_a + n_b - 2
    scale = independent_typical_sd(math.sqrt(ss / df * (1 / n_a + 1 / n_b)), df)
    q = student.t_ppf(1 - size / 2, df)
    se_test, se_est = scale * math.sqrt(math.pi / 3), scale * math.sqrt(math.pi / 2)
    shift = independent_marker_change(se_test, se_est, df, q, -math.log(0.98), 0.8)
    got = stats.min_detectable_pct(base, cand, alpha=alpha)
    assert got == pytest.approx(100 * math.expm1(shift), rel=1e-3)
    v = stats.compare_samples(base, cand, higher_is_better=False, alpha=alpha)
    assert v.mdc_pct == got and v.mdc_pct > 2.0


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError):
        stats.mann_whitney_exact([], [1.0])
    with pytest.raises(ValueError):
        stats.median([1.0, math.nan])
    with pytest.raises(ValueError):
        stats.compare_samples([0.0, 1.0], [1.0, 2.0], higher_is_better=True)


# --- compare_samples -------------------------------------------------------------------------

BASE = [100.0, 103.0, 98.0, 101.0, 99.5]
SHIFTED = [v * 1.10 for v in BASE]


def test_a_a_overlapping_is_not_significant() -> None:
    v = stats.compare_samples(BASE, [99.0, 102.0, 100.5, 98.5, 101.5], higher_is_better=False)
    assert v.testable and not v.significant
    assert words.marker(v) == "•" and v.improved is None
    assert v.p_value is not None and v.p_value > 0.05
    assert "within noise" in words.note(v)


@pytest.mark.parametrize(
    ("higher_is_better", "marker", "word"), [(True, "🚀", "faster"), (False, "🐢", "slower")]
)
def test_clear_10pct_increase(higher_is_better: bool, marker: str, word: str) -> None:
    v = stats.compare_samples(BASE, SHIFTED, higher_is_better=higher_is_better)
    assert v.significant and v.testable
    assert words.marker(v) == marker and v.improved is higher_is_better
    assert v.delta_pct == pytest.approx(10.0)
    assert v.p_value == pytest.approx(2 / 252)
    assert v.ci_low is not None and v.ci_high is not None and v.ci_low > 1.0
    assert v.test_method == "exact"
    assert words.note(v).startswith(f"{word} by 10.0% (p = 0.0079, 95% CI of ratio")


@pytest.mark.parametrize(("higher_is_better", "marker"), [(True, "🐢"), (False, "🚀")])
def test_clear_10pct_decrease(higher_is_better: bool, marker: str) -> None:
    v = stats.compare_samples(SHIFTED, BASE, higher_is_better=higher_is_better)
    assert v.significant and words.marker(v) == marker
    assert v.improved is (not higher_is_better)
    assert v.ci_high is not None and v.ci_high < 1.0


def test_3v3_complete_separation_is_untestable() -> None:
    v = stats.compare_samples([10.0, 10.1, 10.2], [12.0, 12.1, 12.2], higher_is_better=False)
    assert not v.testable and not v.significant
    assert words.marker(v) == "•" and v.improved is None
    assert v.p_value == pytest.approx(0.1)
    assert v.delta_pct == pytest.approx(100 * 2 / 10.1)
    assert "3 vs 3 runs cannot reach p < 0.05" in words.note(v)
    assert "minimum p = 0.10" in words.note(v) and "--repeats 4" in words.note(v)


def test_single_run_shows_delta_but_noise_unknown() -> None:
    v = stats.compare_samples([100.0], [90.0], higher_is_better=False)
    assert v.delta_pct == pytest.approx(-10.0) and v.delta_abs == pytest.approx(-10.0)
    assert v.p_value is None and v.ci_low is None and v.ci_high is None
    assert not v.testable and not v.significant and words.marker(v) == "•"
    assert "noise unknown" in words.note(v)
    one_side = stats.compare_samples([100.0], BASE, higher_is_better=True)
    assert one_side.p_value is None and "noise unknown" in words.note(one_side)


def test_one_pct_significant_with_threshold_two_has_no_marker() -> None:
    base = [100.0, 100.1, 100.2, 100.3, 100.4]
    cand = [101.0, 101.1, 101.2, 101.3, 101.4]
    v = stats.compare_samples(base, cand, higher_is_better=True, threshold_pct=2.0)
    assert v.significant and v.improved is True
    assert v.delta_pct == pytest.approx(1.0, abs=0.01)
    assert words.marker(v) == "•"
    assert "within the 2% threshold" in words.note(v)
    lower = stats.compare_samples(base, cand, higher_is_better=True, threshold_pct=0.5)
    assert words.marker(lower) == "🚀"


def test_spreads_and_model_fields() -> None:
    v = stats.compare_samples(BASE, SHIFTED, higher_is_better=True)
    assert v.baseline_spread == (98.0, 103.0)
    assert v.baseline_iqr == pytest.approx(101.0 - 99.5)
    assert v.n_baseline == v.n_candidate == 5
    assert v.min_attainable_p == pytest.approx(2 / 252)
    assert stats.Verdict.model_validate_json(v.model_dump_json()) == v


def test_stricter_alpha_needs_more_repeats() -> None:
    v = stats.compare_samples(BASE[:4], SHIFTED[:4], higher_is_better=True, alpha=0.01)
    assert not v.testable and "--repeats 5" in words.note(v)


def test_selected_order_statistics_equal_the_sorted_ones() -> None:
    """The ratio CI of large groups selects its bounds instead of sorting n_a * n_b ratios."""
    import math
    import random

    from orchestrator.verdict.stats import kth_difference

    rng = random.Random(3)
    for n_a, n_b in ((1, 1), (3, 7), (60, 90), (200, 200)):
        la = sorted(rng.gauss(0, 1) for _ in range(n_a))
        lb = sorted(rng.choice((0.5, 1.0, rng.gauss(0, 1))) for _ in range(n_b))  # with ties
        diffs = sorted(y - x for x in la for y in lb)
        for k in {1, 2, len(diffs) // 3, len(diffs) // 2, len(diffs)} & set(
            range(1, len(diffs) + 1)
        ):
            assert math.isclose(kth_difference(la, lb, k), diffs[k - 1], abs_tol=1e-12)
    a = [rng.lognormvariate(0, 0.1) for _ in range(150)]
    b = [rng.lognormvariate(0.05, 0.1) for _ in range(150)]
    low, high = stats.ratio_ci(a, b) or (0, 0)
    logs = sorted(math.log(y) - math.log(x) for x in a for y in b)
    k = stats._cut(len(a), len(b), 0.05)
    assert math.isclose(low, math.exp(logs[k - 1])) and math.isclose(high, math.exp(logs[-k]))
