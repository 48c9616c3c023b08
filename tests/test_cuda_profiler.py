"""The CUDA profiler role: a timing run, then Nsight Compute's replay, read into a breakdown
and executed instructions per kernel (fixtures: `tests/data/ncu/README.md`)."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.parsers.mdlog import MdLog
from orchestrator.platforms.cuda.profilers import (
    REPLAY_NOTE,
    REPLAY_STEPS,
    CudaProfiler,
    replay_argv,
)
from orchestrator.store.layout import INSTRUCTIONS_FILE, NCU_CSV, NCU_DIR
from orchestrator.store.runstore import RunStore

DATA = Path(__file__).parent / "data" / "ncu"
MDRUN = ["gmx", "mdrun", "-deffnm", "topol", "-nsteps", "5000", "-nb", "gpu"]


def _run_dir(tmp_path: Path, status: str = "0") -> Path:
    out = tmp_path / NCU_DIR
    out.mkdir()
    (out / NCU_CSV).write_bytes(lzma.decompress((DATA / "h100-ncu-A-1.csv.xz").read_bytes()))
    (out / "ncu.status").write_text(status + "\n")
    (out / "ncu.log").write_text("==ERROR== profiling is not permitted\n")
    return tmp_path


def test_trace_times_mdrun_alone_then_replays_it_under_ncu() -> None:
    script = CudaProfiler().launch(MDRUN, "trace", "/run")
    timing, replay = script.index("gmx mdrun -deffnm topol -nsteps 5000"), script.index('ncu"')
    assert timing < replay  # the run's ns/day is never the replay's
    ncu = "--csv --print-units base --print-kernel-base mangled --metrics "
    assert ncu + "gpu__time_duration.sum,smsp__inst_executed.sum" in script
    assert f"--log-file /run/{NCU_DIR}/{NCU_CSV}" in script and f"-nsteps {REPLAY_STEPS}" in script
    assert "echo $? > /run/ncu/ncu.status" in script and script.endswith("exit 0\n")
    assert replay_argv(["gmx", "mdrun"], "/run")[-4:] == [
        "-nsteps",
        str(REPLAY_STEPS),
        "-s",
        "/run/topol.tpr",
    ]
    assert CudaProfiler().launch(MDRUN, "none", "/run").startswith("exec gmx mdrun")
    with pytest.raises(UserError, match="--profile=counters needs AMD"):
        CudaProfiler().launch(MDRUN, "counters", "/run")


def test_a_finished_replay_gives_the_breakdown_and_the_counts(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    profiler = CudaProfiler()
    breakdown = profiler.breakdown(MdLog(path="topol.log"), run_dir, "trace")
    assert breakdown is not None and breakdown.unknown == [] and REPLAY_NOTE in breakdown.notes
    assert len(breakdown.kernels) == 21 and breakdown.categories["nbnxm"].percent > 50
    gather = next(k for k in breakdown.kernels if k.category == "pme_gather")
    assert gather.calls == 201 and gather.median_us is not None and 13 < gather.median_us < 14
    outcome = profiler.profile_outcome(run_dir, "trace")
    assert outcome is not None and outcome.status == "ok" and outcome.instructions is not None
    assert outcome.instructions.unit == "warp" and len(outcome.instructions.kernels) == 21
    RunStore.save_profile(run_dir, outcome)
    assert (run_dir / INSTRUCTIONS_FILE).is_file()
    assert RunStore.instructions(run_dir) == outcome.instructions
    assert profiler.profile_breakdown(run_dir) == breakdown


def test_a_failed_replay_leaves_the_timing_run_counting(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, status="9")
    profiler = CudaProfiler()
    assert profiler.breakdown(MdLog(path="topol.log"), run_dir, "trace") is None
    outcome = profiler.profile_outcome(run_dir, "trace")
    assert outcome is not None and outcome.status == "failed" and outcome.instructions is None
    assert outcome.message == "ncu exited 9: ==ERROR== profiling is not permitted"
    assert profiler.profile_outcome(run_dir, "none") is None
