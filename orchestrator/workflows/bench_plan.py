"""What a bench compares and runs, settled before anything is built.

`settle` checks every option and resolves both sides' compilers (commits through git,
no engine) in seconds, so a typo stops the bench before an hour of building, never
after. By default a change is measured against the same LLVM without it: a commit
against its first parent, a working tree with edits against its `HEAD` (as rustc-perf
and the LLVM compile-time tracker compare); two different compilers differ in every
kernel, which would bury the patch under what they always differ in. `plan` is what
`--dry-run` prints: each image built or reused, the runs, and how long each should take
from what this machine stored before.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.settings import Settings, check_flags
from orchestrator.engine import Client
from orchestrator.images import native
from orchestrator.images.catalog import list_images
from orchestrator.images.gitsource import ResolvedCommit, base_of, is_url
from orchestrator.images.gromacs import DEV_CURRENT
from orchestrator.images.provenance import ImageRecord, Lockfile, load_lockfile
from orchestrator.images.toolchain_llvm import llvm_tag, resolve_llvm
from orchestrator.platforms import active
from orchestrator.platforms.base import FLAGS, ProfileMode, flags_suffix
from orchestrator.platforms.roles import Platform
from orchestrator.runs.executors import EXECUTORS
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import load_system
from orchestrator.runs.runner import check_limits
from orchestrator.store.layout import lockfiles
from orchestrator.verdict.paired import MIN_PAIRS, repeat_plan
from orchestrator.workflows.budget import (
    Fit,
    budget_seconds,
    duration,
    fit,
    stored_runs,
    traced,
)
from orchestrator.workflows.build import CompilerSpec
from orchestrator.workflows.options import (
    ALPHA,
    CPU_ONLY,
    DRY_RUN,
    REPEATS,
    STEPS,
    SYSTEM,
    TAG,
    THRESHOLD,
    OneOf,
    Option,
    option,
)
from orchestrator.workflows.placement import AUTO

#: `--against stable`: the stable image (the vendor compiler), today's "dev vs stable".
STABLE = "stable"


def _against(kind: str, name: str) -> CompilerSpec:
    """`--against stable` is the stable image; any other name an existing GROMACS build."""
    return CompilerSpec("stable") if name == STABLE else CompilerSpec.of(kind, name)


@dataclass
class BenchRequest:
    """The candidate's compiler (none: A/A), the baseline's (none: the candidate's parent
    or `HEAD`, else the stable image), and how to run and judge them. Each field declares
    its `bench` option (`workflows.options`), in the order `--help` lists them."""

    candidate: CompilerSpec | None = option(OneOf(
        {
            "llvm": Option("--llvm", help="LLVM commit (measured against its parent) or a "
                           "checkout path: the working tree as it is (against its HEAD)"),
            "toolchain": Option("--toolchain",
                                help="existing toolchain image holding the dev compiler"),
            "package": Option("--package",
                              help="distribution compiler package for the toolchain (clang-16)"),
            "flags": Option("--flags", metavar="'FLAGS'",
                            help="the stable compiler with these flags added for the compiler "
                            "under test, written --flags='-Xptxas -maxrregcount=64': a "
                            "compiler option's A/B"),
        },
        CompilerSpec.of, "Give at most one of --llvm, --toolchain, --package and --flags (got "
        "{given}): they name the candidate's compiler.",
    ))  # fmt: skip
    baseline: CompilerSpec | None = option(OneOf(
        {
            "llvm": Option("--against-llvm",
                           help="baseline: this LLVM commit instead of the parent"),
            "toolchain": Option("--against-toolchain",
                                help="baseline: the dev build of this toolchain image"),
            "package": Option("--against-package",
                              help="baseline: the dev build of this compiler package"),
            "build": Option("--against", help="baseline: `stable` (the vendor compiler's "
                            "image) or an existing GROMACS build"),
        },
        _against, "Give at most one of --against, --against-llvm, --against-toolchain and "
        "--against-package (got {given}): they name the baseline.",
        order=("build", "llvm", "toolchain", "package"),
    ))  # fmt: skip
    cpu_only: bool = option(CPU_ONLY, help="run GPU builds on the host CPU only (no GPU "
                            "here): the verdict is host code's")  # fmt: skip
    system: str | None = option(SYSTEM, help="recipe system (default: water); auto: the "
                                "cheapest that runs the changed kernels")  # fmt: skip
    #: Measure even when no kernel changed (the codegen diff finds nothing to measure).
    measure_anyway: bool = option(default=False, help="run both sides even when the codegen "
                                  "diff finds no kernel changed")  # fmt: skip
    tag: str | None = option(TAG)
    steps: int | None = option(STEPS)
    #: Interleaved pairs: a number, "auto" or "auto:MAX" (`results.paired.repeat_plan`).
    repeats: int | str = option(
        REPEATS, default="auto", help="interleaved pairs: N, auto, auto:MAX"
    )
    #: The runs' time (`10m`, `90s`, `1h`): pairs, and steps where a trace allows, fitted
    #: to it (`workflows.budget`); None: ORCH_BENCH_BUDGET, else no budget.
    budget: str | None = option(help="the runs' time (10m, 90s, 1h): pairs and steps fitted to it")
    no_llvm_rebuild: bool = option(default=False)
    no_gmx_rebuild: bool = option(default=False)
    #: Print the plan (images built or reused, runs, estimated times); build nothing.
    dry_run: bool = option(DRY_RUN, help="print the plan (images built or reused, runs, "
                           "estimated times); build nothing")  # fmt: skip
    threshold_pct: float = option(THRESHOLD)
    alpha: float = option(ALPHA)
    #: None: the platform's own (the kernel trace where the image's stack has a profiler).
    profile: ProfileMode | None = option(
        choices=("none", "trace"),
        help="the runs' profiler: trace (the platform's default "
        "where it has one: rocprofv3, ncu) or none (wall-clock ns/day alone)",
    )
    mdrun_args: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BenchSide:
    """One side's compiler as resolved: an LLVM revision (in a source both sides share), a
    package, a toolchain image, an existing GROMACS build, or the stable image."""

    words: str  # how the headline names it: `parent 1a2b3c4d`, `HEAD 1a2b3c4d`, `stable`
    compiler: CompilerSpec
    llvm: ResolvedCommit | None = None
    llvm_source: str | None = None  # where an LLVM revision resolves: one workspace

    @property
    def stable(self) -> bool:
        return self.compiler.kind == "stable"


@dataclass(frozen=True)
class Settled:
    """A checked request, its two sides, and what was adjusted (said before the runs)."""

    request: BenchRequest
    baseline: BenchSide
    candidate: BenchSide | None  # None: the baseline against itself (A/A, the noise floor)
    notes: list[str] = field(default_factory=list)


def check_numbers(
    *, steps: int | None = None, threshold_pct: float | None = None, alpha: float | None = None
) -> None:
    """Steps, marker threshold and significance level, each refused with its fix: a
    negative step count would run mdrun for ever, and an alpha outside (0, 1) or a
    negative threshold would fail only after every pair ran."""
    check_limits(steps=steps)
    if threshold_pct is not None and not (math.isfinite(threshold_pct) and threshold_pct >= 0):
        raise UsageError(f"--threshold {threshold_pct:g}: give a percentage of 0 or more "
                         "(2 means a marker needs a change beyond 2%).")  # fmt: skip
    if alpha is not None and not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha:g}: the significance level lies between 0 and 1 "
                         "(0.05 is usual).")  # fmt: skip


def check_options(req: BenchRequest) -> tuple[BenchRequest, list[str]]:
    """Every number of `req`, with each fix said (one compiler a side is its type's);
    pairs raised to what a verdict needs and to an even count (ABBA order cancels a
    linear drift only over an even number of pairs, as in bisect)."""
    check_numbers(steps=req.steps, threshold_pct=req.threshold_pct, alpha=req.alpha)
    if req.budget is not None:
        budget_seconds(req.budget)  # a bad --budget says what it takes
    plan = repeat_plan(req.repeats)  # a bad --repeats says what it takes
    notes = []
    if not plan.adaptive and (plan.most < MIN_PAIRS or plan.most % 2):
        pairs = max(MIN_PAIRS, plan.most)
        pairs += pairs % 2
        why = f"a verdict needs at least {MIN_PAIRS} pairs"
        if plan.most >= MIN_PAIRS:
            why = "ABBA order cancels a linear drift only over an even number of pairs"
        notes.append(f"--repeats {req.repeats}: {pairs} pairs instead ({why})")
        req = replace(req, repeats=pairs)
    return req, notes


def settle(settings: Settings, req: BenchRequest) -> Settled:
    """`req` checked and both sides resolved, without the engine: a mistake in any option,
    system or commit is a `UsageError` in seconds, before anything is built; so is a
    budget that no plan fits, where this machine's stored runs say so."""
    if req.budget is None and settings.bench_budget is not None:
        req = replace(req, budget=settings.bench_budget)
    req, notes = check_options(req)
    if req.system != AUTO:
        load_system(req.system, settings.recipes_dirs)  # an unknown system names the known
        fitted(settings, req)
    candidate: BenchSide | None = None
    spec = req.candidate
    if spec is not None and spec.kind == "llvm":
        commit = resolve_llvm(settings, spec.name)
        candidate = BenchSide(f"LLVM {commit.label}", spec, commit, commit.source if not is_url(
            commit.source) else settings.llvm_source)  # fmt: skip
    elif spec is not None and spec.kind == "flags":
        candidate = BenchSide(f"flags {flags_of(spec.name)}", spec)
    elif spec is not None:
        candidate = BenchSide(spec.name or STABLE, spec)
    _native_sides(settings, (spec, req.baseline), req.no_gmx_rebuild)
    native = not EXECUTORS[settings.executor].needs_engine
    system = None if req.system == AUTO else load_system(req.system, settings.recipes_dirs)
    if native and isinstance(system, ResolvedMicrobench):
        raise UsageError(f"{req.system} is a microbenchmark, whose programs are built in "
                         "images: the native executor benches GROMACS recipes.")  # fmt: skip
    return Settled(req, _baseline(settings, req, candidate), candidate, notes)


def flags_of(value: str) -> str:
    """`--flags` checked as the `device_flags` setting checks them."""
    try:
        checked = check_flags(value)
    except ValueError as exc:
        raise UsageError(f"--flags: {exc}.") from None
    if checked is None:
        raise UsageError("--flags needs the compiler flags to add, e.g. --flags='-O2'.")
    return checked


def _native_sides(
    settings: Settings, sides: tuple[CompilerSpec | None, ...], no_gmx_rebuild: bool
) -> None:
    """Without a container engine (the native executor) a side is the stable compiler,
    with flags or not, or an existing native build: no toolchain image can be made."""
    if EXECUTORS[settings.executor].needs_engine:
        return
    for spec in sides:
        if spec is not None and spec.kind in ("llvm", "toolchain", "package", "tree"):
            raise UsageError(
                f"The native executor builds GROMACS with the stable compiler only (no "
                f"toolchain images without an engine), so a {spec.kind} side cannot be built "
                "here. Compare compiler options with --flags, or existing native builds with "
                "--against."
            )
    if no_gmx_rebuild:
        raise UsageError("--no-gmx-rebuild reuses dev-current, which the native executor "
                         "does not build; leave it out.")  # fmt: skip


def _baseline(settings: Settings, req: BenchRequest, candidate: BenchSide | None) -> BenchSide:
    spec = req.baseline
    if spec is not None and spec.kind != "llvm":
        return BenchSide(spec.name or STABLE, spec)
    local = candidate is not None and candidate.llvm is not None and not is_url(
        candidate.llvm.source)  # fmt: skip
    source = candidate.llvm.source if local and candidate and candidate.llvm else None
    if spec is not None:  # in the candidate's checkout when it has one: one workspace
        lookup = settings.model_copy(update={"llvm_source": source}) if source else settings
        commit = resolve_llvm(lookup, spec.name)
        return BenchSide(f"LLVM {commit.label}", spec, commit, source or settings.llvm_source)
    if candidate is None or candidate.llvm is None:
        # A/A, or a package or toolchain: no parent to speak of
        return BenchSide(STABLE, CompilerSpec("stable"))
    base = base_of(candidate.llvm)
    how = "HEAD" if candidate.llvm.dirty else "parent"
    return BenchSide(f"{how} {base.short}", CompilerSpec("llvm", base.full), base, base.source)


def fitted(
    settings: Settings, req: BenchRequest, platform: Platform | None = None,
    stack: str | None = None,
) -> Fit | None:  # fmt: skip
    """The runs of `req` fitted to its budget (None: no budget, or a system not yet
    picked), on `platform` with `stack` (default: this host's, the settings' stack)."""
    if req.budget is None or req.system == AUTO:
        return None
    system = load_system(req.system, settings.recipes_dirs)
    on = platform or active(settings)
    trace = traced(on, stack or settings.rocm_stack, req.profile, req.cpu_only, system)
    return fit(settings, budget=budget_seconds(req.budget), system=system,
               plan=repeat_plan(req.repeats), steps=req.steps, cpu_only=req.cpu_only,
               trace=trace)  # fmt: skip


def llvm_settings(settings: Settings, side: BenchSide) -> Settings:
    """The settings that resolve the side's LLVM revision where the side was resolved."""
    if side.llvm_source is None or side.llvm_source == settings.llvm_source:
        return settings
    return settings.model_copy(update={"llvm_source": side.llvm_source})


# --- the plan (`--dry-run`) ----------------------------------------------------------


@dataclass
class PlanLine:
    """One thing the bench does: its words and its estimated seconds (None: unknown)."""

    what: str
    seconds: float | None
    basis: str  # where the estimate comes from, or why there is none


def plan(client: Client | None, settings: Settings, settled: Settled) -> list[PlanLine]:
    """Images to build or reuse and the runs, each with an estimate from this machine's
    stored builds (lockfiles) and runs; nothing is built or started."""
    records = list_images(client, ("gromacs", "toolchain")) if client else native.records(settings)
    locks = _lockfiles(settings.results_dir)
    lines = []
    sides = [("baseline", settled.baseline)]
    if settled.candidate is not None:
        sides.append(("candidate", settled.candidate))
    for name, side in sides:
        lines.extend(_side_lines(settings, name, side, records, locks))
    lines.append(_runs_line(settings, settled))
    return lines


def _side_lines(
    settings: Settings, name: str, side: BenchSide, records: list[ImageRecord],
    locks: list[Lockfile],
) -> list[PlanLine]:  # fmt: skip
    platform = active(settings).name
    mine = [r for r in records if r.platform == platform and r.tag != DEV_CURRENT]
    kind, named = side.compiler.kind, side.compiler.name
    if kind == "build":
        found = [r for r in mine if r.build == named or r.tag == named]
        if not found:
            raise UsageError(f"--against {named}: no GROMACS build of that name here; "
                             "`nox -s images` lists those there are.")  # fmt: skip
        return [PlanLine(f"{name} ({side.words}): reuse {found[0].tag}", 0.0, "exists")]
    if side.stable or kind == "flags":
        flagged = settings.model_copy(update={"device_flags": named or None})
        suffix = flags_suffix(flagged if kind == "flags" else settings)
        stable = [
            r
            for r in mine
            if r.kind == "gromacs"
            and (r.build or "").startswith("stable")
            and (r.build or "").endswith(suffix)
            and (suffix or FLAGS not in (r.build or ""))
        ]
        what = f"{name} ({side.words})" if kind == "flags" else f"{name} (stable)"
        if stable:
            return [PlanLine(f"{what}: reuse {stable[0].tag}", 0.0, "exists")]
        how = "the stable compiler with these flags" if kind == "flags" else "the vendor compiler"
        return [PlanLine(f"{what}: build GROMACS with {how}",
                         *_estimate(locks, platform, "stable"))]  # fmt: skip
    lines = []
    tag = named if kind == "toolchain" else None
    if side.llvm is not None:
        tag = llvm_tag(llvm_settings(settings, side), side.llvm)
        if any(r.tag == tag for r in records):
            lines.append(PlanLine(f"{name} ({side.words}): reuse toolchain {tag}", 0.0, "exists"))
        else:
            lines.append(PlanLine(f"{name} ({side.words}): build LLVM {side.llvm.label} in the "
                                  "workspace", None, "hours the first time, minutes after a "
                                  "one-file edit"))  # fmt: skip
    elif kind == "package":
        lines.append(PlanLine(f"{name} ({side.words}): toolchain image from the package",
                              None, "a package install: minutes"))  # fmt: skip
    built = [r for r in mine if r.kind == "gromacs" and tag and r.toolchain == tag]
    if built:
        lines.append(PlanLine(f"{name}: reuse {built[0].tag}", 0.0, "exists"))
    else:
        lines.append(PlanLine(f"{name}: GROMACS dev build from the compile cache",
                              *_estimate(locks, platform, "dev")))  # fmt: skip
    return lines


def _lockfiles(results_dir: Path) -> list[Lockfile]:
    out = []
    for path in lockfiles(results_dir):
        try:
            out.append(load_lockfile(path))
        except UserError:  # a damaged lockfile only loses an estimate
            continue
    return out


def _estimate(locks: list[Lockfile], platform: str, flavor: str) -> tuple[float | None, str]:
    """The median of this machine's stored GROMACS builds of the same kind."""
    seconds = [
        lock.build_seconds for lock in locks
        if lock.build_seconds and lock.record.platform == platform
        and (lock.record.build or "").startswith(flavor)
    ]  # fmt: skip
    if not seconds:
        return None, "no estimate: never built here"
    return statistics.median(seconds), f"median of {len(seconds)} stored builds"


def _runs_line(settings: Settings, settled: Settled) -> PlanLine:
    req = settled.request
    rp = repeat_plan(req.repeats)
    pairs = f"{rp.start}" if not rp.adaptive else f"{rp.start}–{rp.most}"
    if req.system == AUTO:
        return PlanLine(f"{pairs} interleaved pairs on the system --system auto picks", None,
                        "no estimate: the system is picked after the codegen diff")  # fmt: skip
    budgeted = fitted(settings, req)
    if budgeted is not None:
        return PlanLine(budgeted.words, budgeted.seconds, budgeted.basis or "no estimate")
    system = load_system(req.system, settings.recipes_dirs).name
    what = f"{pairs} interleaved pairs ({2 * rp.start}"
    what += f"–{2 * rp.most}" if rp.adaptive else ""
    what += f" runs) on {system}"
    each = run_seconds(settings, system, req.steps)
    if each is None:
        return PlanLine(what, None, "no estimate: never run here")
    seconds, basis = each
    if rp.adaptive:
        basis += f"; up to {2 * rp.most * seconds / 60:.0f} min if every pair is needed"
    return PlanLine(what, 2 * rp.start * seconds, basis)


def run_seconds(settings: Settings, system: str, steps: int | None) -> tuple[float, str] | None:
    """A run's seconds on `system` here: the median of stored finished runs, those with
    the same steps when there are any."""
    done = stored_runs(settings, system)
    same = [r for r in done if steps is None or r.steps == steps] or done
    if not same:
        return None
    each = statistics.median(r.duration_seconds or 0.0 for r in same)
    return each, f"{each:.0f} s a run, the median of {len(same)} stored runs"


def plan_text(lines: list[PlanLine]) -> str:
    """The plan as `--dry-run` prints it, with the total of what has an estimate."""
    out = []
    for line in lines:
        when = "—" if line.seconds is None else duration(line.seconds)
        out.append(f"  {line.what}: {when} ({line.basis})")
    known = [line.seconds for line in lines if line.seconds is not None]
    unknown = sum(line.seconds is None for line in lines)
    total = f"total: {duration(sum(known))}"
    if unknown:
        total += f" and {unknown} step{'s' if unknown > 1 else ''} with no estimate"
    return "\n".join(["plan (nothing is built or run):", *out, total])
