"""One run on the host, from a native build's prefix: the container run's twin.

The plan is the runner's (`runner.run_script`, the same mdrun command, the same
preflight of the platform's devices), run from the run directory itself instead of
/run, with the build's `gmx` first on PATH; the record is the runner's, saying
`native`. mdrun runs in a process group of its own, so a timeout or Ctrl-C stops all
of it, as stopping a container does.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Emit
from orchestrator.core.settings import Settings
from orchestrator.images import native
from orchestrator.images.gromacs import gromacs_ref
from orchestrator.images.provenance import label
from orchestrator.platforms import get, host_cpu
from orchestrator.platforms.base import ProfilerOptions
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import load_system
from orchestrator.runs.runner import (
    CPU_ONLY_ARGS,
    Plan,
    RunRequest,
    default_tag,
    mdrun_command,
    run_script,
    user_steps,
)
from orchestrator.store import layout
from orchestrator.store.runstore import RunStore

#: How long a stopped run's processes get to end before they are killed.
GRACE_SECONDS = 10


def plan_native(settings: Settings, req: RunRequest) -> Plan:
    """Everything about a native run that can be decided before it starts."""
    system = load_system(req.system, settings.recipes_dirs)
    if isinstance(system, ResolvedMicrobench):
        raise UsageError(
            f"{system.name} is a microbenchmark, whose programs are built in images; the "
            "native executor runs GROMACS recipes. Run it with a container engine."
        )
    build = native.find(settings, req.build)
    if build is None:
        raise UserError(
            f"There is no native build {req.build} in {native.builds_root(settings)}. Build "
            "it first: `gmxbench build stable --executor native` (or set ORCH_NATIVE_ROOT "
            "to where your builds are)."
        )
    record = build.record
    platform = host_cpu() if req.cpu_only else get(record.platform or "cpu")
    steps = user_steps(req.mdrun_args) or req.steps or system.default_steps
    tag = req.tag or default_tag()
    run_dir = RunStore(settings.results_dir).path(
        layout.run_id(record.build or "", system.name, tag)
    )
    workdir = str(run_dir.resolve())
    user_args = req.mdrun_args
    if req.cpu_only:
        user_args = [*user_args, *(a for a in CPU_ONLY_ARGS if a not in user_args)]
    mdrun = mdrun_command(settings.jobs, steps, system.mdrun_args, user_args)
    profiler = (system.profiler or ProfilerOptions()).merged(req.profiler)
    script = run_script(system, steps, platform, mdrun, req.profile, profiler, workdir)
    options = platform.run.native_options(req.device, req.profile)
    labels = record.labels()
    container = {
        "command": ["sh", f"{workdir}/{layout.SCRIPT_FILE}"],
        "working_dir": workdir,
        "environment": {"OMP_NUM_THREADS": str(settings.jobs), **options.environment},
        "prefix": str(build.prefix),
    }
    problems = platform.run.preflight(
        labels.get(label("simd")), labels.get(label("gpu_arch")), options,
        profile=req.profile, variant=labels.get(label("rocm_stack")), image=str(build.prefix),
    )  # fmt: skip
    return Plan(req, system, gromacs_ref(record.build or req.build), record.id, labels,
                record.build or req.build, platform, run_dir, tag, steps, settings.jobs, mdrun,
                script, container, problems, native=True)  # fmt: skip


def launch_native(plan: Plan, name: str, run_dir: Path, emit: Emit) -> int | None:
    """Run the plan's script on this host; its exit code, None when it timed out."""
    config = plan.container
    path = f"{config['prefix']}/bin:{os.environ.get('PATH', '')}"
    env = {**native.host_environment(), **config["environment"], "PATH": path}
    with (run_dir / layout.STDOUT_FILE).open("wb") as out, \
            (run_dir / layout.STDERR_FILE).open("wb") as err:  # fmt: skip
        process = subprocess.Popen(
            config["command"], cwd=config["working_dir"], env=env, stdout=out, stderr=err,
            start_new_session=True,
        )  # fmt: skip
        try:
            return process.wait(timeout=plan.request.timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            return None
        except BaseException:  # Ctrl-C, SIGTERM: nothing of the run outlives it
            _stop(process)
            raise


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the run's process group, then SIGKILL after a grace period."""
    for sig, wait in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
