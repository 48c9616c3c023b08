"""`parse <path>`: detection of md.log, rocprof CSV, rocprof directory and run directory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError, UserError
from orchestrator.store.runstore import inspect as parse_path

DATA = Path(__file__).parent / "data"
NORMAL = DATA / "mdlog" / "water-2022.5.log"
STATS = DATA / "samples" / "amd_HPCTrainingExamples__Rocprofv3_HIP_README.md__kernel_stats.csv"
TRACE_70 = (
    DATA
    / "samples"
    / (
        "ROCm_rocm-systems__projects_rocprofiler-sdk_source_docs_how-to_using-rocprofv3.rst"
        "__kernel_trace_demangled__rocprofiler-sdk-7.0.csv"
    )
)


def test_mdlog_file(tmp_path: Path) -> None:
    log = tmp_path / "anything.txt"  # detection by content, not by name
    shutil.copy(NORMAL, log)
    out = parse_path(log)
    assert out["kind"] == "mdlog"
    assert out["mdlog"]["ns_per_day"] == 126.221
    assert out["mdlog"]["pme_grid"] == [25, 25, 25]
    assert out["cpu_breakdown"]["categories"]["nbnxm"]["total_ms"] == pytest.approx(1086.0)
    assert json.loads(json.dumps(out)) == out  # JSON-able as is


def test_rocprof_csv_file() -> None:
    out = parse_path(STATS)
    assert out["kind"] == "rocprof"
    gpu = out["gpu_breakdown"]
    assert gpu["source"] == "rocprofv3 kernel_stats"
    assert gpu["total_ms"] == pytest.approx(676.106917)
    assert gpu["categories"]["memory"]["calls"] == 1
    json.dumps(out)


def test_run_directory_with_rocprof_output(tmp_path: Path) -> None:
    run = tmp_path / "run-001"
    (run / "rocprof" / "gpu-node-7").mkdir(parents=True)
    shutil.copy(NORMAL, run / "topol.log")
    shutil.copy(TRACE_70, run / "rocprof" / "gpu-node-7" / "31337_kernel_trace.csv")
    out = parse_path(run)
    assert out["kind"] == "run"
    assert out["mdlog"]["atoms"] == 2652
    assert out["cpu_breakdown"]["total_ms"] == pytest.approx(1365.0)
    # 11040 + 11040 + 9720 + 9160 ns from the four dispatches of the sample
    assert out["gpu_breakdown"]["total_ms"] == pytest.approx(0.04096)
    assert len(out["gpu_breakdown"]["unknown"]) == 4
    json.dumps(out)


def test_run_directory_without_rocprof(tmp_path: Path) -> None:
    shutil.copy(NORMAL, tmp_path / "md.log")
    out = parse_path(tmp_path)
    assert out["kind"] == "run"
    assert out["gpu_breakdown"] is None
    assert out["mdlog"]["finished"] is True


def test_rocprof_directory(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    shutil.copy(TRACE_70, tmp_path / "host" / "1_kernel_trace.csv")
    shutil.copy(TRACE_70, tmp_path / "host" / "2_kernel_trace.csv")
    out = parse_path(tmp_path)
    assert out["kind"] == "rocprof"
    assert out["gpu_breakdown"]["total_ms"] == pytest.approx(2 * 0.04096)
    assert out["gpu_breakdown"]["categories"]["other"]["calls"] == 8


def test_bad_inputs_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        parse_path(tmp_path / "nope")
    with pytest.raises(UserError, match="neither a run"):
        parse_path(tmp_path)
    junk = tmp_path / "notes.txt"
    junk.write_text("hello, this is not a log\n")
    with pytest.raises(UserError, match=r"not a GROMACS md\.log"):
        parse_path(junk)
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text('"a","b"\n1,2\n')
    with pytest.raises(UserError, match="none of the columns"):
        parse_path(bad_csv)


def test_headerless_old_log_and_legacy_stats_by_content(tmp_path: Path) -> None:
    tail = tmp_path / "slurm-61707.out"  # a job's log tail, under any name
    shutil.copy(
        DATA / "samples" / "jtp4kc_expdens__job_daemon.py__textfor_log__gromacs-4.6.7-tail.log",
        tail,
    )
    out = parse_path(tail)
    assert out["kind"] == "mdlog"
    assert "header" in out["mdlog"]["missing"]
    assert out["cpu_breakdown"]["categories"]["pme_spread_gather"]["total_ms"] > 0
    stats = parse_path(DATA / "samples" / "dalg24_kokkos__results.stats.csv")
    assert stats["kind"] == "rocprof"
    assert stats["gpu_breakdown"]["excluded"][0]["name"] == "Unknown command type"
    json.dumps([out, stats])


def test_parse_command_line_prints_json() -> None:
    sample = DATA / "samples" / "gunrock_gunrock__results.stats.csv"
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "parse", str(sample)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=Path(__file__).parents[1],
    )
    assert done.returncode == 0, done.stderr
    gpu = json.loads(done.stdout)["gpu_breakdown"]
    assert gpu["categories"]["nbnxm"]["total_ms"] == pytest.approx(0.702166)
