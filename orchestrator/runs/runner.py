"""One run: one container of one image on one system, with a tag (the field report's gmxrun).

The run directory (`runstore.RunStore`) is mounted at /run; mdrun writes there, and the
host gets `result.json` whatever happens: a finished run with its numbers, or an
unfinished one with its failure (a timeout, a signal, the engine going away). No
container outlives the run; if the process itself dies (SIGKILL), the record names
its owner and its heartbeat stops, so readers call it abandoned and `clean_runs`
removes the container.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator import engine
from orchestrator.core import interrupts
from orchestrator.core.errors import NoSpace, UsageError, UserError, filled_up, space_for
from orchestrator.core.events import Caution, Emit, Event, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client, EngineGone
from orchestrator.images import microbench
from orchestrator.images.gitsource import checked_commit
from orchestrator.images.gromacs import gromacs_ref
from orchestrator.images.provenance import container_labels, label
from orchestrator.parsers.mdlog import MdLog, parse_mdlog
from orchestrator.platforms import active, get, host_cpu
from orchestrator.platforms.base import ProfileMode, ProfilerOptions
from orchestrator.platforms.roles import Platform
from orchestrator.runs import microbench_runs
from orchestrator.runs.hostinfo import HostInfo, NoiseSampler
from orchestrator.runs.hostinfo import collect as collect_host
from orchestrator.runs.inputs import fetch_inputs
from orchestrator.runs.liveness import Owner, heartbeat
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import ResolvedSystem, load_system
from orchestrator.store import database, layout, runstore
from orchestrator.store.layout import codegen_path
from orchestrator.store.records import ImageRef, RunResult, placement
from orchestrator.store.runstore import RunStore


@dataclass(frozen=True)
class RunStarted(Event):
    """A run's container is about to start; its record is on disk."""

    result: RunResult


@dataclass(frozen=True)
class RunEnded(Event):
    """A run ended, finished or not; `log_tail` says why when it did not finish."""

    result: RunResult
    log_tail: str = ""


#: This process, as run records and container labels name it.
OWNER = Owner.current()


@dataclass
class RunRequest:
    build: str
    system: str | None = None
    tag: str | None = None
    profile: ProfileMode = "none"
    mdrun_args: list[str] = field(default_factory=list)
    steps: int | None = None
    device: int = 0
    timeout: float = 3600.0
    inputs_dir: Path | None = None
    llvm_commit: str | None = None
    #: Run a GPU build on the host CPU only (`-nb cpu -pme cpu`, no devices): proves a
    #: GPU image complete on a machine without a GPU, or measures its host code.
    cpu_only: bool = False
    #: rocprof-sys's mode and settings, rocprof-compute's arguments, over the recipe's.
    profiler: ProfilerOptions | None = None
    #: Index the run in the results database as it ends; a batch job's run is indexed by
    #: the host that submitted it instead, which holds the database's address.
    record: bool = True

    def __post_init__(self) -> None:
        check_limits(steps=self.steps, timeout=self.timeout)


def check_limits(*, steps: int | None = None, timeout: float | None = None) -> None:
    """A step count or timeout of zero or less would run mdrun for ever, or never."""
    if steps is not None and steps <= 0:
        raise UsageError(f"--steps {steps}: give a positive number of MD steps (or leave it "
                         "out for the system's own).")  # fmt: skip
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout {timeout:g}: give a positive number of seconds a run may "
                         "take.")  # fmt: skip


#: mdrun options that keep every task on the CPU, for `cpu_only` runs of GPU builds.
CPU_ONLY_ARGS = ["-nb", "cpu", "-pme", "cpu", "-bonded", "cpu", "-update", "cpu"]


@dataclass
class Plan:
    """Everything decided before a container starts; `--dry-run` prints it."""

    request: RunRequest
    system: ResolvedSystem | ResolvedMicrobench
    image_tag: str
    image_id: str
    labels: dict[str, str]
    build_name: str
    platform: Platform
    run_dir: Path
    tag: str
    steps: int | None
    ntomp: int
    mdrun: list[str]
    script: str
    container: dict[str, Any]
    problems: list[str]
    #: Run on the host from a native build's prefix (`runs.native`), not in a container.
    native: bool = False


def mdrun_command(
    ntomp: int, steps: int, recipe_args: list[str], user_args: list[str]
) -> list[str]:
    cmd = ["gmx", "mdrun", "-v", "-deffnm", layout.DEFFNM, "-ntmpi", "1", "-ntomp", str(ntomp)]
    cmd += ["-pin", "on"]
    if "-resetstep" not in user_args:
        cmd.append("-resethway")
    if "-nsteps" not in user_args:
        cmd += ["-nsteps", str(steps)]
    return cmd + [a for a in recipe_args if a not in user_args] + user_args


def user_steps(args: list[str]) -> int | None:
    if "-nsteps" in args:
        i = args.index("-nsteps")
        if i + 1 < len(args) and args[i + 1].lstrip("-").isdigit():
            return int(args[i + 1])
    return None


def plan_run(
    client: Client, settings: Settings, req: RunRequest, *, allow_missing: bool = False,
    emit: Emit = ignore, platform: Platform | None = None,
) -> Plan:  # fmt: skip
    """Everything about a run that can be decided before it starts.

    With `allow_missing` (`--dry-run`), an image that is not built yet is planned for on
    the configured platform and named among the problems, so a GPU configuration can be
    checked before a long build. A microbenchmark recipe's run needs the build's
    microbenchmark image, which is made here when missing (seconds: `images.microbench`).

    `platform` plans on that platform instead of the registered one the image's labels
    name: one whose /dev and /sys are other trees (a test's fake GPU).
    """
    system = load_system(req.system, settings.recipes_dirs)
    if isinstance(system, ResolvedMicrobench):
        return _plan_microbench(client, settings, req, system, emit)
    ref = gromacs_ref(req.build)
    image = engine.image(client, ref)
    how = (
        "`nox -s build -- stable` (or `nox -s build -- dev --toolchain <image>`); "
        "`nox -s images` lists what exists"
    )
    if image is None and not allow_missing:
        raise UserError(f"Image {ref} is not in the engine. Build it first: {how}.")
    missing = f"image {ref} is not in the engine yet: build it first, {how}"
    labels = image.labels if image is not None else {}
    if labels.get(label("llvm_commit")) is not None:  # someone else's text: checked now
        checked_commit(labels[label("llvm_commit")], f"the label of image {ref}")
    build_name = labels.get(label("build")) or req.build
    platform_name = labels.get(label("platform"))
    if platform is None:
        platform = get(platform_name) if platform_name else active(settings)
    if req.cpu_only:
        platform = host_cpu()
    steps = user_steps(req.mdrun_args) or req.steps or system.default_steps
    tag = req.tag or default_tag()
    run_dir = RunStore(settings.results_dir).path(layout.run_id(build_name, system.name, tag))
    ntomp = settings.jobs
    user_args = req.mdrun_args
    if req.cpu_only:
        user_args = [*user_args, *(a for a in CPU_ONLY_ARGS if a not in user_args)]
    mdrun = mdrun_command(ntomp, steps, system.mdrun_args, user_args)
    profiler = (system.profiler or ProfilerOptions()).merged(req.profiler)
    script = run_script(system, steps, platform, mdrun, req.profile, profiler)
    options = platform.run.container_options(req.device, req.profile, engine.kind(client))
    options.confined(engine.container_user(engine.kind(client)), settings.run_pids_limit)
    container: dict[str, Any] = {
        "image": image.id if image is not None else ref,
        "image_tag": ref,
        "command": ["sh", f"{layout.CONTAINER_DIR}/{layout.SCRIPT_FILE}"],
        "working_dir": layout.CONTAINER_DIR,
        "volumes": {str(run_dir.resolve()): {"bind": layout.CONTAINER_DIR, "mode": "rw"}},
        "environment": {"OMP_NUM_THREADS": str(ntomp), **options.environment},
        "labels": container_labels("run", run_dir.name, OWNER.model_dump_json()),
        "network_disabled": True,
        **options.engine_kwargs(),
    }
    problems = platform.run.preflight(
        labels.get(label("simd")), labels.get(label("gpu_arch")), options,
        profile=req.profile, variant=labels.get(label("rocm_stack")), image=ref,
    )  # fmt: skip
    if image is None:
        problems.insert(0, missing)
    image_id = image.id if image is not None else ""
    return Plan(req, system, ref, image_id, labels, build_name, platform, run_dir, tag,
                steps, ntomp, mdrun, script, container, problems)  # fmt: skip


def run_script(
    system: ResolvedSystem, steps: int, platform: Platform, mdrun: list[str],
    profile: ProfileMode, profiler: ProfilerOptions, workdir: str = layout.CONTAINER_DIR,
) -> str:  # fmt: skip
    """run.sh: prepare topol.tpr, then mdrun (under the profiler asked for), in `workdir`
    (the run directory: /run in a container, its own path natively)."""
    return (
        "#!/bin/sh\n# written by gmxbench: prepare topol.tpr, then mdrun\n"
        f"cd {workdir}\n"
        f"date +%s.%N > {layout.TIMES_FILE}\n"
        + system.setup_script(f"{workdir}/{layout.INPUTS_DIR}", steps)
        + f"date +%s.%N >> {layout.TIMES_FILE}\n"
        + platform.profiler.launch(mdrun, profile, workdir, profiler)
    )


def default_tag() -> str:
    """A run's tag when none is given: when it started, in UTC."""
    return datetime.now(UTC).strftime("run-%Y%m%d-%H%M%S")


def run_id_of(client: Client, settings: Settings, req: RunRequest) -> str:
    """The id `plan_run` will give this request's run (its tag given), building nothing:
    what a batch job is named by, so a restarted orchestrator finds its jobs."""
    assert req.tag, "a run handed to an executor has its tag"
    system = load_system(req.system, settings.recipes_dirs)
    ref = gromacs_ref(req.build)
    image = engine.image(client, ref)
    build = req.build
    if isinstance(system, ResolvedMicrobench) and image is not None:
        build = microbench.build_name(image, ref)
    elif image is not None:
        build = image.labels.get(label("build")) or req.build
    return layout.run_id(build, system.name, req.tag)


def _plan_microbench(
    client: Client, settings: Settings, req: RunRequest, system: ResolvedMicrobench, emit: Emit
) -> Plan:
    """A microbenchmark's plan: its program in the build's microbenchmark image (not profiled)."""
    req = replace(req, profile="none")
    image = microbench.ensure(client, settings, req.build, system.program, emit)
    platform = get(image.labels.get(label("platform")) or "cpu")
    tag = req.tag or default_tag()
    run_dir = RunStore(settings.results_dir).path(layout.run_id(image.build, system.name, tag))
    argv, redirect = microbench_runs.command(system, image, layout.CONTAINER_DIR)
    script = microbench_runs.script(argv, redirect, layout.TIMES_FILE, layout.CONTAINER_DIR)
    options = platform.run.container_options(req.device, engine=engine.kind(client))
    options.confined(engine.container_user(engine.kind(client)), settings.run_pids_limit)
    container: dict[str, Any] = {
        "image": image.id,
        "image_tag": image.tag,
        "command": ["sh", f"{layout.CONTAINER_DIR}/{layout.SCRIPT_FILE}"],
        "working_dir": layout.CONTAINER_DIR,
        "volumes": {str(run_dir.resolve()): {"bind": layout.CONTAINER_DIR, "mode": "rw"}},
        "environment": {"OMP_NUM_THREADS": str(settings.jobs), **options.environment},
        "labels": container_labels("run", run_dir.name, OWNER.model_dump_json()),
        "network_disabled": True,
        **options.engine_kwargs(),
    }
    # the GPU targets its program was compiled for, where its labels name them
    problems = platform.run.preflight(
        None, image.labels.get(label("gpu_arch")), options, image=image.tag
    )
    return Plan(req, system, image.tag, image.id, image.labels, image.build, platform, run_dir,
                tag, None, settings.jobs, argv, script, container, problems)  # fmt: skip


def dry_run_text(plan: Plan) -> str:
    shown = {**plan.container, "run_dir": str(plan.run_dir), layout.SCRIPT_FILE: plan.script}
    if plan.problems:
        shown["preflight_problems"] = plan.problems
    return json.dumps(shown, indent=2)


def _prepare(settings: Settings, plan: Plan, run_dir: Path, emit: Emit) -> None:
    """The inputs copy and run.sh in a new run directory."""
    if isinstance(plan.system, ResolvedSystem) and not plan.system.generated:
        inputs = fetch_inputs(
            plan.system, settings.cache_dir, inputs_dir=plan.request.inputs_dir, emit=emit
        )
        assert inputs is not None
        for rel in plan.system.required_files():
            target = run_dir / layout.INPUTS_DIR / rel
            with space_for(target, "an input file of the run"):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(inputs / rel, target)
    with space_for(run_dir / layout.SCRIPT_FILE, "the run's script"):
        (run_dir / layout.SCRIPT_FILE).write_text(plan.script)


#: Starts a plan's program and waits for it: its exit code, None when it timed out (and
#: was killed); `EngineGone` when what ran it went away. The container engine's by
#: default; the native executor's runs it on the host.
Launch = Callable[[Plan, str, Path, Emit], "int | None"]


def in_container(client: Client) -> Launch:
    """The plan's container, run on `client`'s engine."""

    def launch(plan: Plan, name: str, run_dir: Path, emit: Emit) -> int | None:
        config = {k: v for k, v in plan.container.items() if k != "image_tag"}
        return engine.run(
            client, config, name=name, timeout=plan.request.timeout,
            logs=(run_dir / layout.STDOUT_FILE, run_dir / layout.STDERR_FILE), emit=emit,
        )  # fmt: skip

    return launch


def execute(
    client: Client | None, settings: Settings, plan: Plan, emit: Emit = ignore,
    launch: Launch | None = None,
) -> RunResult:  # fmt: skip
    """Run the plan; leaves result.json (none when a full disk has no room even for a
    record of the failure: `NoSpace` says which) and never a container.

    Ctrl-C, SIGTERM and SIGHUP (`interrupts.Interrupted`) stop the container, record
    the run as unfinished with the reason, then interrupt the caller as they would have
    without us. An engine that goes away is recorded the same way, then raised.
    """
    if plan.problems:
        raise UserError(
            "Preflight failed, no container was started: " + "; ".join(plan.problems) + "."
        )
    runs = RunStore(settings.results_dir)
    run_dir = runs.create(plan.run_dir.name)
    try:
        _prepare(settings, plan, run_dir, emit)
        result = _new_record(plan, run_dir.name, collect_host(plan.platform))
        codegen = codegen_path(settings.results_dir, gromacs_ref(plan.build_name))
        with space_for(run_dir, "the run's provenance and heartbeat files"):
            if codegen.exists():  # the image's codegen fingerprint, as provenance
                shutil.copyfile(codegen, run_dir / layout.CODEGEN_FILE)
            (run_dir / layout.HEARTBEAT_FILE).touch()
        runs.save(run_dir, result)
    except BaseException as exc:
        shutil.rmtree(run_dir, ignore_errors=True)  # nothing half-made is left
        if isinstance(exc, NoSpace):
            raise exc.adding("No container was started and nothing was recorded.") from None
        raise
    for warning in result.host.warnings:
        emit(Caution(warning))
    started, stopped = time.monotonic(), None
    name = f"gmxbench-{run_dir.name}"[:120]
    if launch is None:
        assert client is not None, "a container run needs the engine"
        launch = in_container(client)
    noise = NoiseSampler(
        run_threads=plan.ntomp, own_container=name,
        containers=(lambda: engine.running_containers(client)) if client else None,
    )  # fmt: skip
    try:
        emit(RunStarted(f"{result.run_id} started", result))
        with heartbeat(run_dir / layout.HEARTBEAT_FILE), noise:
            code = launch(plan, name, run_dir, emit)
        program = "mdrun" if isinstance(plan.system, ResolvedSystem) else plan.system.program
        failure = None if code == 0 else f"{program} exited with code {code}"
        if code is None:
            failure = f"timed out after {plan.request.timeout:.0f} s: killed"
    except (KeyboardInterrupt, EngineGone, NoSpace) as exc:
        stopped, code, failure = exc, None, _why_stopped(exc)
    with interrupts.deferred():  # a second signal waits until the record is written
        result.duration_seconds = round(time.monotonic() - started, 3)
        result.return_code, result.failure = code, failure
        result.noise = noise.result()
        try:
            _fill(result, plan, run_dir)
        except NoSpace as exc:  # a breakdown or a profile that did not fit
            result.finished, result.failure, stopped = False, exc.failure, stopped or exc
            result.ns_per_day = result.hour_per_ns = result.mdrun_wall_seconds = None
        if stopped is None and not result.finished:  # its files filled the disk up?
            stopped = filled_up(run_dir, "the files the run's container writes")
            if stopped is not None:
                after = f" (after: {result.failure})" if result.failure else ""
                result.failure = stopped.failure + after
        try:
            recorded = RunStore.save_last(run_dir, result)
        except NoSpace as exc:  # it says what became of the record
            stopped = stopped.adding(exc.added) if isinstance(stopped, NoSpace) else exc
        else:
            if isinstance(stopped, NoSpace):
                stopped = stopped.adding(f"The run is recorded as failed in {recorded}.")
    if plan.request.record and run_dir.is_dir():
        database.record_quietly(settings, run_dir, result, emit)
    tail = "" if result.finished else runstore.log_tail(run_dir)
    emit(RunEnded(f"{result.run_id} ended", result, tail))
    if stopped is not None:
        raise stopped
    return result


def _why_stopped(exc: KeyboardInterrupt | EngineGone | NoSpace) -> str:
    """A run's failure when something other than its program ended it."""
    if isinstance(exc, KeyboardInterrupt):
        return f"{interrupts.of(exc).reason}: container stopped"
    return exc.failure if isinstance(exc, NoSpace) else exc.message


def _fill(result: RunResult, plan: Plan, run_dir: Path) -> None:
    """The numbers from what the run left, with a finished run's breakdown and profile."""
    if isinstance(plan.system, ResolvedMicrobench):
        microbench_runs.fill(result, plan.system, run_dir)
    elif (md := _fill_from_log(result, run_dir)) is not None and result.finished:
        _write_breakdown(result, plan, run_dir, md)
        result.profile = plan.platform.profiler.profile_outcome(run_dir, plan.request.profile)
        if result.profile is not None:
            RunStore.save_profile(run_dir, result.profile)


def _new_record(plan: Plan, run: str, host: HostInfo) -> RunResult:
    """The record written when the container starts: who, what, where, and its owner."""
    labels = plan.labels
    return RunResult(
        run_id=run,
        build=plan.build_name,
        system=plan.system.name,
        tag=plan.tag,
        platform=labels.get(label("platform")) or plan.platform.name,
        cpu_only=plan.request.cpu_only,
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        profile_mode=plan.request.profile,
        llvm_commit=plan.request.llvm_commit or labels.get(label("llvm_commit")),
        compiler=labels.get(label("compiler")),
        compiler_version=labels.get(label("compiler_version")),
        image=ImageRef(tag=plan.image_tag, id=plan.image_id, labels=labels),
        host=host,
        command=plan.mdrun,
        mdrun_args=plan.request.mdrun_args,
        steps=plan.steps,
        ntomp=plan.ntomp,
        device=plan.request.device if plan.platform.run.has_devices else None,
        owner=OWNER,
        batch_job=os.environ.get("SLURM_JOB_ID"),
        native=plan.native,
        **placement(run, plan.tag),
    )


def _fill_from_log(result: RunResult, run_dir: Path) -> MdLog | None:
    """Numbers from md.log into the result; the parsed log for the breakdown, if any."""
    log_path = run_dir / layout.LOG_NAMES[0]
    if not log_path.exists():
        result.failure = result.failure or "mdrun wrote no topol.log"
        return None
    try:
        md = parse_mdlog(log_path)
    except UserError as exc:
        result.failure = result.failure or exc.message
        return None
    result.setup_seconds = runstore.setup_seconds(run_dir)
    result.gmx_version = md.gmx_version
    result.atoms = md.atoms
    result.pme_grid = md.pme_grid
    result.coulomb_cutoff = md.coulomb_cutoff
    result.energies = md.energies
    ok = result.return_code == 0 and md.finished and md.ns_per_day is not None
    if md.stopped_by_signal is not None:
        ok = False
        result.failure = result.failure or (
            f"mdrun received the {md.stopped_by_signal} signal and stopped early "
            "(its ns/day covers fewer steps than asked)"
        )
    result.finished = bool(ok)
    if ok:
        result.ns_per_day, result.hour_per_ns = md.ns_per_day, md.hour_per_ns
        result.mdrun_wall_seconds = md.wall_seconds
    elif result.failure is None:
        result.failure = "mdrun did not report performance (run incomplete)"
    return md


def _write_breakdown(result: RunResult, plan: Plan, run_dir: Path, md: MdLog) -> None:
    """kernel_result.json from wherever this platform's breakdown comes from."""
    try:
        breakdown = plan.platform.profiler.breakdown(md, run_dir, plan.request.profile)
    except UserError as exc:
        result.finished, result.failure = False, f"no kernel breakdown: {exc.message}"
        result.ns_per_day = result.hour_per_ns = None
        return
    if breakdown is not None:
        RunStore.save_breakdown(run_dir, breakdown)
