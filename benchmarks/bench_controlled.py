"""Unchanged kernels as the control, on simulated runs: false alarms and power (`nox -s perf`).

Each simulated run times `KERNELS` kernels (median call durations, µs); kernel 0's code
changed, the others are byte-identical in both builds and form the control. Noise is
multiplicative: a per-run factor every kernel shares (correlation `RHO` of the CV, as in
`simulation.py`) and each kernel's own. Runs are in `bench`'s ABBA order. The scenarios add
what the control is for: a linear drift, slow runs, a drift that wanders (a random walk of
the run factor on top of a trend) and bursty contention (some runs slowed by up to ×2, every
kernel alike) — and one where the control's assumption fails: contention that slows each
kernel by its own power of the factor (0.5–1.5), as memory-bound kernels suffer more.

Every trial goes through the product's own function, `controlled.judge`: the controlled
verdict of kernel 0 and its raw verdict (the same paired test without the control; the
kernel table's rule, which also corrects for the other kernels, finds less still). A rule
fires when its marker shows: any marker in A/A, 🚀 when kernel 0 is truly faster. Fixed
seeds: the same table every run.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from benchmarks.simulation import seed_of
from orchestrator.verdict.controlled import against_control
from orchestrator.verdict.model import Direction
from orchestrator.verdict.paired import baseline_first

THRESHOLD, ALPHA = 2.0, 0.05
RHO = 0.5
#: Baseline times of the kernels (kernel 0 changed): the control's time weights.
TIMES = (1.0, 4.0, 2.0, 1.5, 1.0, 0.6, 0.4, 0.2)
KERNELS = len(TIMES)
NAMES = [f"k{i}" for i in range(KERNELS)]
RULES = ("controlled", "raw")
CVS = (0.02, 0.05, 0.10)
EFFECTS = (0.0, 0.03, 0.05)
PAIRS = (3, 5, 10)
AA_TRIALS, TRIALS = 3000, 500


@dataclass(frozen=True)
class Scenario:
    name: str
    drift: float = 0.0  # each run slower than the one before by this factor
    walk: float = 0.0  # sd of the run factor's random step from one run to the next (log)
    burst_p: float = 0.0  # probability that a run is slowed …
    burst_max: float = 2.0  # … by a factor drawn uniformly from 1.2 to this
    unequal: bool = False  # a slowed run slows each kernel by its own power (0.5–1.5)


CLEAN = Scenario("clean")
DRIFT = Scenario("drift 0.5%/run", drift=0.005)
SLOW = Scenario("10% slow runs (×1.3)", burst_p=0.10, burst_max=1.3)
WANDER = Scenario("wandering drift (0.5%/run + walk 2%)", drift=0.005, walk=0.02)
BURSTS = Scenario("bursty contention (25% of runs ×1.2–2)", burst_p=0.25)
UNEQUAL = Scenario("bursts, kernels unequally hit", burst_p=0.25, unequal=True)
SCENARIOS = (CLEAN, DRIFT, SLOW, WANDER, BURSTS, UNEQUAL)


def simulate(
    rng: random.Random, pairs: int, cv: float, effect: float, scenario: Scenario
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(baseline, candidate): per kernel, `pairs` median call durations; kernel 0 of the
    candidate is faster by `effect`."""
    sigma = math.sqrt(math.log1p(cv * cv))
    shared, own = sigma * math.sqrt(RHO), sigma * math.sqrt(1 - RHO)
    power = [rng.uniform(0.5, 1.5) if scenario.unequal else 1.0 for _ in NAMES]
    base: dict[str, list[float]] = {n: [] for n in NAMES}
    cand: dict[str, list[float]] = {n: [] for n in NAMES}
    level = 0.0
    for pair in range(1, pairs + 1):
        order = (True, False) if baseline_first(pair) else (False, True)
        for is_base in order:
            level += rng.gauss(0.0, scenario.walk) if scenario.walk else 0.0
            run = math.exp(rng.gauss(0.0, shared) + level) * (1 + scenario.drift) ** (
                2 * pair - 2 + (is_base != order[0])
            )
            burst = 1.0
            if scenario.burst_p and rng.random() < scenario.burst_p:
                burst = rng.uniform(1.2, scenario.burst_max)
            for k, name in enumerate(NAMES):
                t = TIMES[k] * run * burst ** power[k] * math.exp(rng.gauss(0.0, own))
                if is_base:
                    base[name].append(t)
                else:
                    cand[name].append(t * (1 - effect if k == 0 else 1.0))
    return base, cand


def _fires(direction: Direction, effect: float) -> bool:
    return direction is not Direction.NONE if effect == 0 else direction is Direction.FASTER


@dataclass(frozen=True)
class ControlCell:
    """One condition: the controlled and the raw rule on the same data sets."""

    scenario: Scenario
    cv: float
    effect: float
    pairs: int
    trials: int

    def run(self) -> dict[str, float]:
        """Share of trials in which each rule fired."""
        rng = random.Random(seed_of(self))
        hits = dict.fromkeys(RULES, 0)
        weights = dict(zip(NAMES, TIMES, strict=True))
        for _ in range(self.trials):
            base, cand = simulate(rng, self.pairs, self.cv, self.effect, self.scenario)
            got = against_control(base, cand, ["k0"], NAMES[1:], weights, paired=True,
                                  threshold_pct=THRESHOLD, alpha=ALPHA)["k0"]  # fmt: skip
            assert got.controlled is not None
            hits["controlled"] += _fires(got.controlled.direction, self.effect)
            hits["raw"] += _fires(got.raw.direction, self.effect)
        return {name: count / self.trials for name, count in hits.items()}


def cell(scenario: Scenario, cv: float, effect: float, pairs: int) -> ControlCell:
    return ControlCell(scenario, cv, effect, pairs, AA_TRIALS if effect == 0 else TRIALS)


def jobs() -> list[ControlCell]:
    return [cell(s, cv, e, n) for s in SCENARIOS for cv in CVS for e in EFFECTS for n in PAIRS]


def _run(job: ControlCell) -> dict[str, float]:
    return job.run()


def run_all(cells: Sequence[ControlCell], workers: int) -> dict[ControlCell, dict[str, float]]:
    ordered = sorted(cells, key=lambda c: c.trials * c.pairs, reverse=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return dict(zip(ordered, pool.map(_run, ordered, chunksize=1), strict=True))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def table(res: dict[ControlCell, dict[str, float]]) -> list[dict[str, Any]]:
    """One row per scenario, CV and change: each rule's share at each number of pairs."""
    rows = []
    for s in SCENARIOS:
        for cv in CVS:
            for e in EFFECTS:
                row: dict[str, Any] = {
                    "scenario": s.name, "CV": f"{cv:.0%}",
                    "true change": "none (A/A)" if e == 0 else f"k0 {e:.0%} faster",
                }  # fmt: skip
                for n in PAIRS:
                    got = res[cell(s, cv, e, n)]
                    row[f"n={n} controlled / raw"] = " / ".join(_pct(got[r]) for r in RULES)
                rows.append(row)
    return rows


def headline(res: dict[ControlCell, dict[str, float]]) -> list[str]:
    """The figures to quote: the controlled rule's worst A/A cell, and its power gain."""
    lines = []
    for scenarios, label in (
        (SCENARIOS[:-1], "kernels hit alike"),
        (SCENARIOS[-1:], "kernels hit unequally"),
    ):
        aa = [
            (r["controlled"], j)
            for j, r in res.items()
            if j.effect == 0 and j.scenario in scenarios
        ]
        worst, where = max(aa, key=lambda item: item[0])
        raw_worst = max(
            r["raw"] for j, r in res.items() if j.effect == 0 and j.scenario in scenarios
        )
        margin = 1.96 * math.sqrt(max(worst * (1 - worst), 1e-9) / AA_TRIALS)
        pooled = sum(rate for rate, _ in aa) / len(aa)
        lines.append(
            f"A/A ({label}, CV 2–10%, {PAIRS[0]}–{PAIRS[-1]} pairs): controlled rule "
            f"{_pct(pooled)} pooled over {len(aa) * AA_TRIALS} trials, worst cell "
            f"{_pct(worst)} ± {_pct(margin)} ({where.scenario.name}, CV {where.cv:.0%}, "
            f"{where.pairs} pairs); raw rule's worst {_pct(raw_worst)}"
        )
    for e in EFFECTS[1:]:
        for n in (5, 10):
            parts = []
            for s in (CLEAN, WANDER, BURSTS, UNEQUAL):
                got = res[cell(s, 0.05, e, n)]
                parts.append(f"{s.name}: {_pct(got['controlled'])} vs {_pct(got['raw'])} raw")
            lines.append(f"power, k0 {e:.0%} faster, CV 5%, {n} pairs — " + "; ".join(parts))
    return lines


def main(workers: int | None = None) -> list[tuple[str, list[dict[str, Any]] | list[str]]]:
    """The controlled rule's tables, titled, and how long they took."""
    started = time.monotonic()
    res = run_all(jobs(), workers or os.cpu_count() or 2)
    return [
        ("Unchanged kernels as the control: figures to quote", headline(res)),
        (
            f"Unchanged kernels as the control: share of trials with a marker on the changed "
            f"kernel ({AA_TRIALS} A/A, {TRIALS} otherwise; {KERNELS} kernels, 1 changed; "
            f"threshold 2%, α 0.05; n = interleaved pairs; controlled = against the "
            f"unchanged kernels, raw = the same test without them)",
            table(res),
        ),
        ("Time", [f"{time.monotonic() - started:.0f} s for the controlled-kernel benchmark"]),
    ]
