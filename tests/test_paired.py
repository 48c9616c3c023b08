"""The paired design of `bench`: Student's t against scipy, verdicts, ABBA order, --repeats."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.report import words
from orchestrator.report.repeats import look_text, plan_text
from orchestrator.verdict import paired, student
from orchestrator.verdict.paired import RepeatPlan, compare_pairs, repeat_plan
from orchestrator.verdict.sequential import AUTO_EARLY, interim_alpha, settle

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "stats_vectors.json").read_text(encoding="utf-8")
)
PPF = [row for row in VECTORS["t"] if "ppf" in row]
SF2 = [row for row in VECTORS["t"] if "sf2" in row]


@pytest.mark.parametrize("row", PPF, ids=[f"df{r['df']}-q{r['q']}" for r in PPF])
def test_t_quantiles_match_scipy(row: dict[str, float]) -> None:
    assert student.t_ppf(row["q"], row["df"]) == pytest.approx(row["ppf"], rel=1e-9)
    assert student.t_ppf(1 - row["q"], row["df"]) == pytest.approx(-row["ppf"], rel=1e-9)


@pytest.mark.parametrize("row", SF2, ids=[f"df{r['df']}-t{r['t']}" for r in SF2])
def test_t_tails_match_scipy(row: dict[str, float]) -> None:
    assert student.t_sf2(row["t"], row["df"]) == pytest.approx(row["sf2"], rel=1e-9, abs=1e-300)
    assert student.t_cdf(-row["t"], row["df"]) == pytest.approx(row["sf2"] / 2, rel=1e-9)


@pytest.mark.parametrize("case", VECTORS["paired_t"], ids=[c["name"] for c in VECTORS["paired_t"]])
def test_paired_t_matches_scipy(case: dict[str, Any]) -> None:
    v = compare_pairs(case["a"], case["b"], higher_is_better=True)
    assert v.paired and v.test_method == "paired-t"
    assert v.p_value == pytest.approx(case["p"], rel=1e-9)
    assert (v.ci_low, v.ci_high) == pytest.approx(tuple(case["ci"]), rel=1e-9)
    assert v.significant is (case["p"] < 0.05)
    assert v.significant is not (v.ci_low is not None and v.ci_low <= 1 <= (v.ci_high or 0))


def test_a_clear_change_fires_from_few_pairs() -> None:
    base = [10.0, 10.3, 9.9, 10.2]
    shifts = [0.951, 0.949, 0.9505, 0.9495]
    v = compare_pairs(base, [b * f for b, f in zip(base, shifts, strict=True)],
                      higher_is_better=False)  # fmt: skip
    assert v.significant and words.marker(v) == "🚀" and v.improved is True
    assert v.delta_pct == pytest.approx(-5.0, abs=0.01)
    assert v.delta_abs == pytest.approx(v.baseline_median * v.delta_pct / 100)
    assert words.note(v).startswith("faster by 5.0% (p < 0.001")


def independent_marker_change(
    se_test: float, se_est: float, df: int, q: float, limit: float, power: float
) -> float:
    """The log change whose marker probability is `power`, by another route than
    `verdict.detectable`: a midpoint sum over the chi-square variable x = df * U^2 with its
    normalised density from lgamma, and plain bisection on the change."""
    top, steps = df + 40 * math.sqrt(df) + 60, 20000
    h = top / steps
    xs = [(i + 0.5) * h for i in range(steps)]
    log_norm = -(df / 2) * math.log(2) - math.lgamma(df / 2)
    ws = [math.exp(log_norm + (df / 2 - 1) * math.log(x) - x / 2) * h for x in xs]
    norm = NormalDist()

    def p_marker(mu: float) -> float:
        return sum(w * norm.cdf((mu - max(limit, q * se_test * math.sqrt(x / df))) / se_est)
                   for x, w in zip(xs, ws, strict=True))  # fmt: skip

    lo, hi = 0.0, 1.0
    while hi - lo > 1e-10:
        lo, hi = ((lo + hi) / 2, hi) if p_marker((lo + hi) / 2) < power else (lo, (lo + hi) / 2)
    return (lo + hi) / 2


def independent_typical_sd(sd: float, df: int) -> float:
    """sd / median(sqrt(chi2_df / df)), the median from a trapezoid sum of the density."""
    steps, top = 200000, df + 40 * math.sqrt(df) + 60
    h, log_norm = top / steps, -(df / 2) * math.log(2) - math.lgamma(df / 2)
    cum, prev = 0.0, 0.0 if df > 2 else math.exp(log_norm)
    for i in range(1, steps + 1):
        x = i * h
        now = math.exp(log_norm + (df / 2 - 1) * math.log(x) - x / 2)
        if cum + (prev + now) * h / 2 >= 0.5:  # the median lies in this step: interpolate
            x -= h * (cum + (prev + now) * h / 2 - 0.5) / ((prev + now) * h / 2)
            return sd / math.sqrt(x / df)
        cum, prev = cum + (prev + now) * h / 2, now
    raise AssertionError("no median")


def test_no_change_says_the_change_that_would_have_got_a_marker() -> None:
    base = [100.0, 102.0, 99.0, 101.0, 100.5, 98.5]
    cand = [101.0, 100.0, 100.0, 102.0, 99.0, 99.5]
    v = compare_pairs(base, cand, higher_is_better=True)
    assert not v.significant and words.marker(v) == "•"
    d = paired.log_ratios(base, cand)
    se = math.sqrt(sum((x - sum(d) / 6) ** 2 for x in d) / 5) / 6**0.5
    typical = independent_typical_sd(se, 5)
    q = student.t_ppf(0.975, 5)
    shift = independent_marker_change(typical, typical, 5, q, -math.log(0.98), 0.8)
    expected = 100 * math.expm1(shift)
    assert v.mdc_pct == pytest.approx(expected, rel=1e-3)
    textbook = 100 * math.expm1((student.t_ppf(0.975, 5) + student.t_ppf(0.8, 5)) * se)
    assert v.mdc_pct > textbook  # the threshold costs power the textbook figure ignores
    assert (f"6 pairs could have detected ±{v.mdc_pct:.1f}% (a marker with 80% probability: "
            "p < 0.05 and beyond ±2%)") in words.note(v)  # fmt: skip


def test_the_stated_change_is_never_below_the_threshold() -> None:
    """At CV 1% and 10 pairs the textbook figure is ±1.37%, which the 2% rule cannot mark."""
    base = [100.0 + i for i in range(10)]
    cand = [b * (1 + 0.01 * (-1) ** i) for i, b in enumerate(base)]
    v = compare_pairs(base, cand, higher_is_better=True)
    assert v.mdc_pct is not None and v.mdc_pct > 2.0


def test_single_pair_and_bad_input() -> None:
    v = compare_pairs([10.0], [9.0], higher_is_better=False)
    assert not v.testable and v.p_value is None and v.mdc_pct is None
    assert "single pair" in words.note(v) and v.delta_pct == pytest.approx(-10.0)
    with pytest.raises(ValueError, match="same number"):
        compare_pairs([1.0, 2.0], [1.0], higher_is_better=True)
    with pytest.raises(ValueError, match="positive"):
        compare_pairs([1.0, 0.0], [1.0, 2.0], higher_is_better=True)


def test_two_pairs_show_the_change_but_give_no_marker() -> None:
    v = compare_pairs([10.0, 10.2], [5.0, 5.3], higher_is_better=False)
    assert v.p_value is not None and v.p_value < 0.05  # significant by the t test alone
    assert not v.testable and not v.significant and words.marker(v) == "•" and v.mdc_pct is None
    assert "from 2 pairs: too few for a verdict (a marker needs 3 pairs or more)" in words.note(v)
    three = compare_pairs([10.0, 10.2, 9.9], [5.0, 5.3, 5.1], higher_is_better=False)
    assert three.testable and words.marker(three) == "🚀"


def test_zero_spread_is_untestable_not_p_zero() -> None:
    """The same ratio in every pair (here 1.1, whose logs differ by rounding only): no p."""
    v = compare_pairs([10.0, 20.0, 30.0], [11.0, 22.0, 33.0], higher_is_better=True)
    assert v.p_value is None and not v.testable and not v.significant and words.marker(v) == "•"
    assert v.ci_low is None and v.mdc_pct is None and v.delta_pct == pytest.approx(10.0)
    assert "no spread observed" in words.note(v) and "untestable" in words.note(v)
    same = compare_pairs([3.0, 3.0, 3.0], [3.0, 3.0, 3.0], higher_is_better=False)
    assert same.p_value is None and words.marker(same) == "•" and "untestable" in words.note(same)
    # Every candidate 5% above its baseline, rounded to 6 digits: log ratios that differ by
    # floating-point rounding only (sd 1e-16), which an exact zero test would call p = 0.
    base = [145.603, 144.783, 55.655, 58.487]
    cand = [152.88315, 152.02215, 58.43775, 61.41135]
    assert 0 < paired.paired_t(paired.log_ratios(base, cand)).sd < 1e-15
    rounded = compare_pairs(base, cand, higher_is_better=False)
    assert (
        rounded.p_value is None
        and words.marker(rounded) == "•"
        and "untestable" in words.note(rounded)
    )


def test_abba_order_cancels_a_linear_drift() -> None:
    """Noise-free A/A with each run 0.5% slower than the last: every even number of pairs
    gives a ratio of exactly 1, which a blocked order (all A, then all B) does not."""
    for pairs in (2, 4, 6, 8, 10):
        seq, base, cand = 0, [], []
        for pair in range(1, pairs + 1):
            for is_base in (True, False) if paired.baseline_first(pair) else (False, True):
                (base if is_base else cand).append(1.005**seq)
                seq += 1
        assert math.prod(c / b for b, c in zip(base, cand, strict=True)) == pytest.approx(1.0)
        blocked = [1.005 ** (pairs + i) / 1.005**i for i in range(pairs)]
        assert math.prod(blocked) > 1.005**pairs


def test_repeat_plan_parsing() -> None:
    assert repeat_plan(6) == RepeatPlan(6, 6) and not repeat_plan("6").adaptive
    auto = repeat_plan("auto")
    assert auto == RepeatPlan(paired.AUTO_FIRST, paired.AUTO_MOST, early=AUTO_EARLY)
    assert auto.adaptive and auto.start == AUTO_EARLY
    assert repeat_plan("auto:20").most == 20
    for bad in ("0", "-1", "many", "auto:2", "auto:x", 0):
        with pytest.raises(UsageError, match="--repeats"):
            repeat_plan(bad)


def test_auto_adds_pairs_until_the_interval_is_narrow_enough() -> None:
    plan = RepeatPlan(4, 10)
    assert plan.more([], [], threshold_pct=2, alpha=0.05) == 4
    quiet = [100.0, 100.1, 99.9, 100.05]
    assert plan.more(quiet, quiet[::-1], threshold_pct=2, alpha=0.05) == 0  # ±0.2%: stop
    noisy_b, noisy_c = [100.0, 110.0, 95.0, 104.0], [104.0, 98.0, 107.0, 96.0]
    assert paired.ci_halfwidth_pct(noisy_b, noisy_c, alpha=0.05) > 2
    assert plan.more(noisy_b, noisy_c, threshold_pct=2, alpha=0.05) == 2
    ten_b, ten_c = noisy_b * 2 + [100.0, 101.0], noisy_c * 2 + [99.0, 104.0]
    assert plan.more(ten_b, ten_c, threshold_pct=2, alpha=0.05) == 0  # the most: stop
    assert RepeatPlan(3, 3).more(quiet[:3], quiet[:3], threshold_pct=2, alpha=0.05) == 0


def _pairs(ratios: list[float]) -> tuple[list[float], list[float]]:
    return [100.0] * len(ratios), [100.0 * r for r in ratios]


def test_auto_stops_at_four_pairs_once_no_marker_can_fire() -> None:
    """The 95% interval within ±2%: said with the interval, and the verdict has no marker."""
    base, cand = _pairs([1.001, 0.999, 1.002, 0.9985])
    look = repeat_plan("auto").look(base, cand, threshold_pct=2, alpha=0.05)
    assert look.more == 0 and look.stop is not None and not look.stop.marker
    assert look_text(look) and "lies within ±2%: no marker can fire" in str(look_text(look)), look
    assert words.marker(compare_pairs(base, cand, higher_is_better=True)) == "•"
    before = RepeatPlan(paired.AUTO_FIRST, paired.AUTO_MOST)  # the width rule alone
    assert before.more(base, cand, threshold_pct=2, alpha=0.05) == 2


def test_auto_stops_once_the_marker_is_settled_at_the_strict_level() -> None:
    """Beyond +2% at 99.9%: the marker at alpha is certain; at 95% only, it goes on."""
    base, cand = _pairs([1.10, 1.101, 1.099, 1.1005, 1.0995, 1.1])
    look = repeat_plan("auto").look(base[:4], cand[:4], threshold_pct=2, alpha=0.05)
    assert look.stop is not None and look.stop.marker and look.more == 0, look
    assert "99.9% interval" in str(look_text(look)) and "beyond +2%" in str(look_text(look))
    assert words.marker(compare_pairs(base[:4], cand[:4], higher_is_better=True)) == "🚀"
    loose = [1.05, 1.04, 1.06, 1.045]  # 95% interval 1.035–1.062, 99.9% 0.995–1.105
    d = [math.log(r) for r in loose]
    assert settle(d, threshold_pct=2, alpha=0.05, interim=0.05) is not None  # the naive rule
    assert settle(d, threshold_pct=2, alpha=0.05) is None
    look = repeat_plan("auto").look(*_pairs(loose), threshold_pct=2, alpha=0.05)
    assert look.more == 2 and "interval 1.035–1.062 does not settle" in str(look_text(look)), look
    assert interim_alpha(0.05) == pytest.approx(0.001)


def test_auto_never_stops_where_the_width_rule_would_not_unless_settled() -> None:
    """From 6 pairs the width rule as before; a zero spread settles nothing."""
    auto = repeat_plan("auto")
    same = [100.0] * 4
    assert auto.more(same, same, threshold_pct=2, alpha=0.05) == 2  # no spread: not settled
    base, cand = _pairs([1.001, 0.999, 1.03, 0.97, 1.0, 1.002])
    assert auto.more(base, cand, threshold_pct=2, alpha=0.05) == 2  # ±3%: wider
    assert RepeatPlan(4, 4, early=AUTO_EARLY).more(base[:4], cand[:4], threshold_pct=2,
                                                   alpha=0.05) == 0  # fmt: skip
    assert look_text(auto.look_clean(base, cand, ran=20, threshold_pct=2, alpha=0.05)) is None
    assert plan_text(auto).startswith("4 to 10 interleaved pairs (auto: until the verdict")
