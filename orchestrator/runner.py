"""One run: one container of one image on one system, with a tag (the field report's gmxrun).

The run directory `results/<build>__<system>__<tag>/` is mounted at /run; mdrun writes
there, and the host gets `result.json` whatever happens: a finished run with its
numbers, or an unfinished one with its failure. No container outlives the run.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import requests.exceptions

from orchestrator import LABEL_PREFIX, engine
from orchestrator.errors import UserError
from orchestrator.hostinfo import collect as collect_host
from orchestrator.inputs import fetch_inputs
from orchestrator.mdlog import MdLog, cycle_breakdown, parse_mdlog
from orchestrator.notify import Notifier
from orchestrator.platforms import ProfileMode, platform_for, preflight
from orchestrator.provenance import write_json_atomic
from orchestrator.recipes import ResolvedSystem, load_recipe
from orchestrator.rocprof import parse_rocprof
from orchestrator.runrecord import KERNEL_FILE, ImageRef, RunResult, run_id, save_result
from orchestrator.settings import Settings

GMX_REPO = "gromacs"
#: run.sh writes the start of input preparation and of mdrun here (container clock).
TIMES = ".gmxbench-times"


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


@dataclass
class Plan:
    """Everything decided before a container starts; `--dry-run` prints it."""

    request: RunRequest
    system: ResolvedSystem
    image_tag: str
    image_id: str
    labels: dict[str, str]
    build_name: str
    platform: str
    run_dir: Path
    tag: str
    steps: int
    ntomp: int
    mdrun: list[str]
    script: str
    container: dict[str, Any]
    problems: list[str]


def image_ref(build: str) -> str:
    return build if ":" in build else f"{GMX_REPO}:{build}"


def mdrun_command(
    ntomp: int, steps: int, recipe_args: list[str], user_args: list[str]
) -> list[str]:
    cmd = [
        "gmx",
        "mdrun",
        "-v",
        "-deffnm",
        "topol",
        "-ntmpi",
        "1",
        "-ntomp",
        str(ntomp),
        "-pin",
        "on",
    ]
    if "-resetstep" not in user_args:
        cmd.append("-resethway")
    if "-nsteps" not in user_args:
        cmd += ["-nsteps", str(steps)]
    return cmd + [a for a in recipe_args if a not in user_args] + user_args


def _user_steps(args: list[str]) -> int | None:
    if "-nsteps" in args:
        i = args.index("-nsteps")
        if i + 1 < len(args) and args[i + 1].lstrip("-").isdigit():
            return int(args[i + 1])
    return None


def plan_run(client: docker.DockerClient, settings: Settings, req: RunRequest) -> Plan:
    ref = image_ref(req.build)
    image = engine.image_or_none(client, ref)
    if image is None:
        raise UserError(
            f"Image {ref} is not in the engine. Build it first: `nox -s build -- stable` "
            f"(or `nox -s build -- dev --toolchain <image>`); `nox -s images` lists what exists."
        )
    labels = dict(image.labels or {})
    build_name = labels.get(LABEL_PREFIX + "build") or req.build
    platform_name = labels.get(LABEL_PREFIX + "platform") or settings.active_platform
    platform = platform_for(platform_name)
    system = load_recipe(req.system)
    steps = _user_steps(req.mdrun_args) or req.steps or system.default_steps
    tag = req.tag or datetime.now(UTC).strftime("run-%Y%m%d-%H%M%S")
    run_dir = settings.results / run_id(build_name, system.name, tag)
    ntomp = settings.jobs
    mdrun = mdrun_command(ntomp, steps, system.mdrun_args, req.mdrun_args)
    wrapped = platform.wrap(mdrun, req.profile)
    script = (
        "#!/bin/sh\n# written by gmxbench: prepare topol.tpr, then mdrun\ncd /run\n"
        f"date +%s.%N > {TIMES}\n"
        + system.setup_script("/run/inputs", steps)
        + f"date +%s.%N >> {TIMES}\n"
        + "exec "
        + shlex.join(wrapped)
        + "\n"
    )
    options = platform.container_options(req.device)
    container: dict[str, Any] = {
        "image": image.id,
        "image_tag": ref,
        "command": ["sh", "/run/run.sh"],
        "working_dir": "/run",
        "volumes": {str(run_dir.resolve()): {"bind": "/run", "mode": "rw"}},
        "environment": {"OMP_NUM_THREADS": str(ntomp), **options.environment},
        "labels": {LABEL_PREFIX + "role": "run", LABEL_PREFIX + "run": run_dir.name},
        "network_disabled": True,
        **options.engine_kwargs(),
    }
    problems = preflight(labels, platform, options)
    return Plan(req, system, ref, image.id, labels, build_name, platform_name, run_dir, tag,
                steps, ntomp, mdrun, script, container, problems)  # fmt: skip


def dry_run_text(plan: Plan) -> str:
    shown = {**plan.container, "run_dir": str(plan.run_dir), "run.sh": plan.script}
    if plan.problems:
        shown["preflight_problems"] = plan.problems
    return json.dumps(shown, indent=2)


def _prepare_dir(settings: Settings, plan: Plan) -> None:
    if plan.run_dir.exists():
        raise UserError(
            f"Run directory {plan.run_dir} already exists; runs are never overwritten. "
            f"Pick another tag (the third argument) or move the old run away."
        )
    inputs = None
    if not plan.system.generated:
        inputs = fetch_inputs(plan.system, settings.cache, inputs_dir=plan.request.inputs_dir)
    plan.run_dir.mkdir(parents=True)
    if inputs is not None:
        for rel in plan.system.required_files():
            target = plan.run_dir / "inputs" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(inputs / rel, target)
    (plan.run_dir / "run.sh").write_text(plan.script)


def execute(client: docker.DockerClient, settings: Settings, plan: Plan) -> RunResult:
    """Run the plan; always leaves result.json and never a container."""
    if plan.problems:
        raise UserError(
            "Preflight failed, no container was started: " + "; ".join(plan.problems) + "."
        )
    _prepare_dir(settings, plan)
    host = collect_host(plan.platform)
    for warning in host.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    result = RunResult(
        run_id=plan.run_dir.name,
        build=plan.build_name,
        system=plan.system.name,
        tag=plan.tag,
        platform=plan.platform,
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        profile_mode=plan.request.profile,
        llvm_commit=plan.request.llvm_commit or plan.labels.get(LABEL_PREFIX + "llvm_commit"),
        compiler=plan.labels.get(LABEL_PREFIX + "compiler"),
        compiler_version=plan.labels.get(LABEL_PREFIX + "compiler_version"),
        image=ImageRef(tag=plan.image_tag, id=plan.image_id, labels=plan.labels),
        host=host,
        command=plan.mdrun,
        mdrun_args=plan.request.mdrun_args,
        steps=plan.steps,
        ntomp=plan.ntomp,
        device=plan.request.device if plan.platform == "rocm" else None,
    )
    save_result(plan.run_dir, result)
    notifier = Notifier.from_settings(settings)
    notifier.start(result.run_id, {"build": result.build, "system": result.system})
    started = time.monotonic()
    try:
        code, failure = _run_container(client, plan)
    except KeyboardInterrupt:
        code, failure = None, "interrupted (Ctrl-C): container stopped"
    result.duration_seconds = round(time.monotonic() - started, 3)
    result.return_code, result.failure = code, failure
    md = _fill_from_log(result, plan.run_dir)
    if result.finished and md is not None:
        _write_breakdown(result, plan.run_dir, md)
    save_result(plan.run_dir, result)
    if result.finished:
        notifier.done(result.run_id, result.ns_per_day or 0.0, {"build": result.build})
    else:
        notifier.failed(result.run_id, _log_tail(plan.run_dir))
    return result


def _run_container(client: docker.DockerClient, plan: Plan) -> tuple[int | None, str | None]:
    kwargs = {k: v for k, v in plan.container.items() if k != "image_tag"}
    container = client.containers.create(**kwargs, name=f"gmxbench-{plan.run_dir.name}"[:120])
    streamer = None
    try:
        container.start()
        streamer = threading.Thread(target=_stream, args=(container,), daemon=True)
        streamer.start()
        try:
            status = container.wait(timeout=plan.request.timeout)
        except requests.exceptions.RequestException:
            container.kill()
            return None, f"timed out after {plan.request.timeout:.0f} s: container killed"
        code = int(status.get("StatusCode", -1))
        return code, None if code == 0 else f"mdrun exited with code {code}"
    finally:
        _save_logs(container, plan.run_dir)
        engine.remove_container(container)
        if streamer is not None:
            streamer.join(timeout=2)


def _stream(container: Any) -> None:
    try:
        for chunk in container.logs(stream=True, follow=True):
            sys.stderr.write(chunk.decode(errors="replace"))
            sys.stderr.flush()
    except (docker.errors.APIError, requests.exceptions.RequestException, ValueError):
        pass


def _save_logs(container: Any, run_dir: Path) -> None:
    try:
        for name, out, err in (("stdout.log", True, False), ("stderr.log", False, True)):
            (run_dir / name).write_bytes(container.logs(stdout=out, stderr=err))
    except docker.errors.APIError:
        pass


def _fill_from_log(result: RunResult, run_dir: Path) -> MdLog | None:
    """Numbers from md.log into the result; the parsed log for the breakdown, if any."""
    log_path = run_dir / "topol.log"
    if not log_path.exists():
        result.failure = result.failure or "mdrun wrote no topol.log"
        return None
    try:
        md = parse_mdlog(log_path)
    except UserError as exc:
        result.failure = result.failure or exc.message
        return None
    times = (run_dir / TIMES).read_text().split() if (run_dir / TIMES).exists() else []
    if len(times) == 2:
        result.setup_seconds = round(float(times[1]) - float(times[0]), 3)
    result.gmx_version = md.gmx_version
    result.atoms = md.atoms
    result.pme_grid = md.pme_grid
    result.coulomb_cutoff = md.coulomb_cutoff
    ok = result.return_code == 0 and md.finished and md.ns_per_day is not None
    result.finished = bool(ok)
    if ok:
        result.ns_per_day, result.hour_per_ns = md.ns_per_day, md.hour_per_ns
        result.mdrun_wall_seconds = md.wall_seconds
    elif result.failure is None:
        result.failure = "mdrun did not report performance (run incomplete)"
    return md


def _write_breakdown(result: RunResult, run_dir: Path, md: MdLog) -> None:
    """kernel_result.json: rocprofv3's kernels on ROCm traces, md.log's cycles otherwise."""
    if result.platform == "rocm" and result.profile_mode != "trace":
        return  # GPU kernels are only known from a trace
    try:
        if result.platform == "rocm":
            breakdown = parse_rocprof(run_dir / "rocprof")
        else:
            breakdown = cycle_breakdown(md)
    except UserError as exc:
        result.finished, result.failure = False, f"no kernel breakdown: {exc.message}"
        result.ns_per_day = result.hour_per_ns = None
        return
    write_json_atomic(run_dir / KERNEL_FILE, breakdown.model_dump_json(indent=2) + "\n")


def _log_tail(run_dir: Path, lines: int = 20) -> str:
    for name in ("stderr.log", "topol.log", "stdout.log"):
        path = run_dir / name
        if path.exists() and path.stat().st_size:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"
