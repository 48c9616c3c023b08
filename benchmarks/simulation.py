"""Simulated benchmark runs, and how often each decision rule fires on them.

The data: per-run times (seconds, lower is better) of a baseline and a candidate, run in
the order `bench` runs them (ABBA ABBA…, `verdict.paired.baseline_first`), or blocked
(all baseline runs, then all candidate runs: a baseline stored earlier). Noise is
multiplicative (log-normal with the given coefficient of variation); a scenario may add a
drift (each run slower than the one before by a factor), slow runs (with some
probability a run is slower by a factor) or a busy host: bursts of contention (a compile
beside the run) that slow the runs they hit by a random large factor, 1.2–2.5× per burst
(±5 % run to run), and flag them as `runs.hostinfo.NoiseSampler` would. With several
categories, a run's noise is shared between them (correlation `RHO`: a slow run slows
everything), and drift and slow runs hit the whole run. The candidate's first category
is faster by `effect`.

Every rule is the tool's own function (`compare_pairs`, `compare_samples`,
`category_verdicts`, `RepeatPlan` with its settled verdicts, `busy.screen_pairs`) or a
reference rule from `reference_rules`; a trial "fires" when the rule's report shows a
change (a 🚀/🐢 marker, asv's +/−, LNT's IMPROVED/REGRESSED). Deterministic: every cell
seeds its own generator.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from benchmarks import reference_rules
from orchestrator.verdict.busy import no_verdict, screen_pairs
from orchestrator.verdict.compare import category_verdicts
from orchestrator.verdict.model import Direction, Verdict
from orchestrator.verdict.paired import (
    AUTO_FIRST,
    AUTO_MOST,
    RepeatPlan,
    baseline_first,
    compare_pairs,
    repeat_plan,
)
from orchestrator.verdict.stats import compare_samples

THRESHOLD, ALPHA = 2.0, 0.05
#: `--repeats auto`, the default: settled verdicts from 4 pairs, the width rule from 6.
AUTO = repeat_plan("auto")
#: The rule before: the width rule alone, first look at 6 pairs.
WIDTH_ONLY = RepeatPlan(AUTO_FIRST, AUTO_MOST)
#: What the strict interim level prevents: the settled marker at alpha at every look.
NAIVE = replace(AUTO, interim=ALPHA)
#: The rules `SequentialCell` compares on the same data, by name ("10 pairs": the plain
#: t test at the most pairs, the reference whose size is alpha).
SEQUENTIAL_RULES = {
    "before": WIDTH_ONLY,
    "10 pairs": RepeatPlan(AUTO_MOST, AUTO_MOST),
    "sequential": AUTO,
    "naive": NAIVE,
}
#: Correlation of the categories' noise within one run.
RHO = 0.5
CATEGORIES = 7

Outcome = reference_rules.Outcome
Rule = Callable[[Sequence[float], Sequence[float]], Outcome]
ManyRule = Callable[[list[list[float]], list[list[float]]], list[Outcome]]


@dataclass(frozen=True)
class Scenario:
    name: str
    drift: float = 0.0  # each run slower than the one before by this factor
    slow_p: float = 0.0  # probability that a run is slow …
    slow_factor: float = 1.3  # … by this factor
    blocked: bool = False  # all baseline runs first (a stored baseline), then the candidate
    busy_p: float = 0.0  # share of runs hit by contention, in bursts …
    busy_slow: tuple[float, float] = (1.2, 2.5)  # … a burst's runs slower by U(low, high) ±5%
    burst_stay: float = 0.6  # P(the next run is hit too | this one is): bursts of 2.5 runs


CLEAN = Scenario("clean")
DRIFT = Scenario("drift 0.5%/run", drift=0.005)
SLOW_RUNS = Scenario("10% slow runs (×1.3)", slow_p=0.10)
STORED = Scenario("stored baseline, drift 0.5%/run", drift=0.005, blocked=True)
SCENARIOS = (CLEAN, DRIFT, SLOW_RUNS)
#: A busy host: contention in 10, 20 and 30 % of runs.
BUSY = tuple(Scenario(f"busy {p:.0%} of runs", busy_p=p) for p in (0.1, 0.2, 0.3))


def simulate(
    rng: random.Random, pairs: int, cv: float, effect: float, scenario: Scenario, k: int = 1
) -> tuple[list[list[float]], list[list[float]]]:
    """(baseline, candidate): per side, one list per category of `pairs` run times."""
    base, cand, _ = simulate_flagged(rng, pairs, cv, effect, scenario, k)
    return base, cand


def simulate_flagged(
    rng: random.Random, pairs: int, cv: float, effect: float, scenario: Scenario, k: int = 1
) -> tuple[list[list[float]], list[list[float]], list[bool]]:
    """`simulate`, and per pair whether a run of it was hit by contention (flagged)."""
    sigma = math.sqrt(math.log1p(cv * cv))
    shared = sigma * math.sqrt(RHO) if k > 1 else sigma
    own = sigma * math.sqrt(1 - RHO) if k > 1 else 0.0
    base: list[list[float]] = [[] for _ in range(k)]
    cand: list[list[float]] = [[] for _ in range(k)]
    flags: list[bool] = []
    # Bursts: a two-state chain over runs whose stationary share of busy runs is busy_p.
    stay = scenario.burst_stay
    start = scenario.busy_p * (1 - stay) / (1 - scenario.busy_p) if scenario.busy_p else 0.0
    busy = scenario.busy_p > 0 and rng.random() < scenario.busy_p
    level = rng.uniform(*scenario.busy_slow) if busy else 1.0  # one compile: one slowdown
    for pair in range(1, pairs + 1):
        if scenario.blocked:
            slots = [(True, pair - 1), (False, pairs + pair - 1)]
        else:
            first = 2 * (pair - 1)
            slots = [(baseline_first(pair), first), (not baseline_first(pair), first + 1)]
        hit = False
        for is_base, position in slots:
            run = math.exp(rng.gauss(0.0, shared)) * (1 + scenario.drift) ** position
            if scenario.slow_p and rng.random() < scenario.slow_p:
                run *= scenario.slow_factor
            if scenario.busy_p:
                if busy:
                    run *= level * rng.uniform(0.95, 1.05)
                    hit = True
                was, busy = busy, rng.random() < (stay if busy else start)
                if busy and not was:
                    level = rng.uniform(*scenario.busy_slow)
            for c in range(k):
                value = run * (math.exp(rng.gauss(0.0, own)) if own else 1.0)
                if is_base:
                    base[c].append(value)
                else:
                    cand[c].append(value * (1 - effect if c == 0 else 1.0))
        flags.append(hit)
    return base, cand, flags


def _outcome(v: Verdict) -> Outcome:
    if v.direction is Direction.NONE:
        return None
    return "faster" if v.direction is Direction.FASTER else "slower"


def bench_rule(base: Sequence[float], cand: Sequence[float]) -> Outcome:
    """`bench`'s verdict: the paired t test on log ratios, marker beyond the threshold."""
    return _outcome(
        compare_pairs(base, cand, higher_is_better=False, threshold_pct=THRESHOLD, alpha=ALPHA)
    )


def busy_rule(base: Sequence[float], cand: Sequence[float], flags: Sequence[bool]) -> Outcome:
    """`bench` (and `compare`) on a busy host: pairs with a flagged run left out, and no
    verdict with too few clean pairs (`verdict.busy`)."""
    screen = screen_pairs(flags)
    if screen.too_busy:
        v = compare_pairs(base, cand, higher_is_better=False, threshold_pct=THRESHOLD, alpha=ALPHA)
        return _outcome(no_verdict(v, screen.too_busy))
    return bench_rule([base[i] for i in screen.kept], [cand[i] for i in screen.kept])


def compare_rule(base: Sequence[float], cand: Sequence[float]) -> Outcome:
    """`compare` of two arbitrary groups: exact Mann–Whitney and the ratio interval."""
    return _outcome(
        compare_samples(base, cand, higher_is_better=False, threshold_pct=THRESHOLD, alpha=ALPHA)
    )


def asv_rule(base: Sequence[float], cand: Sequence[float]) -> Outcome:
    return reference_rules.asv_rule(base, cand, factor=1 + THRESHOLD / 100)


RULES: dict[str, Rule] = {
    "bench (paired t)": bench_rule,
    "compare (Mann–Whitney)": compare_rule,
    f"asv (factor {1 + THRESHOLD / 100:g})": asv_rule,
    "LNT": reference_rules.lnt_rule,
}


def _ours_many(paired: bool) -> ManyRule:
    def rule(base: list[list[float]], cand: list[list[float]]) -> list[Outcome]:
        names = [f"c{i}" for i in range(len(base))]
        verdicts = category_verdicts(
            dict(zip(names, base, strict=True)), dict(zip(names, cand, strict=True)),
            paired=paired, threshold_pct=THRESHOLD, alpha=ALPHA,
        )  # fmt: skip
        return [_outcome(verdicts[n]) if n in verdicts else None for n in names]

    return rule


def _each(rule: Rule) -> ManyRule:
    def many(base: list[list[float]], cand: list[list[float]]) -> list[Outcome]:
        return [rule(b, c) for b, c in zip(base, cand, strict=True)]

    return many


MANY_RULES: dict[str, ManyRule] = {
    "bench (paired t, BH)": _ours_many(True),
    "compare (Mann–Whitney, BH)": _ours_many(False),
    "asv (each category)": _each(asv_rule),
    "LNT (each category)": _each(reference_rules.lnt_rule),
}


def fires(outcome: Outcome, effect: float) -> bool:
    """A/A: any change shown. Otherwise: the right change (faster) shown."""
    return outcome is not None if effect == 0 else outcome == "faster"


def seed_of(*parts: object) -> int:
    """A seed from a cell's fields: the same cell draws the same data in every process."""
    return sum((i + 1) * ord(ch) for i, ch in enumerate(repr(parts))) + 7919 * len(repr(parts))


@dataclass(frozen=True)
class Cell:
    """One simulated condition of a single metric: every rule on the same `trials` data sets."""

    scenario: Scenario
    cv: float
    effect: float
    pairs: int
    trials: int
    rules: tuple[str, ...] = tuple(RULES)

    def run(self) -> dict[str, float]:
        """Share of trials in which each rule fired."""
        rng = random.Random(seed_of(self))
        hits = dict.fromkeys(self.rules, 0)
        for _ in range(self.trials):
            base, cand = simulate(rng, self.pairs, self.cv, self.effect, self.scenario)
            for name in self.rules:
                hits[name] += fires(RULES[name](base[0], cand[0]), self.effect)
        return {name: count / self.trials for name, count in hits.items()}


@dataclass(frozen=True)
class ReportCell:
    """The 7-category report: A/A fires when any category shows a change; else category 0."""

    scenario: Scenario
    cv: float
    effect: float
    pairs: int
    trials: int

    def run(self) -> dict[str, float]:
        rng = random.Random(seed_of(self))
        hits = dict.fromkeys(MANY_RULES, 0)
        for _ in range(self.trials):
            base, cand = simulate(rng, self.pairs, self.cv, self.effect, self.scenario, CATEGORIES)
            for name, rule in MANY_RULES.items():
                outcomes = rule(base, cand)
                if self.effect == 0:
                    hits[name] += any(o is not None for o in outcomes)
                else:
                    hits[name] += outcomes[0] == "faster"
        return {name: count / self.trials for name, count in hits.items()}


@dataclass(frozen=True)
class AutoCell:
    """`--repeats auto`: pairs added by `RepeatPlan` until precise enough; the verdict then."""

    scenario: Scenario
    cv: float
    effect: float
    trials: int
    plan: RepeatPlan = AUTO

    def run(self) -> dict[str, float]:
        rng = random.Random(seed_of(self))
        hits, pairs_used = 0, 0
        for _ in range(self.trials):
            base, cand = simulate(rng, self.plan.most, self.cv, self.effect, self.scenario)
            n = pairs_run(self.plan, base[0], cand[0])
            hits += fires(bench_rule(base[0][:n], cand[0][:n]), self.effect)
            pairs_used += n
        return {"fires": hits / self.trials, "pairs": pairs_used / self.trials}


def pairs_run(plan: RepeatPlan, base: Sequence[float], cand: Sequence[float]) -> int:
    """How many of the pairs `plan` runs before it stops."""
    n = 0
    while more := plan.more(base[:n], cand[:n], threshold_pct=THRESHOLD, alpha=ALPHA):
        n += more
    return n


@dataclass(frozen=True)
class SequentialCell:
    """`--repeats auto` before (the width rule alone) and now (settled verdicts from 4
    pairs), the plain t test at 10 pairs and the naive rule (the settled marker at alpha
    at every look), on the same data sets: the share with a marker, the pairs run, and
    the share with a marker that the rule before did not give on the same data ("extra")."""

    scenario: Scenario
    cv: float
    effect: float
    trials: int

    def run(self) -> dict[str, float]:
        rng = random.Random(seed_of(self))
        got = dict.fromkeys(
            (f"{r} {what}" for r in SEQUENTIAL_RULES for what in ("fires", "pairs", "extra")),
            0.0,
        )
        for _ in range(self.trials):
            base, cand = simulate(rng, AUTO_MOST, self.cv, self.effect, self.scenario)
            before = False
            for name, plan in SEQUENTIAL_RULES.items():
                n = pairs_run(plan, base[0], cand[0])
                fired = fires(bench_rule(base[0][:n], cand[0][:n]), self.effect)
                before = fired if name == "before" else before
                got[f"{name} fires"] += fired
                got[f"{name} pairs"] += n
                got[f"{name} extra"] += fired and not before
        return {key: value / self.trials for key, value in got.items()}


@dataclass(frozen=True)
class DetectableCell:
    """Is "could have detected ±X %" honest? X from A/A trials (its median), then the share
    of trials with a true change of X that get the marker (🚀: significant *and* beyond
    the threshold), through `compare_pairs` (paired) or `compare_samples` (unpaired)."""

    cv: float
    pairs: int
    trials: int
    paired: bool = True

    def run(self) -> dict[str, float]:
        rng = random.Random(seed_of(self))
        judge = compare_pairs if self.paired else compare_samples
        stated = []
        for _ in range(self.trials):
            base, cand = simulate(rng, self.pairs, self.cv, 0.0, CLEAN)
            v = judge(base[0], cand[0], higher_is_better=False, threshold_pct=THRESHOLD,
                      alpha=ALPHA)  # fmt: skip
            stated.append(v.mdc_pct if v.mdc_pct is not None else math.inf)
        mdc = sorted(stated)[len(stated) // 2]
        if not math.isfinite(mdc):
            return {"mdc": mdc, "power": math.nan}
        effect = 1 - 1 / (1 + mdc / 100)  # a time ratio of 1 / (1 + mdc)
        found = 0
        for _ in range(self.trials):
            base, cand = simulate(rng, self.pairs, self.cv, effect, CLEAN)
            v = judge(base[0], cand[0], higher_is_better=False, threshold_pct=THRESHOLD,
                      alpha=ALPHA)  # fmt: skip
            found += v.direction is Direction.FASTER
        return {"mdc": mdc, "power": found / self.trials}


@dataclass(frozen=True)
class BusyCell:
    """`bench` on a busy host: flagged pairs measured again within the budget
    (`RepeatPlan.more_clean`), then judged without them (`busy_rule`); beside it the
    verdict that ignores the flags, on the same pairs."""

    scenario: Scenario
    cv: float
    effect: float
    plan: RepeatPlan
    trials: int

    def run(self) -> dict[str, float]:
        rng = random.Random(seed_of(self))
        fired = ignored = busy = pairs_run = 0
        for _ in range(self.trials):
            base, cand, flags = simulate_flagged(
                rng, 2 * self.plan.most, self.cv, self.effect, self.scenario
            )
            b, c, n = base[0], cand[0], 0
            while more := self.plan.more_clean(
                [b[i] for i in range(n) if not flags[i]],
                [c[i] for i in range(n) if not flags[i]],
                ran=n, threshold_pct=THRESHOLD, alpha=ALPHA,
            ):  # fmt: skip
                n += more
            fired += fires(busy_rule(b[:n], c[:n], flags[:n]), self.effect)
            ignored += fires(bench_rule(b[:n], c[:n]), self.effect)
            busy += screen_pairs(flags[:n]).too_busy is not None
            pairs_run += n
        return {
            "fires": fired / self.trials,
            "fires ignoring flags": ignored / self.trials,
            "too busy": busy / self.trials,
            "pairs": pairs_run / self.trials,
        }
