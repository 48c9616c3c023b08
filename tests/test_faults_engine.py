"""Faults with the real engine: SIGTERM/SIGHUP mid-run and mid-build, a SIGKILLed run
process (abandoned record, leftover container, `runs clean`), and an engine restarted
under a running container. Each drives `python -m orchestrator` as a user's shell,
SLURM or CI would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.store.layout import lockfile_path
from orchestrator.store.runstore import RunStore

REPO = Path(__file__).resolve().parent.parent
engine_mark = pytest.mark.engine
pytestmark = engine_mark


def cli(results: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    full = {**os.environ, "ORCH_PLATFORM": "cpu", "ORCH_RESULTS_DIR": str(results), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=REPO, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for(what: str, ready: Callable[[], object], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"never saw {what}:\n{out[-2000:]}\n{err[-2000:]}")
        time.sleep(0.2)


def run_containers(client: Any, run: str | None = None) -> list[Any]:
    label = f"gmxbench.run={run}" if run else "gmxbench.role=run"
    return list(client.containers.list(all=True, filters={"label": label}))


@pytest.mark.parametrize(("sig", "code", "reason"), [
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),
    (signal.SIGHUP, 129, "hung up (SIGHUP)"),
])  # fmt: skip
def test_signal_mid_run_stops_the_container_and_records_why(
    engine: Any, stable_image: Any, tmp_path: Path, sig: int, code: int, reason: str
) -> None:
    run_dir = tmp_path / f"{stable_image.build}__water-24k-pme__sig"
    proc = cli(tmp_path, "run", stable_image.build, "water:24k", "sig", "--steps", "200000")
    wait_for("mdrun writing topol.log", (run_dir / "topol.log").exists, proc)
    sent = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, out + err
    while run_containers(engine, run_dir.name):
        assert time.monotonic() - sent < 30, "the container outlived SLURM's KillWait"
        time.sleep(0.2)
    assert "Traceback" not in err and f"{reason}; the run is recorded as unfinished" in err
    result = RunStore.load(run_dir)
    assert not result.finished and result.ns_per_day is None
    assert result.failure == f"{reason}: container stopped"
    assert not [p.name for p in run_dir.glob(".*.tmp")]  # nothing half-written
    assert RunStore(tmp_path).status(run_dir).state == "failed"


def test_sigkilled_run_is_abandoned_refused_and_cleaned(
    engine: Any, stable_image: Any, tmp_path: Path
) -> None:
    run_dir = tmp_path / f"{stable_image.build}__water-24k-pme__killed"
    proc = cli(tmp_path, "run", stable_image.build, "water:24k", "killed", "--steps", "200000")
    wait_for("mdrun writing topol.log", (run_dir / "topol.log").exists, proc)
    proc.kill()  # SIGKILL: no cleanup runs, as after SLURM's KillWait or the OOM killer
    proc.communicate()
    try:
        assert [c.status for c in run_containers(engine, run_dir.name)] == ["running"]
        runs = RunStore(tmp_path)
        status = runs.status(run_dir)
        assert status.state == "abandoned", status
        listed = subprocess.run(
            [sys.executable, "-m", "orchestrator", "runs", "list"], cwd=REPO, text=True,
            env={**os.environ, "ORCH_RESULTS_DIR": str(tmp_path)}, capture_output=True,
        ).stdout  # fmt: skip
        assert f"{run_dir.name}  abandoned" in listed
        compare = cli(tmp_path, "compare", str(run_dir), str(run_dir))
        _, err = compare.communicate(timeout=60)
        assert compare.returncode == 2 and "Traceback" not in err
        assert f"{run_dir.name} is abandoned" in err and "runs clean" in err
        clean = cli(tmp_path, "runs", "clean")
        out, err = clean.communicate(timeout=120)
        assert clean.returncode == 0, err
        assert f"remove the container of {run_dir.name}" in out
        assert f"close {run_dir.name} as abandoned" in out
        assert not run_containers(engine, run_dir.name)
        closed = runs.status(run_dir)
        assert closed.state == "failed" and closed.why.startswith("abandoned: its process")
    finally:
        for container in run_containers(engine, run_dir.name):
            container.remove(force=True)


def test_sigterm_mid_build_tags_nothing_and_leaves_nothing(
    engine: Any, toolchain_image: str, tmp_path: Path
) -> None:
    """A dev build of a new configuration (other SIMD level) is cut at its compile step."""
    before_tags = {t for i in engine.images.list() for t in i.tags}
    before_containers = {c.id for c in engine.containers.list(all=True)}
    proc = cli(tmp_path, "build", "dev", "--toolchain", toolchain_image, "--verbose",
               ORCH_SIMD="SSE2")  # fmt: skip
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + 600
    for line in proc.stderr:  # the build log streams to the console (stderr)
        seen.append(line)
        if "Check for working CXX compiler" in line or "Building CXX object" in line:
            break
        assert time.monotonic() < deadline, "".join(seen[-40:])
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, "".join(seen[-20:]) + out + err
    assert "Traceback" not in err and "terminated (SIGTERM)" in err
    while {c.id for c in engine.containers.list(all=True)} - before_containers:
        assert time.monotonic() - sent < 30, "a build container outlived the build"
        time.sleep(0.5)
    assert {t for i in engine.images.list() for t in i.tags} == before_tags
    images = tmp_path / "images"
    assert not images.exists() or not any(images.iterdir())  # no lockfile, whole or half
    assert not lockfile_path(tmp_path, "gromacs:dev-current").exists()


SLEEPER = """
name = "sleeper"
description = "holds its container for ten minutes (engine restart test)"
default_steps = 1
[tpr]
method = "generate"
script = "sleep 600"
"""


def test_engine_restart_mid_run_fails_the_run_and_returns(
    engine: Any, second_engine: Any, tmp_path: Path
) -> None:
    """The engine under a running container restarts: the command ends, the record says why."""
    base = "gmxbench-base/debian:bookworm"
    engine.images.get(base)  # made by every engine test session (the builder's FROM)
    saved = subprocess.Popen(["docker", "save", base], stdout=subprocess.PIPE)
    subprocess.run(
        ["docker", "-H", second_engine.address, "load"], stdin=saved.stdout, check=True,
        capture_output=True,
    )  # fmt: skip
    assert saved.wait() == 0
    second_engine.client.images.get(base).tag("gromacs", "restart-test")
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "sleeper.toml").write_text(SLEEPER)
    env = {"DOCKER_HOST": second_engine.address, "ORCH_RECIPES_DIRS": str(recipes)}
    proc = cli(tmp_path, "run", "restart-test", "sleeper", "t", **env)
    wait_for("the run's container", lambda: run_containers(second_engine.client), proc)
    stopped = time.monotonic()
    second_engine.stop()
    second_engine.start()
    out, err = proc.communicate(timeout=120)
    took = time.monotonic() - stopped
    assert proc.returncode == 1 and "Traceback" not in err, out + err
    assert "the Docker Engine stopped answering mid-run" in err
    run_dir = tmp_path / "restart-test__sleeper__t"
    status = RunStore(tmp_path).status(run_dir)
    assert status.state == "failed" and "Docker Engine stopped answering" in status.why
    assert took < 90, took  # no hang: the engine's stop and start take most of it
    clean = cli(tmp_path, "runs", "clean", **env)
    out, err = clean.communicate(timeout=120)
    assert clean.returncode == 0, err
    assert not run_containers(second_engine.client)
