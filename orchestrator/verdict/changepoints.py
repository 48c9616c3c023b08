"""Change points of a history: E-divisive means with a permutation test, on every run.

Matteson & James' E-divisive (J. Am. Stat. Assoc. 109:334, 2014), as Apache Otava (Hunter)
uses it: the split of a series into two segments that maximises the energy statistic

    Q = m·n/(m+n) · (2·mean|x−y| − mean|x−x'| − mean|y−y'|)

(x the m runs before the split, y the n after; any difference in distribution, not only
in the mean, makes it grow) is a change point when a permutation test says so; then each
side is split again the same way, until a test says no.

Calibrated: a split may fall only between commits, the statistic reads each commit's runs
(not one median per commit), and its p-value is the fraction of `permutations` reshuffles
of the segment's runs over the same commit sizes whose best split is at least as strong.
Under no change the runs are exchangeable, so the first test rejects with probability
below `alpha` whatever the noise's distribution (the permutation p-value is exact: 9/200
= 4.5% at the defaults), and every further change point needs the first: the chance that
a whole history with no change shows any change point is below `alpha`, however many
commits it has. The reshuffles are drawn from a fixed seed, so the same runs always give
the same change points.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from itertools import accumulate
from operator import sub

from orchestrator.verdict.defaults import ALPHA

#: Reshuffles per test: p-values down to 1/(PERMUTATIONS + 1) = 0.005.
PERMUTATIONS = 199
SEED = 20140301


def change_points(
    groups: Sequence[Sequence[float]], alpha: float = ALPHA, permutations: int = PERMUTATIONS
) -> list[int]:
    """Indices i (1 ≤ i < len(groups)) where group i starts a new segment, ascending.

    `groups` are the runs of each commit in order; empty groups are never split at.
    """
    if not 0 < alpha < 1 or permutations < 1:
        raise ValueError("change_points: need 0 < alpha < 1 and permutations >= 1")
    rng = random.Random(SEED)
    found: list[int] = []
    todo = [(0, len(groups))]
    while todo:
        lo, hi = todo.pop()
        segment = groups[lo:hi]
        best = _best_split(segment)
        if best is None:
            continue
        at, q = best
        if _significant(segment, q, alpha, permutations, rng):
            found.append(lo + at)
            todo += [(lo, lo + at), (lo + at, hi)]
    return sorted(found)


def _best_split(groups: Sequence[Sequence[float]]) -> tuple[int, float] | None:
    """(group index, Q) of the strongest split between groups; None with < 2 non-empty."""
    values = [v for g in groups for v in g]
    ends = list(accumulate(len(g) for g in groups))
    cuts = {end: i + 1 for i, end in enumerate(ends[:-1]) if 0 < end < len(values)}
    if not cuts:
        return None
    stats = _q_at(values, sorted(cuts))
    end, q = max(stats.items(), key=lambda kv: (kv[1], -kv[0]))
    return cuts[end], q


def _q_at(values: Sequence[float], cuts: Sequence[int]) -> dict[int, float]:
    """Q for each cut (the number of values before it), in O(n²/2) C-level steps."""
    n = len(values)
    # left[i] = Σ_{j<i} |v_i − v_j|; rows[i] = Σ_j |v_i − v_j|
    left = [sum(map(abs, map(sub, values[:i], [v] * i))) for i, v in enumerate(values)]
    rows = _row_sums(values)
    total = sum(left)
    wanted, out = set(cuts), {}
    within_a = rows_a = 0.0
    for m in range(1, n):
        within_a += left[m - 1]
        rows_a += rows[m - 1]
        if m not in wanted:
            continue
        k = n - m
        cross = rows_a - 2 * within_a
        within_b = total - within_a - cross
        energy = 2 * cross / (m * k) - 2 * within_a / (m * m) - 2 * within_b / (k * k)
        out[m] = m * k / n * energy
    return out


def _row_sums(values: Sequence[float]) -> list[float]:
    """Σ_j |v_i − v_j| for every i, from the sorted values and their prefix sums."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranked = [values[i] for i in order]
    prefix = [0.0, *accumulate(ranked)]
    n, whole = len(ranked), prefix[-1]
    rows = [0.0] * n
    for k, i in enumerate(order):
        v = ranked[k]
        rows[i] = v * k - prefix[k] + (whole - prefix[k + 1]) - v * (n - k - 1)
    return rows


def _significant(
    groups: Sequence[Sequence[float]], observed: float, alpha: float, permutations: int,
    rng: random.Random,
) -> bool:  # fmt: skip
    """Whether p = (1 + reshuffles splitting at least as well) / (1 + permutations) < alpha
    (strictly, as `compare`'s rule), reshuffling the runs over the same commit sizes; it
    stops once the answer is known."""
    values = [v for g in groups for v in g]
    sizes = [len(g) for g in groups]
    allowed = math.ceil(alpha * (1 + permutations) - 1e-9) - 2  # the most that may reach it
    at_least = 0
    for _ in range(permutations):
        rng.shuffle(values)
        shuffled, start = [], 0
        for size in sizes:
            shuffled.append(values[start : start + size])
            start += size
        best = _best_split(shuffled)
        at_least += best is not None and best[1] >= observed * (1 - 1e-12)
        if at_least > allowed:
            return False
    return True
