"""The compiler loop (the field report's bench-llvm-commit): build, run both sides, diff.

Four steps, each returning what the next one needs: `settle` (every option checked and
both sides' compilers resolved, in seconds: `workflows.bench_plan`) → `images` (the LLVM
or package toolchains, GROMACS dev builds, or the stable image) → `run_pairs` (baseline
and candidate measured now, in interleaved pairs, a fixed number or adaptively) → `diff`
(paired statistics). An LLVM commit is measured against its parent, a working tree
against its `HEAD`: the patch's own effect. Without a compiler the candidate is the
stable image itself: an A/A comparison that shows the noise floor of this machine. The
report and the webhook are the caller's: `bench` returns a `BenchOutcome`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from orchestrator import engine
from orchestrator.codegen.diff import CodegenDiff
from orchestrator.codegen.table import summary_lines
from orchestrator.codegen.targets import nothing_to_measure, targets_line, verdict_note
from orchestrator.codegen.workflow import builds_codegen, keep_asm_diffs, kernels_codegen
from orchestrator.core.errors import UserError
from orchestrator.core.events import Caution, Emit, Message, Step, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images import microbench, native
from orchestrator.images.gromacs import DEV_CURRENT, build_gromacs, gromacs_ref, record_of
from orchestrator.images.provenance import ImageRecord, label
from orchestrator.images.user_kernels import UserProgram
from orchestrator.report.words import headline_text
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import load_system
from orchestrator.store.database import BenchRecord, record_bench
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.groups import compare_groups
from orchestrator.verdict.model import Direction
from orchestrator.workflows.bench_plan import BenchRequest as BenchRequest  # its callers' name
from orchestrator.workflows.bench_plan import (
    BenchSide,
    Settled,
    llvm_settings,
    settle,
)
from orchestrator.workflows.build import toolchain_for
from orchestrator.workflows.pairs import Groups, run_pairs
from orchestrator.workflows.placement import AUTO, place


@dataclass
class Sides:
    """What `images` found or built: the baseline build and the one under test."""

    baseline: ImageRecord
    candidate: ImageRecord
    #: How the headline names the baseline (`parent 1a2b3c4d`, `stable`).
    base: str = "stable"


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
    #: How the baseline is named (`parent 1a2b3c4d`, `stable`).
    base: str | None = None

    @property
    def outside_seconds(self) -> float:
        return self.elapsed - self.container_seconds

    @property
    def verdict(self) -> str:
        """`faster`, `slower`, `no change`, `too busy` (no verdict: `verdict.busy`) or
        `nothing measured` (the database's word)."""
        if self.comparison is None:
            return "nothing measured"
        if self.comparison.too_busy:
            return "too busy"
        direction = self.comparison.headline.claimed
        return {Direction.FASTER: "faster", Direction.SLOWER: "slower"}.get(direction, "no change")

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
    client: Client | None, settings: Settings, req: BenchRequest | Settled, emit: Emit = ignore
) -> BenchOutcome:
    """Check everything, build, diff the code, then measure where the change runs (or
    nothing: no kernel changed); the outcome is recorded in the results database either
    way."""
    settled = req if isinstance(req, Settled) else settle(settings, req)
    req = settled.request
    for note in settled.notes:
        emit(Message(note))
    started = time.monotonic()
    sides = images(client, settings, settled, emit)
    codegen, codegen_seconds = None, None
    program = _user_program(settings, req)
    if program is not None or not _microbench(settings, req):
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
            _system_name(settings, req), sides.base,
        )  # fmt: skip
        record_bench(settings, _row(outcome, sides, None), emit)
        return outcome
    req = placed(settings, req, codegen, emit)
    groups = run_pairs(client, settings, req, sides.baseline, sides.candidate,
                       _microbench(settings, req), emit)  # fmt: skip
    comparison = diff(settings, req, groups, emit, codegen)
    if sides.candidate is not sides.baseline:
        comparison.base = sides.base
    if program is None and client is not None:  # a user kernel's code: in its images
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
        base=comparison.base,
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
    return not codegen.changed and all(
        not c.only_baseline and not c.only_candidate for c in categories
    )


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
    if _microbench(settings, req) or (codegen is None and req.system != AUTO):
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
        headline=headline_text(cmp) if cmp is not None else outcome.nothing_measured or "",
        changed_kernels=len(outcome.codegen.changed) if outcome.codegen is not None else None,
        runs=outcome.runs,
        elapsed_seconds=outcome.elapsed,
        baseline_group=groups.baseline if groups else None,
        candidate_group=groups.candidate if groups else None,
    )


def _microbench(settings: Settings, req: BenchRequest) -> bool:
    """A microbenchmark needs the compiler, not GROMACS: its sides are toolchain images."""
    if req.system == AUTO:
        return False
    return isinstance(load_system(req.system, settings.recipes_dirs), ResolvedMicrobench)


def _user_program(settings: Settings, req: BenchRequest) -> UserProgram | None:
    """A user's own kernel (a recipe's `[sources]`): its code is diffed before the runs,
    like GROMACS's kernels; our programs' is not."""
    if req.system == AUTO:
        return None
    system = load_system(req.system, settings.recipes_dirs)
    if isinstance(system, ResolvedMicrobench) and isinstance(system.program, UserProgram):
        return system.program
    return None


def images(client: Client | None, settings: Settings, settled: Settled, emit: Emit) -> Sides:
    """The baseline (the candidate's parent or `HEAD`, the stable image, or what the
    `against` options name) and the dev image of the compiler asked for (none: the
    baseline itself, an A/A comparison). For a microbenchmark, a compiler's side is
    its toolchain image: no GROMACS is built."""
    req = settled.request
    if req.no_gmx_rebuild and client is not None:  # before a baseline's dev build moves it
        current = engine.image(client, DEV_CURRENT)
        if current is None:
            raise UserError(
                f"--no-gmx-rebuild: there is no {DEV_CURRENT} yet. Run once without "
                "--no-gmx-rebuild to build the dev image."
            )
        record = ImageRecord.from_labels(DEV_CURRENT, current.id, current.labels)
        baseline = _side(client, settings, req, settled.baseline, True, emit, "baseline")
        engine.tag(client, current.id, DEV_CURRENT)
        return Sides(baseline, record, settled.baseline.words)
    baseline = _side(client, settings, req, settled.baseline, True, emit, "baseline")
    if settled.candidate is None:
        return Sides(baseline, baseline, settled.baseline.words)
    candidate = _side(client, settings, req, settled.candidate, not req.no_llvm_rebuild,
                      emit, "candidate")  # fmt: skip
    return Sides(baseline, candidate, settled.baseline.words)


def _side(
    client: Client | None, settings: Settings, req: BenchRequest, side: BenchSide,
    rebuild: bool, emit: Emit, name: str,
) -> ImageRecord:  # fmt: skip
    """One side's GROMACS build (or, for a microbenchmark, its toolchain image)."""
    kind, named = side.compiler.kind, side.compiler.name
    if kind == "build":
        return _existing(client, settings, named)
    if side.stable or kind == "flags":
        flags = {"device_flags": named} if kind == "flags" else {}
        emit(Step(f"{name}: GROMACS stable build" + (f" with {named}" if flags else "")))
        return _stable(client, settings.model_copy(update=flags), emit)
    assert client is not None, "settle refuses toolchain sides without an engine"
    if kind == "llvm":
        emit(Step(f"{name} ({side.words}): LLVM toolchain at {named}"))
    elif kind == "package":
        emit(Step(f"{name}: toolchain image from {named}"))
    tag = toolchain_for(
        client, llvm_settings(settings, side), side.compiler, rebuild=rebuild, emit=emit
    )
    assert tag is not None, side
    if _microbench(settings, req):
        image = engine.image(client, tag)
        assert image is not None, tag
        record = ImageRecord.from_labels(tag, image.id, image.labels)
        return record.model_copy(update={"build": microbench.build_name(image, tag)})
    emit(Step(f"{name}: GROMACS dev build with {tag}"))
    return build_gromacs(client, settings, "dev", toolchain_tag=tag, emit=emit)


def _stable(client: Client | None, settings: Settings, emit: Emit) -> ImageRecord:
    """The stable build (with the settings' `device_flags`): an image, or natively
    installed where there is no engine (`images.native`)."""
    if client is None:
        record = native.build_native(settings, "stable", emit)
        if settings.device_flags and record.build:  # the build under test, as a dev one
            native.point_dev_current(settings, record.build)
        return record
    return build_gromacs(client, settings, "stable", emit=emit)


def _existing(client: Client | None, settings: Settings, named: str) -> ImageRecord:
    """`--against <build>`: an existing GROMACS image, or native build."""
    if client is None:
        found = native.find(settings, named)
        if found is None:
            raise UserError(
                f"--against {named}: no native build {named} in {settings.native_root}. "
                "`ls` that folder for the builds there are."
            )
        return found.record
    image = engine.image(client, gromacs_ref(named))
    if image is None or label("build") not in image.labels:
        raise UserError(
            f"--against {named}: no GROMACS image {gromacs_ref(named)} of this "
            "tool in the engine. `nox -s images` lists the builds there are."
        )
    return record_of(image)


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
