"""Both sides of a bench measured now, in interleaved pairs (ABBA ABBA…), until the
verdict is settled or precise enough, or the plan's pairs or the budget are spent; a pair
that shared the machine is left out and measured again."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Folded, Step
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.provenance import ImageRecord
from orchestrator.platforms import get
from orchestrator.report.repeats import look_text
from orchestrator.runs import runner
from orchestrator.runs.executors import Job, executor_for
from orchestrator.runs.recipe import load_system
from orchestrator.store import layout
from orchestrator.store.records import RunResult
from orchestrator.verdict.paired import RepeatPlan, baseline_first, repeat_plan
from orchestrator.workflows.bench_plan import BenchRequest, fitted, run_seconds
from orchestrator.workflows.budget import LEAST_PAIRS, Spend, budget_seconds, duration


@dataclass
class Groups:
    """What `runs` left: the run groups to compare, and what running them cost."""

    baseline: str
    candidate: str
    results: list[RunResult] = field(default_factory=list)
    pairs: int = 0


def run_pairs(
    client: Client | None, settings: Settings, req: BenchRequest, baseline: ImageRecord,
    candidate: ImageRecord, microbench: bool, emit: Emit,
) -> Groups:  # fmt: skip
    """Baseline and candidate, both measured now, in interleaved pairs (ABBA ABBA…).

    Every bench measures its baseline again, in a group of its own (`layout.baseline_tag`:
    its records name the bench, so `compare` finds the pairs later): a stored
    baseline is history, not the comparison, since a machine drifts between benches (with
    each run 0.5 % slower than the last, reusing one gave 57 % false alarms at 7 runs).
    The pairs run in counterbalanced order so a linear drift cancels; `--repeats auto`
    stops once the verdict is settled or the ns/day interval is within ± the threshold
    (`RepeatPlan`), and says why. A pair with a run that shared the machine does not count
    (`verdict.busy`): it is measured again, at most the plan's most extra pairs
    (`RepeatPlan.look_clean`). A budget fits the pairs and steps before the first run and
    cuts the pairs as their measured times spend it (`workflows.budget`).
    """
    plan = repeat_plan(req.repeats)
    system = load_system(req.system, settings.recipes_dirs).name
    spend = None
    fit = fitted(settings, req, get(baseline.platform or "cpu"), baseline.rocm_stack)
    if fit is not None and req.budget is not None:
        plan, budget = fit.plan, budget_seconds(req.budget)
        spend = Spend(budget, fit.pair_seconds, min(plan.most, LEAST_PAIRS))
        req = replace(req, steps=fit.steps)
    default_tag = "aa" if candidate is baseline else "bench"
    if candidate.llvm_commit:
        default_tag = f"llvm-{candidate.llvm_commit}"
    tag = req.tag or f"{default_tag}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    base_tag = layout.baseline_tag(tag)
    groups = Groups(
        baseline=layout.run_id(baseline.build or "", system, base_tag),
        candidate=layout.run_id(candidate.build or "", system, tag),
    )
    clean: tuple[list[float], list[float]] = ([], [])  # pairs whose runs had the host alone
    left_out: list[int] = []  # the last batch's pairs with a run that shared the machine
    how_many = str(plan.most) if not plan.adaptive else f"{plan.start}–{plan.most}"
    executor = executor_for(client, settings)
    emit(Step(fit.line if fit is not None else _expected(settings, system, req.steps, plan)))
    while True:
        look = plan.look_clean(*clean, ran=groups.pairs, threshold_pct=req.threshold_pct,
                               alpha=req.alpha)  # fmt: skip
        more, said = look.more, None
        if spend is not None and more:
            more, said = spend.cap(more, groups.pairs, len(clean[0]))
        why = [_left_out(left_out)] if left_out else []
        reason = look_text(look)
        if more and reason:
            why.append(f"{len(clean[0])} clean pairs: {reason}")
        if why and more:  # a line a batch at most: the console's length follows the pairs
            emit(Step("; ".join(why) + f": {more} more pairs"))
        if said:
            emit(Step(said))
        if not more:
            if look.more == 0 and reason:
                emit(Step(f"stopped after {len(clean[0])} clean pairs: {reason}"))
            break
        batch: list[Job] = []
        for _ in range(more):
            groups.pairs += 1
            order = [(baseline, base_tag, "baseline"), (candidate, tag, "candidate")]
            of = f"of {how_many}" if groups.pairs <= plan.most else "(measured again)"
            for image, group_tag, side in order if baseline_first(groups.pairs) else order[::-1]:
                label = f"pair {groups.pairs} {of}, {side}: {image.build} on {system}"
                run_tag = layout.repeat_tag(group_tag, groups.pairs, plan.most)
                request = _request(image, system, run_tag, req, microbench)
                folded = Folded(f"pair {groups.pairs} {of} on {system}", side, len(order))
                batch.append(Job(label, request, folded=folded))
        (ran,) = executor.run([batch], emit, stop_on_failure=True)
        for result in ran:
            if not result.finished:
                raise UserError(
                    f"Run {result.run_id} did not finish ({result.failure}); it is recorded as "
                    f"unfinished in {settings.results_dir / result.run_id}. No verdict without it."
                )
            groups.results.append(result)
        if spend is not None:
            spend.add(ran)
        pairs = enumerate(zip(ran[::2], ran[1::2], strict=True), groups.pairs - more + 1)
        left_out = [pair for pair, both in pairs if not _keep_clean(pair, both, clean)]
    if left_out:
        spent = groups.pairs >= 2 * plan.most
        emit(Step(_left_out(left_out) + (
            f", not measured again: the budget of {plan.most} extra pairs is spent" if spent
            else "")))  # fmt: skip
    return groups


def _expected(settings: Settings, system: str, steps: int | None, plan: RepeatPlan) -> str:
    """What the runs will take, said before they start: from this machine's stored runs."""
    runs = f"{2 * plan.start}" + (f"–{2 * plan.most}" if plan.adaptive else "")
    known = run_seconds(settings, system, steps)
    if known is None:
        return f"{runs} runs on {system}: no estimate (never run here)"
    each, basis = known
    span = duration(2 * plan.start * each)
    if plan.adaptive:
        span += f"–{duration(2 * plan.most * each)}"
    return f"{runs} runs on {system}: about {span} ({basis})"


def _keep_clean(
    pair: int, runs_of_pair: tuple[RunResult, RunResult], clean: tuple[list[float], list[float]]
) -> bool:
    """Add a pair's values to the clean ones; False when a run of it shared the machine
    (`verdict.busy`): it measured its neighbours too, so the pair is left out (and
    measured again while the plan's budget of extra pairs lasts, `RepeatPlan.more_clean`)."""
    if any(r.noise and r.noise.shared for r in runs_of_pair):
        return False
    base_run, cand_run = runs_of_pair if baseline_first(pair) else runs_of_pair[::-1]
    clean[0].append(base_run.headline_value() or 0.0)
    clean[1].append(cand_run.headline_value() or 0.0)
    return True


def _left_out(pairs: list[int]) -> str:
    """`pairs 2, 5 shared the machine: left out of the verdict` (`pair 3` for one)."""
    which = f"pair {pairs[0]}" if len(pairs) == 1 else "pairs " + ", ".join(map(str, pairs))
    return f"{which} shared the machine: left out of the verdict"


def _request(
    image: ImageRecord, system: str, tag: str, req: BenchRequest, microbench: bool
) -> runner.RunRequest:  # fmt: skip
    """A microbenchmark runs a toolchain image (by tag); mdrun a GROMACS build."""
    platform = get(image.platform or "cpu")
    return runner.RunRequest(
        build=image.tag if microbench else image.build or "", system=system, tag=tag,
        profile=req.profile or platform.profiler.default_profile(image.rocm_stack),
        mdrun_args=req.mdrun_args, steps=req.steps, llvm_commit=image.llvm_commit,
        cpu_only=req.cpu_only,
    )  # fmt: skip
