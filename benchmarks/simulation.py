"""Simulated benchmark runs, and how often each decision rule fires on them.

The data: per-run times (seconds, lower is better) of a baseline and a candidate, run in
the order `bench` runs them (ABBA ABBA…, `results.paired.baseline_first`), or blocked
(all baseline runs, then all candidate runs: a baseline stored earlier). Noise is
multiplicative (log-normal with the given coefficient of variation); a scenario may add a
drift (each run slower than the one before by a factor) or slow runs (with some
probability a run is slower by a factor). With several categories, a run's noise is
shared between them (correlation `RHO`: a slow run slows everything), and drift and slow
runs hit the whole run. The candidate's first category is faster by `effect`.

Every rule is the tool's own function (`compare_pairs`, `compare_samples`,
`category_verdicts`, `RepeatPlan`) or a reference rule from `reference_rules`; a trial
"fires" when the rule's report shows a change (a 🚀/🐢 marker, asv's +/−, LNT's
IMPROVED/REGRESSED). Deterministic: every cell seeds its own generator.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks import reference_rules
from orchestrator.results.compare import category_verdicts
from orchestrator.results.paired import RepeatPlan, baseline_first, compare_pairs, repeat_plan
from orchestrator.results.stats import Verdict, compare_samples

THRESHOLD, ALPHA = 2.0, 0.05
#: `--repeats auto`, the default.
AUTO = repeat_plan("auto")
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


CLEAN = Scenario("clean")
DRIFT = Scenario("drift 0.5%/run", drift=0.005)
SLOW_RUNS = Scenario("10% slow runs (×1.3)", slow_p=0.10)
STORED = Scenario("stored baseline, drift 0.5%/run", drift=0.005, blocked=True)
SCENARIOS = (CLEAN, DRIFT, SLOW_RUNS)


def simulate(
    rng: random.Random, pairs: int, cv: float, effect: float, scenario: Scenario, k: int = 1
) -> tuple[list[list[float]], list[list[float]]]:
    """(baseline, candidate): per side, one list per category of `pairs` run times."""
    sigma = math.sqrt(math.log1p(cv * cv))
    shared = sigma * math.sqrt(RHO) if k > 1 else sigma
    own = sigma * math.sqrt(1 - RHO) if k > 1 else 0.0
    base: list[list[float]] = [[] for _ in range(k)]
    cand: list[list[float]] = [[] for _ in range(k)]
    for pair in range(1, pairs + 1):
        if scenario.blocked:
            slots = [(True, pair - 1), (False, pairs + pair - 1)]
        else:
            first = 2 * (pair - 1)
            slots = [(baseline_first(pair), first), (not baseline_first(pair), first + 1)]
        for is_base, position in slots:
            run = math.exp(rng.gauss(0.0, shared)) * (1 + scenario.drift) ** position
            if scenario.slow_p and rng.random() < scenario.slow_p:
                run *= scenario.slow_factor
            for c in range(k):
                value = run * (math.exp(rng.gauss(0.0, own)) if own else 1.0)
                if is_base:
                    base[c].append(value)
                else:
                    cand[c].append(value * (1 - effect if c == 0 else 1.0))
    return base, cand


def _outcome(v: Verdict) -> Outcome:
    return None if v.marker == "•" else ("faster" if v.marker == "🚀" else "slower")


def bench_rule(base: Sequence[float], cand: Sequence[float]) -> Outcome:
    """`bench`'s verdict: the paired t test on log ratios, marker beyond the threshold."""
    return _outcome(
        compare_pairs(base, cand, higher_is_better=False, threshold_pct=THRESHOLD, alpha=ALPHA)
    )


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


def _seed(*parts: object) -> int:
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
        rng = random.Random(_seed(self))
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
        rng = random.Random(_seed(self))
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
        rng = random.Random(_seed(self))
        hits, pairs_used = 0, 0
        for _ in range(self.trials):
            base, cand = simulate(rng, self.plan.most, self.cv, self.effect, self.scenario)
            n = 0
            while more := self.plan.more(
                base[0][:n], cand[0][:n], threshold_pct=THRESHOLD, alpha=ALPHA
            ):
                n += more
            hits += fires(bench_rule(base[0][:n], cand[0][:n]), self.effect)
            pairs_used += n
        return {"fires": hits / self.trials, "pairs": pairs_used / self.trials}


@dataclass(frozen=True)
class DetectableCell:
    """Is "could have detected ±X %" honest? X from A/A trials, then the power at X."""

    cv: float
    pairs: int
    trials: int

    def run(self) -> dict[str, float]:
        rng = random.Random(_seed(self))
        stated = []
        for _ in range(self.trials):
            base, cand = simulate(rng, self.pairs, self.cv, 0.0, CLEAN)
            v = compare_pairs(base[0], cand[0], higher_is_better=False, alpha=ALPHA)
            stated.append(v.mdc_pct or math.inf)
        mdc = sorted(stated)[len(stated) // 2]
        effect = 1 - 1 / (1 + mdc / 100)  # a time ratio of 1 / (1 + mdc)
        found = 0
        for _ in range(self.trials):
            base, cand = simulate(rng, self.pairs, self.cv, effect, CLEAN)
            v = compare_pairs(base[0], cand[0], higher_is_better=False, alpha=ALPHA)
            found += v.significant and v.delta_pct < 0
        return {"mdc": mdc, "power": found / self.trials}
