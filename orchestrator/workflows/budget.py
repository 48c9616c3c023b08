"""`bench --budget 10m`: the runs fitted to a time, said before they start, kept as they go.

The budget is the runs' time: the seconds their containers take, what every stored run
records and what the estimate is made of. The builds come before the runs and are not
part of it (`--dry-run` lists them with their own estimates). A run's time is a fixed
set-up plus a time per step (`RunTime`, from this machine's stored runs), and the plan is
fitted in this order (`fit`):

1. the plan as asked, when its most pairs fit;
2. fewer pairs: the most that fit, rounded down to even (ABBA order cancels a drift only
   over an even number of pairs), when that is at least `LEAST_PAIRS`;
3. fewer steps per run, only where the kernel trace gives the per-kernel statistics (a
   GPU run under rocprofv3): a kernel is called once or more a step, so a run of 10,000
   steps still holds thousands of calls of each and its median is solid, while md.log's
   ns/day is timed over the second half either way (`-resethway`). Steps are lowered so
   that the plan's first look (`RepeatPlan.first`, 6 pairs: more pairs are worth more than
   longer runs at this size, the t quantile falls from 3.18 at 4 pairs to 2.57 at 6) fits,
   never below `FLOOR_STEPS`; at the floor, as many pairs as fit;
4. otherwise refused before anything is built, with what the least plan takes.

Without stored runs there is no estimate: the first batch is one pair, and from its
measured time on the bench runs only the pairs that fit (`Spend`), never fewer than a
verdict needs. The stop is checked before each batch, so a bench can end a batch late
when a run takes longer than the ones before it.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, replace

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.settings import Settings
from orchestrator.platforms.base import ProfileMode
from orchestrator.platforms.roles import Platform
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import ResolvedSystem
from orchestrator.store.records import RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.paired import RepeatPlan
from orchestrator.verdict.sequential import AUTO_EARLY

#: The fewest pairs a budget leaves: 3 for a marker, rounded up to even (auto's first look).
LEAST_PAIRS = AUTO_EARLY
#: The fewest steps a budget lowers a run to. GROMACS tunes PME for at most 50 pair-list
#: periods (`PMETunePeriod`, pme_load_balancing.cpp) and mdrun raises nstlist to at most
#: 100 on a GPU (`nstlist_try`): 5,000 steps of start-up at worst, and `-resethway` times
#: only the second half, so from 10,000 steps the timed half follows it.
FLOOR_STEPS = 10_000
#: Lowered steps are rounded down to a multiple of this.
STEP_GRAIN = 1_000

_BUDGET = re.compile(
    r"(?:(\d+(?:\.\d+)?)\s*h)?\s*(?:(\d+(?:\.\d+)?)\s*m(?:in)?)?\s*(?:(\d+(?:\.\d+)?)\s*s)?"
)


def budget_seconds(text: str) -> float:
    """`90s`, `10m`, `1h`, `1h30m` in seconds; a `UsageError` for anything else or <= 0."""
    found = _BUDGET.fullmatch(text.strip().lower())
    parts = found.groups() if found else (None, None, None)
    seconds = sum(float(p) * unit for p, unit in zip(parts, (3600, 60, 1), strict=True) if p)
    if not any(parts) or not seconds > 0:
        raise UsageError(
            f"--budget {text!r} (or ORCH_BENCH_BUDGET) is not understood: give the runs' time "
            "with a unit, more than 0: 90s, 10m, 1h or 1h30m. The builds before the runs are "
            "not part of it; `bench --dry-run` says what they take."
        )
    return seconds


def duration(seconds: float) -> str:
    if seconds == 0:
        return "0 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


@dataclass(frozen=True)
class RunTime:
    """A run's seconds on one system here: `setup` + `per_step` × steps, and from what."""

    setup: float
    per_step: float
    basis: str

    def seconds(self, steps: int | None) -> float:
        return self.setup + self.per_step * (steps or 0)


def run_time(settings: Settings, system: str, steps: int | None, cpu_only: bool) -> RunTime | None:
    """From this machine's finished runs of `system` (alike in `cpu_only`): a line fitted
    to the medians at two or more step counts; from one step count, the runs' own set-up
    time (or none) apart and the rest proportional to steps, which says so. None: no run.
    `steps` None (a microbenchmark): the median run, whatever its steps."""
    runs = stored_runs(settings, system, cpu_only)
    if not runs:
        return None
    if steps is None or not any(r.steps for r in runs):
        each = statistics.median(r.duration_seconds or 0.0 for r in runs)
        return RunTime(each, 0.0, f"{each:.0f} s a run, the median of {len(runs)} stored runs")
    by_steps: dict[int, list[float]] = {}
    for r in runs:
        if r.steps:
            by_steps.setdefault(r.steps, []).append(r.duration_seconds or 0.0)
    points = [(s, statistics.median(d)) for s, d in sorted(by_steps.items())]
    counted = sum(len(d) for d in by_steps.values())
    if len(points) >= 2:
        slope, setup = statistics.linear_regression(*zip(*points, strict=True))
        if slope > 0 and setup >= 0:
            return RunTime(setup, slope, (
                f"{setup:.0f} s set-up + {1000 * slope:.2f} s a 1,000 steps, fitted to "
                f"{counted} stored runs at {len(points)} step counts"))  # fmt: skip
    at, runs_at = max(by_steps.items(), key=lambda item: (len(item[1]), item[0]))
    each = statistics.median(runs_at)
    setups = [r.setup_seconds for r in runs if r.steps == at and r.setup_seconds is not None]
    setup = min(statistics.median(setups), each) if setups else 0.0
    why = "no stored runs at other step counts to tell set-up from steps"
    rest = f"the runs' own set-up ({setup:.0f} s) apart, " if setups else ""
    return RunTime(setup, (each - setup) / at, (
        f"{each:.0f} s a run at {at:,} steps, the median of {len(runs_at)} stored runs; "
        f"{rest}assumed proportional to steps ({why})"))  # fmt: skip


def stored_runs(settings: Settings, system: str, cpu_only: bool | None = None) -> list[RunResult]:
    """This machine's finished runs of `system` with their durations (None: GPU and
    `--cpu-only` runs alike): what every estimate of a run's time is made from."""
    store = RunStore(settings.results_dir)
    done = []
    for path in store.runs():
        try:
            result = store.load(path)
        except UserError:  # an unreadable record only loses an estimate
            continue
        alike = result.system == system and cpu_only in (None, result.cpu_only)
        if alike and result.finished and result.duration_seconds:
            done.append(result)
    return done


def traced(
    platform: Platform, stack: str | None, profile: ProfileMode | None, cpu_only: bool,
    system: ResolvedSystem | ResolvedMicrobench,
) -> bool:  # fmt: skip
    """Whether the runs give per-kernel statistics from the kernel trace: a GROMACS system
    on a GPU, traced (`--profile`, else the platform's default for the image's stack)."""
    if cpu_only or isinstance(system, ResolvedMicrobench) or not platform.run.has_devices:
        return False
    return (profile or platform.profiler.default_profile(stack)) == "trace"


@dataclass(frozen=True)
class Fit:
    """The plan and steps a budget leaves, in words, and a pair's expected seconds (None:
    no estimate: the budget is applied after the first pair)."""

    plan: RepeatPlan
    steps: int | None
    words: str
    pair_seconds: float | None
    #: The most pairs' expected seconds, for `--dry-run` (None: no estimate).
    seconds: float | None = None
    basis: str | None = None

    @property
    def line(self) -> str:
        """What the console says before the runs."""
        return self.words + (f" ({self.basis})" if self.basis else "")


def capped(plan: RepeatPlan, pairs: int) -> RepeatPlan:
    """`plan` with at most `pairs` pairs (its first look no later)."""
    if pairs >= plan.most:
        return plan
    if not plan.adaptive:
        return RepeatPlan(pairs, pairs)
    return replace(plan, first=min(plan.first, pairs), most=pairs)


def fit(
    settings: Settings, *, budget: float, system: ResolvedSystem | ResolvedMicrobench,
    plan: RepeatPlan, steps: int | None, cpu_only: bool, trace: bool,
) -> Fit:  # fmt: skip
    """`plan` and `steps` fitted to `budget` seconds of runs (see the module docstring);
    a `UsageError` when even the least plan does not fit."""
    asked = steps or (system.default_steps if isinstance(system, ResolvedSystem) else None)
    model = run_time(settings, system.name, asked, cpu_only)
    words = f"budget {duration(budget)}"
    if model is None:
        return Fit(plan, steps, f"{words}: no estimate ({system.name} never ran here): the "
                   "budget is applied after the first pair", None)  # fmt: skip
    least = min(LEAST_PAIRS, plan.most)
    at, each = asked, model.seconds(asked)
    pairs, how = _even(budget / (2 * each)), ""
    if pairs < least and trace and asked and model.per_step > 0 and asked > FLOOR_STEPS:
        target = min(plan.first, plan.most)
        lowered = (budget / (2 * target) - model.setup) / model.per_step
        at = min(asked, max(FLOOR_STEPS, int(lowered) // STEP_GRAIN * STEP_GRAIN))
        each = model.seconds(at)
        pairs = _even(budget / (2 * each))
        how = (f" instead of {asked:,} (the kernel trace gives the per-kernel statistics; "
               f"never below {FLOOR_STEPS:,})")  # fmt: skip
    if pairs < least:
        raise UsageError(_too_small(budget, system.name, least, at, each, model, trace))
    fitted = capped(plan, pairs)
    shown = f"{fitted.start}–{fitted.most}" if fitted.adaptive else f"{fitted.most}"
    span = duration(2 * fitted.start * each)
    if fitted.adaptive:
        span = f"{span}–{duration(2 * fitted.most * each)}".replace(" min–", "–")
    steps_words = f" at {at:,} steps{how}" if at else ""
    if fitted == plan and not how:
        steps_words += ": the plan fits"
    words += f": {shown} pairs{steps_words}, about {span}"
    return Fit(fitted, at if how else steps, words, 2 * each, 2 * fitted.most * each, model.basis)


def _even(pairs: float) -> int:
    whole = math.floor(pairs + 1e-9)
    return whole - whole % 2


def _too_small(
    budget: float, system: str, least: int, steps: int | None, each: float, model: RunTime,
    trace: bool,
) -> str:  # fmt: skip
    at = f" at {steps:,} steps" if steps else ""
    need = 2 * least * each
    lower = (f"lower steps are used only where the kernel trace gives the per-kernel "
             f"statistics (a GPU run under rocprofv3), never below {FLOOR_STEPS:,}; "
             "--steps sets them")  # fmt: skip
    if trace and steps and steps <= FLOOR_STEPS:
        lower = f"the steps are at the floor of {FLOOR_STEPS:,} already"
    return (
        f"--budget {duration(budget)} is too small for a verdict on {system}: the least plan, "
        f"{least} interleaved pairs ({2 * least} runs){at}, takes about {duration(need)} here "
        f"({model.basis}). Give --budget {math.ceil(need / 60)}m or more; {lower}."
    )


@dataclass
class Spend:
    """The runs' seconds against the budget as `bench` runs its pairs."""

    budget: float
    #: A pair's expected seconds before any ran (None: no estimate, one pair first).
    pair_seconds: float | None
    least: int = LEAST_PAIRS
    spent: float = 0.0
    pairs: int = 0

    def add(self, results: list[RunResult]) -> None:
        """The runs of a batch, two a pair."""
        self.spent += sum(r.duration_seconds or 0.0 for r in results)
        self.pairs += len(results) // 2

    def cap(self, more: int, ran: int, clean: int) -> tuple[int, str | None]:
        """`more` pairs cut to what the budget has left (an even total), never below the
        `least` clean pairs a verdict needs; and a line when the budget decided."""
        per = self.spent / self.pairs if self.pairs else self.pair_seconds
        if per is None:
            return min(more, 1), None
        fits = max(0, math.floor((self.budget - self.spent) / per + 1e-9))
        first = self.pair_seconds is None and ran == self.pairs == 1
        words = (f"budget {duration(self.budget)}: {duration(self.spent)} spent, a pair "
                 f"takes about {duration(per)}")  # fmt: skip
        if fits >= more:
            return more, (f"{words}: {_even(ran + fits)} pairs fit in it" if first else None)
        n = fits - (ran + fits) % 2
        need = max(0, self.least - clean)
        if n < need:
            n = min(more, need + (ran + need) % 2)
            over = duration(self.spent + n * per - self.budget)
            return n, (f"{words}: {n} more pairs all the same, the fewest for a verdict "
                       f"(about {over} over; the next bench's budget is fitted from these "
                       "runs)")  # fmt: skip
        if n <= 0:
            return 0, f"{words}: stopped after {ran} pairs"
        return n, f"{words}: {n} more pairs, not {more}"
