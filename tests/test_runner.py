"""Runs: container configuration (both platforms), preflight, and real CPU runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.errors import UserError
from orchestrator.engine import EngineKind
from orchestrator.platforms.base import ProfilerOptions
from orchestrator.platforms.cpu import CpuPlatform
from orchestrator.platforms.rocm import RocmPlatform
from orchestrator.platforms.rocm.profilers import systrace_problems
from orchestrator.runs.runner import RunRequest, dry_run_text, execute, mdrun_command, plan_run
from orchestrator.store.runstore import RunStore

load_result = RunStore.load

REPO = Path(__file__).resolve().parent.parent


def test_mdrun_command_defaults_and_passthrough() -> None:
    cmd = mdrun_command(2, 4000, ["-noconfout"], ["-notunepme"])
    assert cmd[:10] == [
        "gmx",
        "mdrun",
        "-v",
        "-deffnm",
        "topol",
        "-ntmpi",
        "1",
        "-ntomp",
        "2",
        "-pin",
    ]
    assert "-resethway" in cmd and cmd[cmd.index("-nsteps") + 1] == "4000"
    assert cmd[-2:] == ["-noconfout", "-notunepme"]
    user = mdrun_command(2, 4000, [], ["-nsteps", "100", "-resetstep", "50"])
    assert "-resethway" not in user and user.count("-nsteps") == 1


def test_rocm_options_devices_groups_security_env(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    (dev / "dri").mkdir(parents=True)
    (dev / "kfd").touch()
    (dev / "dri" / "renderD129").touch()
    os.chown(dev / "kfd", 0, 44)
    os.chown(dev / "dri" / "renderD129", 0, 109)
    opts = RocmPlatform(dev_root=dev).run.container_options(device=1)
    assert opts.devices == ["/dev/kfd:/dev/kfd:rwm", "/dev/dri/renderD129:/dev/dri/renderD129:rwm"]
    assert opts.group_add == ["44", "109"]
    assert opts.security_opt == ["no-new-privileges", "seccomp=unconfined"]
    assert opts.cap_drop == ["ALL"]
    assert opts.environment == {"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "1"}
    assert opts.problems == []


def test_rocm_missing_devices_are_preflight_problems(tmp_path: Path) -> None:
    rocm = RocmPlatform(dev_root=tmp_path)
    problems = rocm.run.preflight(None, None, rocm.run.container_options(device=0))
    assert any("/dev/kfd does not exist" in p for p in problems)
    assert any("/dev/dri/renderD128 does not exist" in p for p in problems)


def test_rocm_trace_launches_rocprofv3_from_rocm_path() -> None:
    script = RocmPlatform().profiler.launch(["gmx", "mdrun"], "trace", "/run")
    assert script == (
        'exec "${ROCM_PATH:-/opt/rocm}/bin/rocprofv3" --kernel-trace --output-format '
        "rocpd -d /run/rocprof -- gmx mdrun\n"
    )
    assert CpuPlatform().profiler.launch(["gmx", "mdrun"], "trace", "/run") == "exec gmx mdrun\n"


def test_cpu_refuses_the_gpu_profilers() -> None:
    for mode in ("counters", "systrace"):
        with pytest.raises(UserError, match=f"--profile={mode} needs AMD's profilers"):
            CpuPlatform().profiler.launch(["gmx", "mdrun"], mode, "/run")  # type: ignore[arg-type]


def test_counters_script_times_first_then_profiles_without_failing_the_run() -> None:
    options = ProfilerOptions(counters_args=["-k", "nbnxm"])
    mdrun = ["gmx", "mdrun", "-deffnm", "topol"]
    script = RocmPlatform().profiler.launch(mdrun, "counters", "/run", options)
    lines = script.splitlines()
    assert lines[2] == "gmx mdrun -deffnm topol || exit $?"  # the timing run comes first
    assert lines[4] == "mkdir -p /run/rocprof-compute/app && cd /run/rocprof-compute/app || exit 1"
    assert lines[5] == (
        '"${ROCM_PATH:-/opt/rocm}/bin/rocprof-compute" profile -n gmxbench --output-directory '
        "/run/rocprof-compute/workload -k nbnxm -- gmx mdrun -deffnm topol -s /run/topol.tpr "
        "> /run/rocprof-compute/profile.log 2>&1"
    )
    assert " -p " not in lines[5]  # the deprecated form is not used
    assert (
        "analyze -p /run/rocprof-compute/workload --output-format csv --output-name "
        "/run/rocprof-compute/analyze" in script
    )
    assert lines[-1] == "exit 0"


def test_systrace_script_and_container_get_exactly_what_rocprof_sys_needs(tmp_path: Path) -> None:
    for node in ("kfd", "dri/renderD128"):
        (tmp_path / node).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / node).touch()
    rocm = RocmPlatform(dev_root=tmp_path)
    opts = rocm.run.container_options(0, "systrace")
    assert opts.cap_add == ["SYS_PTRACE", "PERFMON"]
    assert opts.devices == ["/dev/kfd:/dev/kfd:rwm", "/dev/dri/renderD128:/dev/dri/renderD128:rwm"]
    assert rocm.run.container_options(0, "trace").cap_add == []  # only systrace gets capabilities
    options = ProfilerOptions(
        systrace_mode="instrument", systrace_env={"ROCPROFSYS_SAMPLING_FREQ": "100",
                                                  "ROCPROFSYS_TRACE": "OFF"},
    )  # fmt: skip
    script = rocm.profiler.launch(["gmx", "mdrun"], "systrace", "/run", options)
    assert "export ROCPROFSYS_OUTPUT_PATH=/run/rocprof-sys\n" in script
    assert "export ROCPROFSYS_SAMPLING_FREQ=100\n" in script
    assert "export ROCPROFSYS_TRACE=OFF\n" in script  # the user's setting over ours
    tool = '"${ROCM_PATH:-/opt/rocm}/bin/rocprof-sys-instrument"'
    assert script.endswith(f"exec {tool} -- gmx mdrun\n")


def test_perf_event_paranoid_is_a_preflight_problem_that_says_what_to_change(
    tmp_path: Path,
) -> None:
    paranoid = tmp_path / "perf_event_paranoid"
    paranoid.write_text("4\n")
    (problem,) = systrace_problems(paranoid)
    assert "perf_event_paranoid is 4" in problem
    assert "sysctl kernel.perf_event_paranoid=2" in problem
    paranoid.write_text("2\n")
    assert systrace_problems(paranoid) == []


def test_rootless_podman_passes_the_users_own_groups(tmp_path: Path) -> None:
    rocm = RocmPlatform(dev_root=tmp_path)
    for node in ("kfd", "dri/renderD128"):
        (tmp_path / node).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / node).touch()
    podman = EngineKind(name="podman", version="4.3.1", rootless=True)
    assert rocm.run.container_options(0, engine=podman).group_add == ["keep-groups"]
    docker = EngineKind(name="docker", version="20.10", rootless=True)
    assert "keep-groups" not in rocm.run.container_options(0, engine=docker).group_add


def test_simd_preflight() -> None:
    cpu = CpuPlatform()
    problems = cpu.run.preflight("AVX_512_KNL_FAKE", None, cpu.run.container_options(0))
    assert problems == []  # unknown levels are not guessed at
    from orchestrator.platforms import base as platforms

    needs = platforms.SIMD_CPU_FLAGS["AVX2_256"]
    host = platforms.host_cpu_flags()
    problems = cpu.run.preflight("AVX2_256", None, cpu.run.container_options(0))
    assert bool(problems) == (not needs <= host)


# Engine tests --------------------------------------------------------------------------

engine_mark = pytest.mark.engine


@engine_mark
def test_missing_image_is_clear(engine: Any, cpu_settings: Any) -> None:
    with pytest.raises(
        UserError, match=r"Image gromacs:no-such-build is not in the engine\. Build it"
    ):
        plan_run(engine, cpu_settings, RunRequest(build="no-such-build", system="water"))


@engine_mark
def test_dry_run_of_an_image_not_built_yet_shows_its_configuration(
    engine: Any, tmp_path: Path
) -> None:
    """A GPU configuration can be checked before a long build: the image's absence is
    named among the problems, and everything else is shown as it will be."""
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "dev-not-built-yet", "water:3k", "--dry-run"],
        capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "ORCH_PLATFORM": "rocm", "ORCH_RESULTS_DIR": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["image"] == "gromacs:dev-not-built-yet"
    assert shown["preflight_problems"][0].startswith(
        "image gromacs:dev-not-built-yet is not in the engine yet: build it first"
    )
    assert shown["devices"][0] == "/dev/kfd:/dev/kfd:rwm" and "gmx mdrun" in shown["run.sh"]
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


@engine_mark
def test_dry_run_cpu_shows_exact_config(engine: Any, cpu_settings: Any, stable_image: Any) -> None:
    plan = plan_run(
        engine, cpu_settings, RunRequest(build=stable_image.build, system="water", tag="dry")
    )
    shown = json.loads(dry_run_text(plan))
    assert shown["image"] == stable_image.id
    assert shown["command"] == ["sh", "/run/run.sh"]
    assert "devices" not in shown and "group_add" not in shown and "cap_add" not in shown
    assert shown["security_opt"] == ["no-new-privileges"]  # the engine's seccomp profile
    assert shown["cap_drop"] == ["ALL"] and shown["pids_limit"] == cpu_settings.run_pids_limit
    assert shown["user"] == f"{os.getuid()}:{os.getgid()}"
    assert shown["volumes"] == {str(plan.run_dir.resolve()): {"bind": "/run", "mode": "rw"}}
    assert "gmx mdrun -v -deffnm topol -ntmpi 1" in shown["run.sh"]
    assert not plan.run_dir.exists()


@engine_mark
def test_dry_run_rocm_cli(engine: Any, stable_image: Any, tmp_path: Path) -> None:
    """The rocm platform's passthrough, shown for a CPU image relabelled as rocm."""
    image = engine.images.get(stable_image.tag)
    from orchestrator import engine as engine_mod

    rocm_id = engine_mod.build(
        engine,
        f"FROM {image.id}\n",
        what="rocm-labelled",
        labels={
            "gmxbench.platform": "rocm",
            "gmxbench.build": "stable-rocm7.12",
            "gmxbench.kind": "test",
            "gmxbench.inputs": "test",
        },
    )
    engine.images.get(rocm_id).tag("gmxbench-test/rocm-dry", tag="1")

    def dry_run(*args: str) -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-m", "orchestrator", "run", "gmxbench-test/rocm-dry:1", "water",
             "--device", "1", "--dry-run", *args],
            capture_output=True, text=True, cwd=REPO,
            env={**os.environ, "ORCH_RESULTS_DIR": str(tmp_path)},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        shown: dict[str, Any] = json.loads(proc.stdout)
        assert shown["devices"] == [
            "/dev/kfd:/dev/kfd:rwm",
            "/dev/dri/renderD129:/dev/dri/renderD129:rwm",
        ]
        assert shown["security_opt"] == ["no-new-privileges", "seccomp=unconfined"]
        assert shown["cap_drop"] == ["ALL"] and shown["pids_limit"] == 4096
        assert shown["user"] == f"{os.getuid()}:{os.getgid()}"
        assert shown["environment"]["HIP_VISIBLE_DEVICES"] == "1"
        assert shown["environment"]["ROCR_VISIBLE_DEVICES"] == "1"
        assert any("/dev/kfd does not exist" in p for p in shown["preflight_problems"])
        return shown

    try:
        shown = dry_run("--profile=trace")
        assert (
            '/bin/rocprofv3" --kernel-trace --output-format rocpd -d /run/rocprof --'
            in shown["run.sh"]
        )
        assert "cap_add" not in shown
        shown = dry_run("--profile=counters", "--counters-args=-k nbnxm")
        assert "cap_add" not in shown
        assert (
            '/bin/rocprof-compute" profile -n gmxbench --output-directory '
            "/run/rocprof-compute/workload -k nbnxm -- gmx mdrun" in shown["run.sh"]
        )
        assert "analyze -p /run/rocprof-compute/workload --output-format csv" in shown["run.sh"]
        shown = dry_run("--profile=systrace", "--profiler-env", "ROCPROFSYS_SAMPLING_FREQ=50")
        assert shown["cap_add"] == ["SYS_PTRACE", "PERFMON"]
        assert "export ROCPROFSYS_SAMPLING_FREQ=50\n" in shown["run.sh"]
        assert '/bin/rocprof-sys-sample" -- gmx mdrun' in shown["run.sh"]
    finally:
        engine.images.remove("gmxbench-test/rocm-dry:1")


@engine_mark
def test_cpu_run_end_to_end(engine: Any, cpu_settings: Any, stable_image: Any) -> None:
    req = RunRequest(build=stable_image.build, system="water:3k", tag="e2e", steps=1000)
    result = execute(engine, cpu_settings, plan_run(engine, cpu_settings, req))
    assert result.finished, result.failure
    assert result.ns_per_day and result.ns_per_day > 0
    run_dir = cpu_settings.results_dir / result.run_id
    on_disk = load_result(run_dir)
    assert on_disk.finished and on_disk.ns_per_day == result.ns_per_day
    assert on_disk.llvm_commit is None and on_disk.atoms and on_disk.atoms > 2000
    assert on_disk.image.labels["gmxbench.build"] == stable_image.build
    for name in ("topol.log", "topol.tpr", "run.sh", "stdout.log", "stderr.log", "conf.gro"):
        assert (run_dir / name).exists(), name
    assert not engine.containers.list(all=True, filters={"label": "gmxbench.role=run"})
    with pytest.raises(UserError, match="already exists; runs are never overwritten"):
        execute(engine, cpu_settings, plan_run(engine, cpu_settings, req))
    assert load_result(run_dir).ns_per_day == result.ns_per_day


@engine_mark
def test_killed_run_is_recorded_unfinished(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    req = RunRequest(
        build=stable_image.build, system="water:24k", tag="killed", steps=200000, timeout=4
    )
    result = execute(engine, cpu_settings, plan_run(engine, cpu_settings, req))
    assert not result.finished
    assert result.ns_per_day is None
    assert "timed out after 4 s" in (result.failure or "")
    assert load_result(cpu_settings.results_dir / result.run_id).finished is False
    assert not engine.containers.list(all=True, filters={"label": "gmxbench.role=run"})


@engine_mark
def test_ctrl_c_records_the_run_unfinished_and_exits_130(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    """Ctrl-C stops the container, the run says so on disk, and `run` exits 130."""
    import signal
    import time

    run_dir = cpu_settings.results_dir / f"{stable_image.build}__water-24k-pme__sigint"
    env = {**os.environ, "ORCH_PLATFORM": "cpu", "ORCH_RESULTS_DIR": str(cpu_settings.results_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "run", stable_image.build, "water:24k", "sigint",
         "--steps", "200000"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not engine.containers.list(filters={"label": f"gmxbench.run={run_dir.name}"}):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and "recorded as unfinished" in err
    result = load_result(run_dir)
    assert not result.finished and result.ns_per_day is None
    assert "interrupted" in (result.failure or "")
    assert (run_dir / "stderr.log").exists()
    assert not engine.containers.list(all=True, filters={"label": "gmxbench.role=run"})


@engine_mark
def test_a_container_name_in_use_is_a_clear_error(
    engine: Any, stable_image: Any, tmp_path: Path
) -> None:
    """Two runs of one run id on one engine (two results folders): the second is refused
    in words, and the first one's container is left alone."""
    from orchestrator import engine as engine_mod

    name = "gmxbench-test-name-in-use"
    held = engine.containers.create(stable_image.tag, ["true"], name=name)
    try:
        with pytest.raises(UserError, match="already exists on this engine"):
            engine_mod.run(
                engine, {"image": stable_image.tag, "command": ["true"]}, name=name,
                timeout=30, logs=(tmp_path / "out", tmp_path / "err"),
            )  # fmt: skip
        assert engine.containers.get(name).id == held.id
    finally:
        held.remove(force=True)
