"""E-divisive change points (`verdict.changepoints`) and bisect's even number of pairs."""

from __future__ import annotations

import random

import pytest

from orchestrator.verdict.changepoints import _best_split, _q_at, change_points
from orchestrator.workflows.bisect import even_pairs


def _energy(values: list[float], m: int) -> float:
    """Matteson & James' Q at a split, from its definition (every pair, V-statistics)."""
    x, y = values[:m], values[m:]
    cross = sum(abs(a - b) for a in x for b in y) / (len(x) * len(y))
    within_x = sum(abs(a - b) for a in x for b in x) / len(x) ** 2
    within_y = sum(abs(a - b) for a in y for b in y) / len(y) ** 2
    return len(x) * len(y) / len(values) * (2 * cross - within_x - within_y)


def test_the_statistic_is_the_energy_distance_at_every_split() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(0, 0.05) for _ in range(23)]
    q = _q_at(values, list(range(1, 23)))
    assert q == pytest.approx({m: _energy(values, m) for m in range(1, 23)}, rel=1e-9)


def test_a_split_falls_between_commits_only() -> None:
    groups = [[1.0, 1.1, 5.0], [5.1, 5.2]]  # the best split of the values is inside commit 0
    assert _best_split(groups) == (1, pytest.approx(_energy([1.0, 1.1, 5.0, 5.1, 5.2], 3)))
    assert _best_split([[1.0, 2.0], []]) is None


def test_a_planted_step_is_found_where_it_is_and_nowhere_else() -> None:
    rng = random.Random(3)
    groups = [
        [(100 if c < 17 else 95) * rng.lognormvariate(0, 0.03) for _ in range(3)] for c in range(30)
    ]
    assert change_points(groups) == [17]
    same = [[100 * rng.lognormvariate(0, 0.03) for _ in range(3)] for _ in range(30)]
    assert change_points(same) == []
    assert change_points(groups) == change_points(groups)  # fixed seed: the same answer


def test_the_false_alarm_rate_of_a_whole_history_is_alpha() -> None:
    """60 A/A histories of 20 commits: a per-step rule would flag most of them."""
    rng = random.Random(11)
    flagged = sum(
        bool(change_points([[rng.gauss(100, 3) for _ in range(2)] for _ in range(20)]))
        for _ in range(60)
    )
    assert flagged <= 8  # 5% of 60 is 3; P(more than 8 | rate 5%) < 0.002


def test_a_p_value_equal_to_alpha_is_no_change_point() -> None:
    """19 reshuffles: p = (1 + k) / 20 is never below 0.05, so nothing is ever a change point
    at alpha 0.05, not even a step no reshuffle matches (p = 0.05 exactly); a hair above
    0.05, that step is one."""
    step = [
        [100.0 + 0.1 * (c % 3)] * 2 if c < 10 else [150.0 + 0.1 * (c % 3)] * 2 for c in range(20)
    ]
    assert change_points(step, alpha=0.05, permutations=19) == []
    assert change_points(step, alpha=0.0501, permutations=19) == [10]


def test_the_first_test_rejects_an_aa_history_at_its_exact_rate() -> None:
    """Under no change the runs are exchangeable, so p = (1 + k) / 20 with 19 reshuffles is
    uniform on 1/20 … 20/20: at alpha 0.1 only p = 0.05 rejects, 5 % of A/A histories (10 %
    if p = alpha counted). 4,000 seeded histories: 5 % ± 0.34 % (1 sd)."""
    rng = random.Random(13)
    histories = ([[rng.gauss(100, 3) for _ in range(2)] for _ in range(10)] for _ in range(4000))
    flagged = sum(bool(change_points(h, alpha=0.1, permutations=19)) for h in histories)
    assert 0.038 <= flagged / 4000 <= 0.062, flagged


def test_bisect_runs_an_even_number_of_pairs() -> None:
    assert [even_pairs(n) for n in (1, 5, 6, 7)] == [2, 6, 6, 8]
    assert even_pairs("auto") == "auto" and even_pairs("auto:7") == "auto:8"
    assert even_pairs("auto:10") == "auto:10"
