"""The compiler loop (the field report's bench-llvm-commit): build, run both sides, diff.

Three steps, each returning what the next one needs: `images` (the LLVM or package
toolchain, GROMACS stable and dev) → `runs` (baseline and candidate measured now, in
interleaved pairs, a fixed number or adaptively) → `diff` (paired statistics). Without a
compiler the candidate is the stable image itself: an A/A comparison that shows the
noise floor of this machine. The report and the webhook are the caller's: `bench`
returns a `BenchOutcome`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from orchestrator.core import engine
from orchestrator.core.engine import Client
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Caution, Emit, Folded, Message, Step, ignore
from orchestrator.core.settings import Settings
from orchestrator.images import kernels
from orchestrator.images.gromacs import DEV_CURRENT, build_gromacs, gromacs_ref, record_of
from orchestrator.images.provenance import ImageRecord, label
from orchestrator.images.user_kernels import UserProgram
from orchestrator.platforms import get
from orchestrator.platforms.base import ProfileMode
from orchestrator.results.codegen_diff import CodegenDiff, summary_lines
from orchestrator.results.codegen_targets import nothing_to_measure, targets_line, verdict_note
from orchestrator.results.compare import Comparison
from orchestrator.results.judge import compare_groups
from orchestrator.results.paired import baseline_first, ci_halfwidth_pct, repeat_plan
from orchestrator.runs import runner, store
from orchestrator.runs.database import BenchRecord, record_bench
from orchestrator.runs.executors import Job, executor_for
from orchestrator.runs.kernel_recipe import ResolvedKernel
from orchestrator.runs.recipe import load_system
from orchestrator.runs.store import RunResult, RunStore
from orchestrator.workflows.build import toolchain_for
from orchestrator.workflows.codegen import builds_codegen, keep_asm_diffs, kernels_codegen
from orchestrator.workflows.placement import AUTO, place


@dataclass
class BenchRequest:
    """The candidate's compiler (at most one of `llvm`, `toolchain`, `package`; none: A/A),
    the baseline's (`against_*`, or a built image `against`; none: the stable image), and
    how to run and judge them."""

    llvm: str | None = None
    toolchain: str | None = None
    package: str | None = None
    against_llvm: str | None = None
    against_toolchain: str | None = None
    against_package: str | None = None
    against: str | None = None
    cpu_only: bool = False
    system: str | None = None
    tag: str | None = None
    steps: int | None = None
    #: Interleaved pairs: a number, "auto" or "auto:MAX" (`results.paired.repeat_plan`).
    repeats: int | str = "auto"
    no_llvm_rebuild: bool = False
    no_gmx_rebuild: bool = False
    #: None: the kernel trace where the image's stack has a profiler, else none.
    profile: ProfileMode | None = None
    mdrun_args: list[str] = field(default_factory=list)
    threshold_pct: float = 2.0
    alpha: float = 0.05
    #: Measure even when no kernel changed (the codegen diff finds nothing to measure).
    measure_anyway: bool = False


@dataclass
class Sides:
    """What `images` found or built: the baseline build and the one under test."""

    baseline: ImageRecord
    candidate: ImageRecord


@dataclass
class Groups:
    """What `runs` left: the run groups to compare, and what running them cost."""

    baseline: str
    candidate: str
    results: list[RunResult] = field(default_factory=list)
    pairs: int = 0


@dataclass
class BenchOutcome:
    """The verdict, or why nothing was measured, and where the time went (the tool's own
    overhead is the rest)."""

    #: None when nothing was measured (`nothing_measured` says why).
    comparison: Comparison | None
    runs: int
    container_seconds: float
    elapsed: float
    codegen: CodegenDiff | None = None
    #: Seconds from the start to the codegen summary (None: no summary, e.g. A/A).
    codegen_seconds: float | None = None
    nothing_measured: str | None = None
    #: The system measured (or that would have been).
    system: str | None = None

    @property
    def outside_seconds(self) -> float:
        return self.elapsed - self.container_seconds

    @property
    def verdict(self) -> str:
        """`faster`, `slower`, `no change`, `too busy` (no verdict: `results.busy`) or
        `nothing measured` (the database's word)."""
        if self.comparison is None:
            return "nothing measured"
        if self.comparison.too_busy:
            return "too busy"
        marker = self.comparison.ns_per_day.marker
        return {"🚀": "faster", "🐢": "slower"}.get(marker, "no change")

    def timing(self) -> str:
        codegen = ""
        if self.codegen_seconds is not None:
            codegen = f", the codegen summary after {self.codegen_seconds:.1f} s"
        return (
            f"{self.elapsed:.1f} s in all{codegen}: {self.container_seconds:.1f} s in "
            f"{self.runs} container runs, {self.outside_seconds:.1f} s outside them"
        )


#: What `bench` says when the two builds' kernels are byte-identical.
NOTHING_CHANGED = "no kernel changed: nothing to measure"


def bench(
    client: Client, settings: Settings, req: BenchRequest, emit: Emit = ignore
) -> BenchOutcome:
    """Build, diff the code, then measure where the change runs (or nothing: no kernel
    changed); the outcome is recorded in the results database either way."""
    repeat_plan(req.repeats)  # a bad --repeats stops here, before anything is built
    started = time.monotonic()
    sides = images(client, settings, req, emit)
    codegen, codegen_seconds = None, None
    program = _user_program(settings, req)
    if program is not None or not _kernel(settings, req):
        if program is not None:
            codegen = kernels_codegen(client, settings, sides.baseline, sides.candidate,
                                      program, emit)  # fmt: skip
        else:
            codegen = builds_codegen(client, settings, sides.baseline, sides.candidate, emit)
        codegen_seconds = time.monotonic() - started
        if codegen is not None:
            _summary(codegen, codegen_seconds, emit)
    if codegen is not None and not req.measure_anyway and nothing_changed(codegen):
        why = nothing_to_measure(codegen, NOTHING_CHANGED)
        emit(Step(f"{why} (--measure-anyway measures all the same)"))
        outcome = BenchOutcome(
            None, 0, 0.0, time.monotonic() - started, codegen, codegen_seconds, why,
            _system_name(settings, req),
        )  # fmt: skip
        record_bench(settings, _row(outcome, sides, None), emit)
        return outcome
    req = placed(settings, req, codegen, emit)
    groups = runs(client, settings, req, sides, emit)
    comparison = diff(settings, req, groups, emit, codegen)
    if program is None:  # a user kernel's code is in its kernel images, not kept for now
        keep_asm_diffs(client, settings, sides.baseline, sides.candidate, comparison.codegen,
                       (groups.baseline, groups.candidate), emit)  # fmt: skip
    outcome = BenchOutcome(
        comparison=comparison,
        runs=len(groups.results),
        container_seconds=sum(r.duration_seconds or 0.0 for r in groups.results),
        elapsed=time.monotonic() - started,
        codegen=codegen,
        codegen_seconds=codegen_seconds,
        system=comparison.system,
    )
    record_bench(settings, _row(outcome, sides, groups), emit)
    return outcome


def _system_name(settings: Settings, req: BenchRequest) -> str:
    """The canonical name of the system asked for (`auto` stays `auto`)."""
    if req.system == AUTO:
        return AUTO
    return load_system(req.system, settings.recipes_dirs).name


def nothing_changed(codegen: CodegenDiff) -> bool:
    """Every kernel (CPU: hot function) of both builds is there with the same code, on
    the target the timings are of (another target's changes run on another GPU)."""
    categories = codegen.categories.values()
    return not codegen.changed and all(not c.only_a and not c.only_b for c in categories)


def _summary(codegen: CodegenDiff, seconds: float, emit: Emit) -> None:
    what = "kernels" if codegen.gpu else "hot functions"
    changed = len(codegen.changed)
    total = sum(c.total for c in codegen.categories.values())
    where = f" on {verdict_note(codegen)}" if len(codegen.targets) > 1 else ""
    emit(Step(f"codegen after {seconds:.1f} s: {changed} of {total} {what} changed{where}"))
    if note := codegen.code_object_note():
        emit(Caution(note))
    if line := targets_line(codegen):
        emit(Message(f"  per target: {line}"))
    for line in summary_lines(codegen):
        emit(Message(f"  {line}"))


def placed(
    settings: Settings, req: BenchRequest, codegen: CodegenDiff | None, emit: Emit
) -> BenchRequest:
    """The request with its system settled where the change runs (`workflows.placement`)."""
    if _kernel(settings, req) or (codegen is None and req.system != AUTO):
        return req
    system, args = place(settings, req.system, req.mdrun_args, req.steps, req.cpu_only,
                         codegen, emit)  # fmt: skip
    return replace(req, system=system, mdrun_args=args)


def _row(outcome: BenchOutcome, sides: Sides, groups: Groups | None) -> BenchRecord:
    candidate = sides.candidate
    cmp = outcome.comparison
    return BenchRecord(
        baseline=sides.baseline.build or sides.baseline.tag,
        candidate=candidate.build or candidate.tag,
        llvm_commit=candidate.llvm_commit,
        system=outcome.system or "",
        verdict=outcome.verdict,
        headline=cmp.headline if cmp is not None else outcome.nothing_measured or "",
        changed_kernels=len(outcome.codegen.changed) if outcome.codegen is not None else None,
        runs=outcome.runs,
        elapsed_seconds=outcome.elapsed,
        baseline_group=groups.baseline if groups else None,
        candidate_group=groups.candidate if groups else None,
    )


def _kernel(settings: Settings, req: BenchRequest) -> bool:
    """A kernel benchmark needs the compiler, not GROMACS: its sides are toolchain images."""
    if req.system == AUTO:
        return False
    return isinstance(load_system(req.system, settings.recipes_dirs), ResolvedKernel)


def _user_program(settings: Settings, req: BenchRequest) -> UserProgram | None:
    """A user's own kernel (a recipe's `[sources]`): its code is diffed before the runs,
    like GROMACS's kernels; our programs' is not."""
    if req.system == AUTO:
        return None
    system = load_system(req.system, settings.recipes_dirs)
    if isinstance(system, ResolvedKernel) and isinstance(system.program, UserProgram):
        return system.program
    return None


def images(client: Client, settings: Settings, req: BenchRequest, emit: Emit) -> Sides:
    """The baseline (the stable image unless `against_*` names another build) and the dev
    image of the compiler asked for (none: the baseline itself, an A/A comparison). For a
    kernel benchmark, a compiler's side is its toolchain image: no GROMACS is built."""
    baseline = _baseline(client, settings, req, emit)
    if req.no_gmx_rebuild:
        current = engine.image(client, DEV_CURRENT)
        if current is None:
            raise UserError(
                f"--no-gmx-rebuild: there is no {DEV_CURRENT} yet. Run once without "
                "--no-gmx-rebuild to build the dev image."
            )
        return Sides(baseline, ImageRecord.from_labels(DEV_CURRENT, current.id, current.labels))
    candidate = _dev_build(
        client, settings, req, req.llvm, req.package, req.toolchain, not req.no_llvm_rebuild,
        emit,
    )  # fmt: skip
    return Sides(baseline, candidate or baseline)


def _baseline(client: Client, settings: Settings, req: BenchRequest, emit: Emit) -> ImageRecord:
    if req.against and (req.against_llvm or req.against_toolchain or req.against_package):
        raise UsageError("Give at most one of --against, --against-llvm, --against-toolchain "
                         "and --against-package.")  # fmt: skip
    if req.against:
        image = engine.image(client, gromacs_ref(req.against))
        if image is None or label("build") not in image.labels:
            raise UserError(
                f"--against {req.against}: no GROMACS image {gromacs_ref(req.against)} of this "
                "tool in the engine. `nox -s images` lists the builds there are."
            )
        return record_of(image)
    against = _dev_build(
        client, settings, req, req.against_llvm, req.against_package, req.against_toolchain,
        True, emit, side="baseline",
    )  # fmt: skip
    if against is not None:
        return against
    emit(Step("GROMACS stable image"))
    return build_gromacs(client, settings, "stable", emit=emit)


def _dev_build(
    client: Client, settings: Settings, req: BenchRequest, llvm: str | None, package: str | None,
    toolchain: str | None, rebuild: bool, emit: Emit, side: str = "candidate",
) -> ImageRecord | None:  # fmt: skip
    """The dev image of one compiler (an LLVM commit, a package or a toolchain image)."""
    if llvm:
        emit(Step(f"{side}: LLVM toolchain at {llvm}"))
    elif package:
        emit(Step(f"{side}: toolchain image from {package}"))
    tag = toolchain_for(
        client, settings, llvm=llvm, package=package, toolchain=toolchain, rebuild=rebuild,
        emit=emit,
    )  # fmt: skip
    if tag is None:
        return None
    if _kernel(settings, req):
        image = engine.image(client, tag)
        assert image is not None, tag
        record = ImageRecord.from_labels(tag, image.id, image.labels)
        return record.model_copy(update={"build": kernels.build_name(image, tag)})
    emit(Step(f"{side}: GROMACS dev build with {tag}"))
    return build_gromacs(client, settings, "dev", toolchain_tag=tag, emit=emit)


def runs(client: Client, settings: Settings, req: BenchRequest, sides: Sides, emit: Emit) -> Groups:
    """Baseline and candidate, both measured now, in interleaved pairs (ABBA ABBA…).

    Every bench measures its baseline again, in a group of its own tagged
    `kernel-baseline-<candidate tag>` (so `compare` finds the pairs later): a stored
    baseline is history, not the comparison, since a machine drifts between benches (with
    each run 0.5 % slower than the last, reusing one gave 57 % false alarms at 7 runs).
    The pairs run in counterbalanced order so a linear drift cancels; `--repeats auto`
    adds pairs until the ns/day interval is within ± the threshold (`RepeatPlan`). A pair
    with a run that shared the machine does not count (`results.busy`): it is measured
    again, at most the plan's most extra pairs (`RepeatPlan.more_clean`).
    """
    baseline, candidate = sides.baseline, sides.candidate
    plan = repeat_plan(req.repeats)
    system = load_system(req.system, settings.recipes_dirs).name
    default_tag = "aa" if candidate is baseline else "bench"
    if candidate.llvm_commit:
        default_tag = f"llvm-{candidate.llvm_commit}"
    tag = req.tag or f"{default_tag}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    base_tag = f"{store.BASELINE_TAG}-{tag}"
    groups = Groups(
        baseline=store.run_id(baseline.build or "", system, base_tag),
        candidate=store.run_id(candidate.build or "", system, tag),
    )
    clean: tuple[list[float], list[float]] = ([], [])  # pairs whose runs had the host alone
    left_out: list[int] = []  # the last batch's pairs with a run that shared the machine
    how_many = str(plan.most) if not plan.adaptive else f"{plan.first}–{plan.most}"
    executor = executor_for(client, settings)
    while more := plan.more_clean(
        *clean, ran=groups.pairs, threshold_pct=req.threshold_pct, alpha=req.alpha
    ):
        why = []
        if left_out:
            why.append(_left_out(left_out))
        if len(clean[0]) >= 2:
            width = ci_halfwidth_pct(*clean, alpha=req.alpha)
            why.append(f"{len(clean[0])} clean pairs: the ns/day ratio is known to "
                       f"±{width:.1f}%, wider than ±{req.threshold_pct:g}%")  # fmt: skip
        if why:  # a line a batch at most: the console's length follows the pairs
            emit(Step("; ".join(why) + f": {more} more pairs"))
        batch: list[Job] = []
        for _ in range(more):
            groups.pairs += 1
            order = [(baseline, base_tag, "baseline"), (candidate, tag, "candidate")]
            of = f"of {how_many}" if groups.pairs <= plan.most else "(measured again)"
            for image, group_tag, side in order if baseline_first(groups.pairs) else order[::-1]:
                label = f"pair {groups.pairs} {of}, {side}: {image.build} on {system}"
                run_tag = store.repeat_tag(group_tag, groups.pairs, plan.most)
                request = _request(settings, image, system, run_tag, req)
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
        pairs = enumerate(zip(ran[::2], ran[1::2], strict=True), groups.pairs - more + 1)
        left_out = [pair for pair, both in pairs if not _keep_clean(pair, both, clean)]
    if left_out:
        spent = groups.pairs >= 2 * plan.most
        emit(Step(_left_out(left_out) + (
            f", not measured again: the budget of {plan.most} extra pairs is spent" if spent
            else "")))  # fmt: skip
    return groups


def _keep_clean(
    pair: int, runs_of_pair: tuple[RunResult, RunResult], clean: tuple[list[float], list[float]]
) -> bool:
    """Add a pair's values to the clean ones; False when a run of it shared the machine
    (`results.busy`): it measured its neighbours too, so the pair is left out (and
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
    settings: Settings, image: ImageRecord, system: str, tag: str, req: BenchRequest
) -> runner.RunRequest:  # fmt: skip
    return runner.RunRequest(
        build=image.tag if _kernel(settings, req) else image.build or "", system=system, tag=tag,
        profile=req.profile or get(image.platform or "cpu").default_profile(image.rocm_stack),
        mdrun_args=req.mdrun_args, steps=req.steps, llvm_commit=image.llvm_commit,
        cpu_only=req.cpu_only,
    )  # fmt: skip


def diff(
    settings: Settings, req: BenchRequest, groups: Groups, emit: Emit,
    codegen: CodegenDiff | None = None,
) -> Comparison:  # fmt: skip
    """Both groups compared pair by pair, with the validity guards of `compare`; with the
    builds' codegen diff, changed kernels are also judged against the unchanged ones."""
    emit(Step("diff"))
    results = RunStore(settings.results_dir)
    return compare_groups(
        results.finished(groups.baseline, emit),
        results.finished(groups.candidate, emit),
        threshold_pct=req.threshold_pct,
        alpha=req.alpha,
        paired=True,
        store=results,
        codegen=codegen,
    )
