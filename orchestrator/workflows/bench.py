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
from dataclasses import dataclass, field
from datetime import UTC, datetime

from orchestrator.core import engine
from orchestrator.core.engine import Client
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Emit, Step, ignore
from orchestrator.core.settings import Settings
from orchestrator.images import kernels
from orchestrator.images.gromacs import DEV_CURRENT, build_gromacs, gromacs_ref, record_of
from orchestrator.images.provenance import ImageRecord, label
from orchestrator.platforms import get
from orchestrator.platforms.base import ProfileMode
from orchestrator.results.compare import Comparison
from orchestrator.results.judge import compare_groups
from orchestrator.results.paired import baseline_first, ci_halfwidth_pct, repeat_plan
from orchestrator.runs import runner, store
from orchestrator.runs.executors import Job, executor_for
from orchestrator.runs.kernel_recipe import ResolvedKernel
from orchestrator.runs.recipe import load_system
from orchestrator.runs.store import RunResult, RunStore
from orchestrator.workflows.build import toolchain_for
from orchestrator.workflows.codegen import builds_codegen


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
    """The verdict and where the time went (the tool's own overhead is the rest)."""

    comparison: Comparison
    runs: int
    container_seconds: float
    elapsed: float

    @property
    def outside_seconds(self) -> float:
        return self.elapsed - self.container_seconds

    def timing(self) -> str:
        return (
            f"{self.elapsed:.1f} s in all: {self.container_seconds:.1f} s in {self.runs} "
            f"container runs, {self.outside_seconds:.1f} s outside them"
        )


def bench(
    client: Client, settings: Settings, req: BenchRequest, emit: Emit = ignore
) -> BenchOutcome:
    repeat_plan(req.repeats)  # a bad --repeats stops here, before anything is built
    started = time.monotonic()
    sides = images(client, settings, req, emit)
    groups = runs(client, settings, req, sides, emit)
    comparison = diff(settings, req, groups, emit)
    if not _kernel(settings, req):
        comparison.codegen = builds_codegen(client, settings, sides.baseline, sides.candidate, emit)
    return BenchOutcome(
        comparison=comparison,
        runs=len(groups.results),
        container_seconds=sum(r.duration_seconds or 0.0 for r in groups.results),
        elapsed=time.monotonic() - started,
    )


def _kernel(settings: Settings, req: BenchRequest) -> bool:
    """A kernel benchmark needs the compiler, not GROMACS: its sides are toolchain images."""
    return isinstance(load_system(req.system, settings.recipes_dirs), ResolvedKernel)


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
    adds pairs until the ns/day interval is within ± the threshold (`RepeatPlan`).
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
    values: tuple[list[float], list[float]] = ([], [])
    how_many = str(plan.most) if not plan.adaptive else f"{plan.first}–{plan.most}"
    executor = executor_for(client, settings)
    while more := plan.more(*values, threshold_pct=req.threshold_pct, alpha=req.alpha):
        if groups.pairs >= 2:
            width = ci_halfwidth_pct(*values, alpha=req.alpha)
            emit(Step(f"{groups.pairs} pairs: the ns/day ratio is known to ±{width:.1f}%, "
                      f"wider than ±{req.threshold_pct:g}%: {more} more pairs"))  # fmt: skip
        batch: list[Job] = []
        candidates: list[bool] = []  # whether each job is the candidate's
        for _ in range(more):
            groups.pairs += 1
            order = [(baseline, base_tag, "baseline"), (candidate, tag, "candidate")]
            for image, group_tag, side in order if baseline_first(groups.pairs) else order[::-1]:
                label = f"pair {groups.pairs} of {how_many}, {side}: {image.build} on {system}"
                run_tag = store.repeat_tag(group_tag, groups.pairs, plan.most)
                batch.append(Job(label, _request(settings, image, system, run_tag, req)))
                candidates.append(side == "candidate")
        (ran,) = executor.run([batch], emit, stop_on_failure=True)
        for is_candidate, result in zip(candidates, ran, strict=False):
            if not result.finished:
                raise UserError(
                    f"Run {result.run_id} did not finish ({result.failure}); it is recorded as "
                    f"unfinished in {settings.results_dir / result.run_id}. No verdict without it."
                )
            groups.results.append(result)
            values[is_candidate].append(result.headline_value() or 0.0)
    return groups


def _request(
    settings: Settings, image: ImageRecord, system: str, tag: str, req: BenchRequest
) -> runner.RunRequest:  # fmt: skip
    return runner.RunRequest(
        build=image.tag if _kernel(settings, req) else image.build or "", system=system, tag=tag,
        profile=req.profile or get(image.platform or "cpu").default_profile(image.rocm_stack),
        mdrun_args=req.mdrun_args, steps=req.steps, llvm_commit=image.llvm_commit,
        cpu_only=req.cpu_only,
    )  # fmt: skip


def diff(settings: Settings, req: BenchRequest, groups: Groups, emit: Emit) -> Comparison:
    """Both groups compared pair by pair, with the validity guards of `compare`."""
    emit(Step("diff"))
    results = RunStore(settings.results_dir)
    return compare_groups(
        results.finished(groups.baseline, emit),
        results.finished(groups.candidate, emit),
        threshold_pct=req.threshold_pct,
        alpha=req.alpha,
        paired=True,
        store=results,
    )
