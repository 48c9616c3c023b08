"""Properties of the decision rules on simulated runs (few trials, fixed seeds: deterministic).

The full tables are `nox -s perf` (benchmarks/bench_stats.py, bench_sequential.py); these
check the claims they support: the default rule's false alarms stay near alpha with drift
and slow runs, power grows with pairs, `--repeats auto` stops early only where the verdict
is settled and adds next to no false alarm to the rule before, a stored baseline breaks
every rule, and the flaws of asv's and LNT's rules that docs/measurements.md quotes.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from benchmarks import reference_rules
from benchmarks.simulation import (
    AUTO,
    BUSY,
    CLEAN,
    DRIFT,
    SLOW_RUNS,
    STORED,
    AutoCell,
    BusyCell,
    Cell,
    DetectableCell,
    ReportCell,
    SequentialCell,
    simulate,
    simulate_flagged,
)
from orchestrator.verdict.paired import RepeatPlan

BENCH = "bench (paired t)"
VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "stats_vectors.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("scenario", [CLEAN, DRIFT, SLOW_RUNS], ids=lambda s: s.name)
def test_default_rule_a_a_false_alarms_stay_near_alpha(scenario: Any) -> None:
    for pairs in (3, 6):
        rate = Cell(scenario, 0.05, 0.0, pairs, 600, (BENCH,)).run()[BENCH]
        assert rate <= 0.08, (scenario.name, pairs, rate)  # alpha 0.05 plus 3 sd of 600 trials


def test_power_grows_with_pairs_and_with_the_change() -> None:
    power = {
        (n, e): Cell(CLEAN, 0.02, e, n, 300, (BENCH,)).run()[BENCH]
        for n in (3, 8)
        for e in (0.03, 0.05)
    }
    assert power[3, 0.03] < power[8, 0.03] and power[3, 0.05] < power[8, 0.05]
    assert power[3, 0.03] < power[3, 0.05] and power[8, 0.05] > 0.9


def test_a_stored_baseline_with_drift_cries_wolf_interleaving_does_not() -> None:
    stored = Cell(STORED, 0.02, 0.0, 10, 300, (BENCH,)).run()[BENCH]
    interleaved = Cell(DRIFT, 0.02, 0.0, 10, 300, (BENCH,)).run()[BENCH]
    assert stored > 0.5 and interleaved < 0.1


def test_abba_data_cancel_drift_exactly_without_noise() -> None:
    base, cand = simulate(random.Random(1), 6, 0.0, 0.0, DRIFT)
    assert math.prod(c / b for b, c in zip(base[0], cand[0], strict=True)) == pytest.approx(1)
    base, cand = simulate(random.Random(1), 6, 0.0, 0.0, STORED)
    assert min(cand[0]) > max(base[0])  # blocked: every candidate run drifted further


def test_auto_repeats_stay_honest_and_spend_pairs_only_when_noisy() -> None:
    aa = AutoCell(DRIFT, 0.05, 0.0, 400).run()
    assert aa["fires"] <= 0.08
    quiet, noisy = AutoCell(CLEAN, 0.01, 0.0, 100).run(), AutoCell(CLEAN, 0.10, 0.0, 100).run()
    assert quiet["pairs"] < 7 and noisy["pairs"] == 10


@pytest.mark.parametrize("scenario", [CLEAN, DRIFT, SLOW_RUNS], ids=lambda s: s.name)
def test_settled_verdicts_add_next_to_no_false_alarm_to_the_rule_before(scenario: Any) -> None:
    """CV 10%: no look settles "no marker", so every early stop is a marker, and a naive
    rule (the settled marker at alpha at every look) cries wolf in 9% of A/A benches, 3.5%
    where the rule before would not. The strict interim level (alpha / 50 a look) may add
    at most 0.3% (Bonferroni), and adds 0.0–0.1% in `nox -s perf`."""
    got = SequentialCell(scenario, 0.10, 0.0, 800).run()
    assert got["sequential fires"] <= 0.075, got  # alpha 0.05 plus 3 sd of 800 trials
    assert got["sequential extra"] <= 0.004, got  # 3 of 800: the bound and some luck


def test_settled_verdicts_save_pairs_and_keep_the_power_of_the_rule_before() -> None:
    """Where the noise is small against the threshold (a GPU) "no marker can fire" at 4
    pairs; a large change is settled before the interval is narrow; power is unchanged."""
    quiet = SequentialCell(CLEAN, 0.005, 0.0, 200).run()
    assert quiet["before pairs"] == 6 and quiet["sequential pairs"] < 4.5, quiet
    large = SequentialCell(CLEAN, 0.02, 0.10, 200).run()
    assert large["sequential pairs"] < large["before pairs"] - 1.5, large
    assert large["sequential fires"] == large["before fires"] == 1.0
    power = SequentialCell(CLEAN, 0.05, 0.05, 300).run()
    assert power["sequential fires"] >= power["before fires"] - 0.01, power
    busy = BusyCell(BUSY[2], 0.05, 0.0, AUTO, 500).run()
    assert busy["fires"] <= 0.08, busy  # alpha 0.05 plus 3 sd of 500 trials


def test_a_true_change_of_the_stated_detectable_change_gets_a_marker() -> None:
    """The stated figure is the change that gets a *marker* (significance and the 2%
    threshold) with 80% probability: at CV 1% and 10 pairs the textbook figure was ±1.37%,
    which the threshold alone kept from a marker in 93% of trials."""
    for cv, pairs, low, high in ((0.05, 6, 9.0, 13.0), (0.01, 10, 2.0, 3.0), (0.02, 3, 8, 11)):
        got = DetectableCell(cv, pairs, 300).run()
        assert low < got["mdc"] < high, (cv, pairs, got)
        assert 0.7 <= got["power"] <= 0.9, (cv, pairs, got)  # 80% ± 3 sd of 300 trials
    unpaired = DetectableCell(0.05, 5, 300, paired=False).run()
    assert 0.7 <= unpaired["power"] <= 0.92, unpaired


def test_contention_hits_in_bursts_slows_and_flags_the_runs() -> None:
    busy = BUSY[2]  # 30% of runs
    base, cand, flags = simulate_flagged(random.Random(3), 2000, 0.0, 0.0, busy)
    ratios = [c / b for b, c in zip(base[0], cand[0], strict=True)]
    assert 0.4 < sum(flags) / len(flags) < 0.6  # a pair is hit when either of its runs is
    assert all(r == pytest.approx(1.0) for r, f in zip(ratios, flags, strict=True) if not f)
    # a burst that covers both runs of a pair cancels in its ratio (±5%); one that starts
    # or ends inside a pair does not
    assert sum(abs(math.log(r)) > 0.1 for r in ratios) > 0.2 * len(ratios)
    same = simulate(random.Random(3), 6, 0.05, 0.0, CLEAN)
    assert simulate_flagged(random.Random(3), 6, 0.05, 0.0, CLEAN)[:2] == same


def test_a_busy_host_keeps_a_a_false_alarms_near_alpha() -> None:
    for plan in (RepeatPlan(3, 3), RepeatPlan(6, 6)):
        got = BusyCell(BUSY[2], 0.05, 0.0, plan, 500).run()
        assert got["fires"] <= 0.08, (plan, got)  # alpha 0.05 plus 3 sd of 500 trials
        assert got["pairs"] <= 2 * plan.most and got["pairs"] > plan.first  # re-measured
    assert BusyCell(BUSY[2], 0.05, 0.0, RepeatPlan(3, 3), 500).run()["too busy"] > 0.1


def test_seven_category_report_a_a() -> None:
    ours = ReportCell(SLOW_RUNS, 0.05, 0.0, 5, 200).run()
    assert ours["bench (paired t, BH)"] <= 0.1
    lnt = ReportCell(CLEAN, 0.05, 0.0, 3, 200).run()["LNT (each category)"]
    assert lnt > 0.25  # LNT's rule on 3 runs a side, 7 categories: a change in a third of A/A


def test_asv_gate_cannot_fire_below_seven_runs_a_side() -> None:
    low, high = [1.0 + i / 100 for i in range(6)], [2.0 + i / 100 for i in range(6)]
    assert reference_rules.asv_mann_whitney_p(low, high) == pytest.approx(2 / 924)
    assert not reference_rules.asv_is_different(low, high)  # complete separation, 6 vs 6
    assert reference_rules.asv_is_different([*low, 1.07], [*high, 2.07])
    rate = Cell(CLEAN, 0.05, 0.05, 5, 400, ("asv (factor 1.02)",)).run()["asv (factor 1.02)"]
    assert rate < 0.05  # a true 5% change at CV 5%: the 99% interval check almost never fires


@pytest.mark.parametrize("case", VECTORS["asv_ci_99"], ids=lambda c: f"n{len(c['samples'])}")
def test_asv_reference_interval_matches_asv_runner(case: dict[str, Any]) -> None:
    got = reference_rules.asv_ci_99(case["samples"])
    assert got == pytest.approx(tuple(case["ci_99"]), rel=1e-9)


def test_lnt_mann_whitney_compares_the_u_difference_with_a_table_for_min_u() -> None:
    """LNT calls 5 vs 5 samples "same" only when |U_a - U_b| <= 2: nearly identical."""
    assert reference_rules.lnt_critical_u(5, 5) == 2
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 2.5, 3.5, 4.5, 5.5]
    assert not reference_rules.lnt_same(a, b)  # interleaved samples: U_a = 15, U_b = 10
