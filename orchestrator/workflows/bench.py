"""The compiler loop (the field report's bench-llvm-commit): build, run both sides, diff.

Three steps, each returning what the next one needs: `images` (the LLVM or package
toolchain, GROMACS stable and dev) → `runs` (baseline when missing, and candidate,
interleaved, N repeats each) → `diff`. Without a compiler the candidate is the stable
image itself: an A/A comparison that shows the noise floor of this machine. The
report and the webhook are the caller's: `bench` returns a `BenchOutcome`.
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
from orchestrator.images.gromacs import DEV_CURRENT, build_gromacs
from orchestrator.images.provenance import ImageRecord
from orchestrator.platforms.base import ProfileMode
from orchestrator.results.compare import Comparison, compare_runs
from orchestrator.runs import runner, store
from orchestrator.runs.recipe import load_recipe
from orchestrator.runs.store import RunResult, RunStore
from orchestrator.workflows.build import toolchain_for


@dataclass
class BenchRequest:
    llvm: str | None = None
    toolchain: str | None = None
    package: str | None = None
    system: str | None = None
    tag: str | None = None
    steps: int | None = None
    repeats: int = 3
    no_llvm_rebuild: bool = False
    no_gmx_rebuild: bool = False
    profile: ProfileMode = "trace"
    mdrun_args: list[str] = field(default_factory=list)
    threshold_pct: float = 2.0
    alpha: float = 0.05


@dataclass
class Sides:
    """What `images` found or built: the baseline build and the one under test."""

    stable: ImageRecord
    candidate: ImageRecord


@dataclass
class Groups:
    """What `runs` left: the run groups to compare, and what running them cost."""

    baseline: str
    candidate: str
    results: list[RunResult] = field(default_factory=list)


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
    if req.repeats < 1:
        raise UsageError("--repeats must be at least 1.")
    started = time.monotonic()
    sides = images(client, settings, req, emit)
    groups = runs(client, settings, req, sides, emit)
    comparison = diff(settings, req, groups, emit)
    return BenchOutcome(
        comparison=comparison,
        runs=len(groups.results),
        container_seconds=sum(r.duration_seconds or 0.0 for r in groups.results),
        elapsed=time.monotonic() - started,
    )


def images(client: Client, settings: Settings, req: BenchRequest, emit: Emit) -> Sides:
    """The stable image, and the dev image of the compiler asked for (if any)."""
    emit(Step("GROMACS stable image"))
    stable = build_gromacs(client, settings, "stable", emit=emit)
    if req.no_gmx_rebuild:
        current = engine.image(client, DEV_CURRENT)
        if current is None:
            raise UserError(
                f"--no-gmx-rebuild: there is no {DEV_CURRENT} yet. Run once without "
                "--no-gmx-rebuild to build the dev image."
            )
        return Sides(stable, ImageRecord.from_labels(DEV_CURRENT, current.id, current.labels))
    if req.llvm:
        emit(Step(f"LLVM toolchain at {req.llvm}"))
    elif req.package:
        emit(Step(f"toolchain image from {req.package}"))
    toolchain = toolchain_for(
        client, settings, llvm=req.llvm, package=req.package, toolchain=req.toolchain,
        rebuild=not req.no_llvm_rebuild, emit=emit,
    )  # fmt: skip
    if toolchain is None:
        return Sides(stable, stable)
    emit(Step(f"GROMACS dev build with {toolchain}"))
    return Sides(stable, build_gromacs(client, settings, "dev", toolchain_tag=toolchain, emit=emit))


def runs(client: Client, settings: Settings, req: BenchRequest, sides: Sides, emit: Emit) -> Groups:
    """Baseline (when it has no runs yet) and candidate, interleaved, `repeats` each."""
    stable, candidate = sides.stable, sides.candidate
    system = load_recipe(req.system, settings.recipes_dirs).name
    default_tag = "aa" if candidate is stable else "bench"
    if candidate.llvm_commit:
        default_tag = f"llvm-{candidate.llvm_commit}"
    tag = req.tag or f"{default_tag}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    groups = Groups(
        baseline=store.run_id(stable.build or "", system, store.BASELINE_TAG),
        candidate=store.run_id(candidate.build or "", system, tag),
    )
    with_baseline = not RunStore(settings.results_dir).group(groups.baseline)
    n = req.repeats
    total = n * (2 if with_baseline else 1)
    for i in range(1, n + 1):
        if with_baseline:
            emit(Step(f"run {len(groups.results) + 1} of {total}: baseline {stable.build} on "
                      f"{system}"))  # fmt: skip
            base_tag = store.repeat_tag(store.BASELINE_TAG, i, n)
            groups.results.append(_run(client, settings, stable, system, base_tag, req, emit))
        emit(Step(f"run {len(groups.results) + 1} of {total}: {candidate.build} on {system}"))
        cand_tag = store.repeat_tag(tag, i, n)
        groups.results.append(_run(client, settings, candidate, system, cand_tag, req, emit))
    return groups


def _run(
    client: Client, settings: Settings, image: ImageRecord, system: str, tag: str,
    req: BenchRequest, emit: Emit,
) -> RunResult:  # fmt: skip
    request = runner.RunRequest(
        build=image.build or "", system=system, tag=tag, profile=req.profile,
        mdrun_args=req.mdrun_args, steps=req.steps, llvm_commit=image.llvm_commit,
    )  # fmt: skip
    result = runner.execute(client, settings, runner.plan_run(client, settings, request), emit)
    if not result.finished:
        raise UserError(
            f"Run {result.run_id} did not finish ({result.failure}); it is recorded as "
            f"unfinished in {settings.results_dir / result.run_id}. No verdict without it."
        )
    return result


def diff(settings: Settings, req: BenchRequest, groups: Groups, emit: Emit) -> Comparison:
    """Both groups compared, with the statistics and validity guards of `compare`."""
    emit(Step("diff"))
    results = RunStore(settings.results_dir)
    return compare_runs(
        results.finished(groups.baseline),
        results.finished(groups.candidate),
        threshold_pct=req.threshold_pct,
        alpha=req.alpha,
    )
