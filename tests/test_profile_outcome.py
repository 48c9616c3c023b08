"""From what rocprof-compute and rocprof-sys leave in a run directory to the run's record
and `compare`: real published outputs of both tools laid out as run.sh leaves them."""

from __future__ import annotations

import shutil
from pathlib import Path

from orchestrator.platforms.rocm import RocmPlatform
from orchestrator.report.text import render, top_functions_text
from orchestrator.store.layout import COUNTERS_FILE, SYSTRACE_FILE
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.groups import compare_groups
from tests.test_compare import make_run

DATA = Path(__file__).resolve().parent / "data"
VCOPY = DATA / "rocprof_compute" / "vcopy"
GFX1201_LOG = DATA / "rocprof_compute" / "unsupported" / "gfx1201-detect_arch.log"
SYSTRACE = DATA / "rocprof_sys" / "doc-1e5f7f6" / "output"


def counters_run(results: Path, name: str, sample: str) -> Path:
    """A finished run whose counter passes wrote `sample`'s workload (and its analysis)."""
    run_dir = make_run(results, name, "water-2022.5.log")
    out = run_dir / "rocprof-compute"
    workload = out / "workload" / sample
    shutil.copytree(VCOPY / sample, workload, ignore=shutil.ignore_patterns("analyze"))
    if (VCOPY / sample / "analyze").is_dir():
        shutil.copytree(VCOPY / sample / "analyze", out / "analyze")
    (out / "profile.status").write_text("0\n")
    (out / "analyze.status").write_text("0\n")
    return run_dir


def record_profile(run_dir: Path, mode: str) -> None:
    """What the runner does after a finished run: ask the platform, keep what it found."""
    outcome = RocmPlatform().profiler.profile_outcome(run_dir, mode)  # type: ignore[arg-type]
    assert outcome is not None
    result = RunStore.load(run_dir)
    result.profile = outcome
    RunStore.save(run_dir, result)
    RunStore.save_profile(run_dir, outcome)


def test_counters_reach_the_record_and_compare_shows_them_side_by_side(tmp_path: Path) -> None:
    a = counters_run(tmp_path, "stable__w__kernel-baseline", "MI200")
    b = counters_run(tmp_path, "dev__w__t", "MI300X_A1")
    for run_dir in (a, b):
        record_profile(run_dir, "counters")
        assert (run_dir / COUNTERS_FILE).exists()
        profile = RunStore.load(run_dir).profile
        assert profile is not None and profile.status == "ok", profile
        assert any(f.endswith("pmc_perf.csv") for f in profile.files)
    store = RunStore(tmp_path)
    cmp = compare_groups(store.finished(str(a)), store.finished(str(b)))
    assert cmp.counters is not None
    (row,) = [r for r in cmp.counters.rows if r.presence == "both"]
    assert "vecCopy" in row.name
    assert row.baseline is not None and row.candidate is not None
    assert row.baseline.arch_vgpr is not None and row.candidate.arch_vgpr is not None
    text = render(cmp)
    assert "Top 10 kernels by total time: stable vs dev" in text
    assert "L2 hit %" in text and "vecCopy" in text


def test_unsupported_gpu_is_skipped_with_the_tools_words_and_the_timing_counts(
    tmp_path: Path,
) -> None:
    run_dir = make_run(tmp_path, "dev__w__t", "water-2022.5.log")
    out = run_dir / "rocprof-compute"
    out.mkdir()
    shutil.copy(GFX1201_LOG, out / "profile.log")
    (out / "profile.status").write_text("1\n")
    record_profile(run_dir, "counters")
    result = RunStore.load(run_dir)
    assert result.profile is not None
    assert result.profile.status == "skipped"
    assert "Cannot find a supported arch" in (result.profile.message or "")
    assert result.finished and result.ns_per_day  # the timing run still counts
    assert not (run_dir / COUNTERS_FILE).exists()
    assert len(RunStore(tmp_path).finished(str(run_dir))) == 1


def test_a_profiler_that_never_ran_or_broke_is_failed_not_a_number(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, "dev__w__t", "water-2022.5.log")
    record_profile(run_dir, "counters")
    profile = RunStore.load(run_dir).profile
    assert profile is not None and profile.status == "failed"
    assert "did not run" in (profile.message or "")
    out = run_dir / "rocprof-compute"
    out.mkdir()
    (out / "profile.status").write_text("2\n")
    (out / "profile.log").write_text("Traceback ...\nKeyError: 'SQ_WAVES'\n")
    record_profile(run_dir, "counters")
    profile = RunStore.load(run_dir).profile
    assert profile is not None and profile.status == "failed"
    assert profile.message == "rocprof-compute profile exited 2: KeyError: 'SQ_WAVES'"


def test_systrace_records_its_files_top_functions_and_how_to_open_the_trace(
    tmp_path: Path,
) -> None:
    run_dir = make_run(tmp_path, "dev__w__t", "water-2022.5.log")
    shutil.copytree(SYSTRACE, run_dir / "rocprof-sys")
    record_profile(run_dir, "systrace")
    profile = RunStore.load(run_dir).profile
    assert profile is not None and profile.status == "ok", profile
    assert all(f.startswith("rocprof-sys/") for f in profile.files)
    assert (run_dir / SYSTRACE_FILE).exists()
    assert "perfetto" in (profile.message or "").lower()
    trace = RunStore.system_trace(run_dir)
    assert trace is not None and trace.functions
    table = top_functions_text(trace, top=5)
    assert table.startswith(f"top 5 of {len(trace.functions)} functions by wall-clock time")
    assert trace.functions[0].name[:20] in table
    missing = make_run(tmp_path, "dev__w__u", "water-2022.5.log")
    record_profile(missing, "systrace")
    profile = RunStore.load(missing).profile
    assert profile is not None and profile.status == "failed"
    assert profile.message == "rocprof-sys wrote nothing to rocprof-sys/"
