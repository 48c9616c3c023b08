"""Runs handed to a real SLURM cluster (one node, started by `tests/slurm.py`) and run in
real containers on it: a bench whose verdict is the one its runs give, a matrix, and the
ends a scheduler adds: a cancelled job, a lost node, an orchestrator started again."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.settings import SlurmSettings
from orchestrator.runs.executors import Job, SlurmExecutor
from orchestrator.runs.runner import RunRequest
from orchestrator.store.records import RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.groups import compare_groups
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.build import CompilerSpec
from orchestrator.workflows.matrix import load_matrix, matrix
from tests import slurm

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
SECRET = "https://hooks.example/secret-token-4711"


@pytest.fixture(scope="module")
def cluster() -> Iterator[slurm.Cluster]:
    with slurm.cluster() as c:
        yield c


@pytest.fixture
def settings(
    cluster: slurm.Cluster, cpu_settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """CPU settings that hand runs to the cluster, results in this test's folder."""
    for name in [n for n in os.environ if n.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    return cpu_settings.model_copy(update={
        "executor": "slurm", "results_dir": tmp_path / "results", "webhook_url": SECRET,
        "slurm": SlurmSettings(partition=cluster.partition, poll_seconds=0.3),
    })  # fmt: skip


def wait_for(what: str, ready: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.2)


def run_containers(engine: Any, run_id: str) -> list[Any]:
    return list(engine.containers.list(all=True, filters={"label": f"gmxbench.run={run_id}"}))


def _files_holding(text: str, *roots: Path) -> list[Path]:
    return [path for root in roots for path in root.rglob("*")
            if path.is_file() and text.encode() in path.read_bytes()]  # fmt: skip


def test_bench_through_slurm_is_the_verdict_of_its_runs(
    engine: Any, settings: Any, cluster: slurm.Cluster, stable_image: Any, toolchain_image: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("ORCH_WEBHOOK_URL", SECRET)  # as a user would keep it
    req = BenchRequest(
        candidate=CompilerSpec("toolchain", toolchain_image), system="bandwidth:8MiB", repeats=4
    )
    outcome = bench(engine, settings, req)
    cmp = outcome.comparison
    store = RunStore(settings.results_dir)
    names = cmp.baseline + cmp.candidate
    assert len(names) == 8
    jobs = set()
    for name in names:
        run_dir = store.path(name)
        record = store.scheduler(run_dir)
        assert record is not None and record.state == "COMPLETED" and record.failure is None
        assert record.node == cluster.node
        result = store.load(run_dir)
        assert result.finished and result.batch_job == record.job_id
        jobs.add(record.job_id)
        script = (run_dir / "scheduler.sh").read_text()
        assert "--executor local --no-database" in script
        assert "secret-token" not in script  # the webhook stays on the submitting host
        assert "secret-token" not in (run_dir / "result.json").read_text()
    assert len(jobs) == 8
    assert not list((settings.results_dir / ".scheduler").iterdir())  # all moved to runs
    base = [run for name in cmp.baseline for run in store.finished(name)]
    cand = [run for name in cmp.candidate for run in store.finished(name)]
    again = compare_groups(base, cand)
    assert again.headline == cmp.headline and again.metrics == cmp.metrics
    # neither the job scripts, the jobs' environments (the controller's state), the
    # daemons' logs nor the results hold the webhook's address
    assert _files_holding("secret-token", cluster.top, settings.results_dir) == []
    done = {row["Name"] for row in cluster.completions()}
    assert {f"gmxbench:{name}" for name in names} <= done


def test_matrix_runs_every_cell_and_compares_with_the_first_build(
    engine: Any, settings: Any, stable_image: Any, toolchain_image: str, tmp_path: Path
) -> None:
    from orchestrator.images import microbench

    microbench.ensure(engine, settings, toolchain_image, "bandwidth")
    path = tmp_path / "nightly.toml"
    path.write_text(
        f'systems = ["bandwidth:8MiB"]\nbuilds = ["{stable_image.build}", "{toolchain_image}"]\n'
        "repeats = 2\n"
    )
    outcome = matrix(engine, settings, load_matrix(path), tag="m1")
    assert outcome.executor == "slurm" and len(outcome.cells) == 2
    base, other = outcome.cells
    assert len(base.finished) == 2 and len(other.finished) == 2
    assert base.comparison is None and other.comparison is not None
    assert other.comparison.headline_name == "ro_peak"
    assert all(r.batch_job for r in base.results + other.results)


def _run_in_thread(
    engine: Any, settings: Any, request: RunRequest
) -> tuple[threading.Thread, list[RunResult]]:
    out: list[RunResult] = []

    def go() -> None:
        (chain,) = SlurmExecutor(engine, settings).run([[Job("long run", request)]])
        out.extend(chain)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, out


def _long_run(stable_image: Any, tag: str) -> RunRequest:
    return RunRequest(build=stable_image.build, system="water:3k", tag=tag, steps=500_000)


def test_cancelled_job_is_a_failed_run_in_slurms_words_and_leaves_no_container(
    engine: Any, settings: Any, cluster: slurm.Cluster, stable_image: Any
) -> None:
    store = RunStore(settings.results_dir)
    request = _long_run(stable_image, "cancel")
    thread, out = _run_in_thread(engine, settings, request)
    run_dir = store.path(f"{stable_image.build}__water-3k-pme__cancel")
    wait_for("mdrun writing its log", (run_dir / "topol.log").exists)
    assert len(run_containers(engine, run_dir.name)) == 1
    cluster.run("scancel", f"--name=gmxbench:{run_dir.name}")
    thread.join(120)
    assert not thread.is_alive()
    (result,) = out
    assert not result.finished and result.ns_per_day is None
    assert result.failure is not None and "was cancelled (CANCELLED" in result.failure
    record = store.scheduler(run_dir)
    assert record is not None and record.state == "CANCELLED"
    wait_for("the run's container to go", lambda: not run_containers(engine, run_dir.name), 30)
    assert store.status(run_dir).state == "failed"


def test_lost_node_fails_the_run_and_its_container_goes_when_the_node_returns(
    engine: Any, settings: Any, cluster: slurm.Cluster, stable_image: Any
) -> None:
    store = RunStore(settings.results_dir)
    thread, out = _run_in_thread(engine, settings, _long_run(stable_image, "lost"))
    run_dir = store.path(f"{stable_image.build}__water-3k-pme__lost")
    wait_for("mdrun writing its log", (run_dir / "topol.log").exists)
    cluster.stop_slurmd(signal.SIGTERM)
    try:
        thread.join(120)  # the node is DOWN and the job NODE_FAIL ~16 s later
        assert not thread.is_alive()
    finally:
        cluster.start_slurmd()  # its orphaned job is killed as the node comes back
    (result,) = out
    assert not result.finished
    assert result.failure is not None and "lost its node (NODE_FAIL" in result.failure
    wait_for("the run's container to go", lambda: not run_containers(engine, run_dir.name), 60)
    assert store.load(run_dir).failure == result.failure  # the scheduler keeps the last word
    cluster.wait_idle()


def _read_until(proc: subprocess.Popen[str], *texts: str) -> list[str]:
    """Lines of `proc` up to and including the first holding one of `texts` (all at EOF)."""
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if any(text in line for text in texts):
            break
    return lines


def test_a_restarted_orchestrator_follows_its_running_job_instead_of_submitting_again(
    settings: Any, cluster: slurm.Cluster, stable_image: Any, tmp_path: Path
) -> None:
    """The job runs, but its `gmxbench run` waits for a gate file (the node's Python is a
    gate: ORCH_SLURM__PYTHON) until the second orchestrator has said it follows the job, so
    the follow path runs every time, never "ended before"."""
    gate, python = tmp_path / "gate", tmp_path / "gated-python"
    python.write_text(
        "#!/bin/sh\n# the job waits for the test to open the gate (5 minutes at most)\n"
        f'for _ in $(seq 1500); do [ -e {gate} ] && exec {sys.executable} "$@"; sleep 0.2; done\n'
        "echo 'the gate never opened' >&2; exit 1\n"
    )
    python.chmod(0o755)
    env = {
        **os.environ, "ORCH_PLATFORM": "cpu", "ORCH_EXECUTOR": "slurm",
        "ORCH_RESULTS_DIR": str(settings.results_dir), "ORCH_SLURM__PARTITION": cluster.partition,
        "ORCH_SLURM__POLL_SECONDS": "0.3", "ORCH_SLURM__PYTHON": str(python),
    }  # fmt: skip
    argv = [sys.executable, "-m", "orchestrator", "run", stable_image.build, "water:3k", "again",
            "--steps", "500"]  # the gate, not the run's length, keeps the job running  # fmt: skip
    run_dir = RunStore(settings.results_dir).path(f"{stable_image.build}__water-3k-pme__again")
    popen = {"cwd": REPO, "env": env, "text": True, "stdout": subprocess.PIPE,
             "stderr": subprocess.STDOUT}  # fmt: skip
    first = subprocess.Popen(argv, **popen)  # type: ignore[call-overload]
    try:
        said = "".join(_read_until(first, "running on"))
        submitted = re.search(r"submitted as SLURM job (\d+)", said)
        assert submitted and "running on" in said, said
        job = submitted[1]
        first.send_signal(signal.SIGINT)  # the orchestrator stops; the job goes on, gated
        said += first.communicate(timeout=60)[0]
    finally:
        first.kill()
    assert first.returncode == 130 and "go on without this process" in said, said
    assert not run_dir.exists()  # the run has not begun: nothing to take "as it is"

    second = subprocess.Popen(argv, **popen)  # type: ignore[call-overload]
    try:
        lines = _read_until(second, "following it", "submitted as")
        assert f"SLURM job {job} is running (submitted before): following it" in lines[-1], lines
        gate.touch()
        rest = second.communicate(timeout=600)[0]  # a run on a busy host
    finally:
        gate.touch()  # a failed assertion must not leave the job waiting
        second.kill()
    said = "".join(lines) + rest
    assert second.returncode == 0, said
    assert "ended before" not in said and "submitted as" not in said, said
    done = [r for r in cluster.completions() if r["Name"] == f"gmxbench:{run_dir.name}"]
    assert [(r["JobId"], r["JobState"]) for r in done] == [(job, "COMPLETED")]
    record = RunStore(settings.results_dir).scheduler(run_dir)
    assert record is not None and (record.job_id, record.state) == (job, "COMPLETED")
    assert RunStore.load(run_dir).finished
