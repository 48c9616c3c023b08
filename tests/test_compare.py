"""Comparisons of real md.logs: validity guards, suspect energies, refusals, the report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.report import words
from orchestrator.report.text import render, webhook_text
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.store.records import ImageRef, RunResult
from orchestrator.store.runstore import Run, RunStore
from orchestrator.verdict.compare import compare_runs
from orchestrator.verdict.groups import compare_groups
from orchestrator.workflows.bench import BenchOutcome


def load_runs(results: Path, spec: str) -> list[Run]:
    return RunStore(results).finished(spec)


REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "tests" / "data" / "mdlog"
COMMAND = ["gmx", "mdrun", "-v", "-deffnm", "topol", "-ntmpi", "1", "-ntomp", "2", "-resethway"]


def make_run(
    results: Path,
    name: str,
    log: str,
    *,
    system: str = "water:3k:pme",
    steps: int = 2000,
    command: list[str] = COMMAND,
    ns_scale: float = 1.0,
) -> Path:
    """A run directory around a real md.log, as the runner leaves it."""
    run_dir = results / name
    run_dir.mkdir(parents=True)
    shutil.copy(LOGS / log, run_dir / "topol.log")
    md = parse_mdlog(run_dir / "topol.log")
    tag = name.split("__")[2]
    result = RunResult(
        run_id=name, build=name.split("__")[0], system=system, tag=tag, platform="cpu",
        timestamp="2026-11-22T00:00:00+00:00", finished=True, return_code=0,
        ns_per_day=(md.ns_per_day or 0) * ns_scale, gmx_version=md.gmx_version,
        image=ImageRef(tag="gromacs:x", id="sha256:0"), host=HostInfo(hostname="h", kernel="k"),
        command=command, steps=steps, atoms=md.atoms, pme_grid=md.pme_grid,
        coulomb_cutoff=md.coulomb_cutoff, energies=md.energies,
    )  # fmt: skip
    RunStore.save(run_dir, result)
    RunStore.save_breakdown(run_dir, cycle_breakdown(md))
    return run_dir


def test_different_pme_grids_not_comparable(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5-2pp1pme.log", steps=1500)
    b = make_run(tmp_path, "dev__w__t", "water-2022.5-tunepme-derived.log", steps=1500)
    cmp = compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))
    assert not cmp.comparable
    assert "PME tuning ended on different grids" in (words.comparable_note(cmp) or "")
    assert "-notunepme" in (words.comparable_note(cmp) or "")
    assert cmp.headline.n_candidate == 1
    assert "not comparable per kernel" in render(cmp)


def test_same_grid_is_comparable_and_single_run_says_noise_unknown(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log", ns_scale=1.1)
    cmp = compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))
    assert cmp.comparable and not cmp.suspect
    assert cmp.headline.delta_pct == pytest.approx(10.0)
    assert words.marker(cmp.headline) == "•"  # one run per side: never a verdict
    assert "noise unknown" in words.note(cmp.headline)
    assert set(cmp.categories) >= {"nbnxm", "pme_spread", "fft"}
    assert words.headline_text(cmp).startswith(
        "dev on water:3k:pme: 138.8 ns/day (baseline 126.2, Δ +12.622"
    )


def test_different_potential_energy_is_suspect(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5-alt-energy.log", ns_scale=10)
    cmp = compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))
    assert cmp.suspect
    assert "potential energy" in (words.suspect_note(cmp) or "")
    assert words.headline_text(cmp).startswith("⚠ SUSPECT")
    assert words.marker(cmp.headline) != "🚀"
    assert "suspect" in webhook_text(cmp)


def test_repeated_groups_give_a_verdict(tmp_path: Path) -> None:
    for i in range(1, 6):
        make_run(
            tmp_path, f"stable__w__kernel-baseline-r{i}", "water-2022.5.log", ns_scale=1 + i / 1000
        )
        make_run(tmp_path, f"dev__w__fast-r{i}", "water-2022.5.log", ns_scale=1.2 + i / 1000)
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline"), load_runs(tmp_path, "dev__w__fast")
    )
    assert cmp.headline.n_baseline == cmp.headline.n_candidate == 5
    assert cmp.headline.significant and words.marker(cmp.headline) == "🚀"
    assert "5 vs 5 runs" in words.stats_line(cmp)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"steps": 4000}, "differ in steps"), ({"system": "benchMEM"}, "differ in system"),
     ({"command": [*COMMAND, "-notunepme"]}, "different mdrun options")],
)  # fmt: skip
def test_refuses_pairs_that_measure_different_things(
    tmp_path: Path, change: dict, message: str
) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log", **change)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=message):
        compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))


def test_failed_runs_are_never_numbers(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    result = RunResult.model_validate_json((a / "result.json").read_text())
    RunStore.save(a, result.model_copy(update={"finished": False, "ns_per_day": None}))
    with pytest.raises(UsageError, match="no finished runs"):
        load_runs(tmp_path, str(a))


def test_compare_cli_markdown(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log", ns_scale=0.9)
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "compare", str(a), str(b), "--format", "markdown"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr  # one run a side: could not judge
    assert "| • ns/day" in proc.stdout and "|---" in proc.stdout
    assert "-10.00%" in proc.stdout


def test_benjamini_hochberg_keeps_broad_changes_and_drops_lone_ones() -> None:
    from orchestrator.verdict.compare import adjust_for_many_categories
    from orchestrator.verdict.stats import compare_samples

    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    moved = compare_samples(base, [90.0, 91.0, 89.0, 90.5, 89.5], higher_is_better=False)
    same = compare_samples(base, [100.2, 99.8, 101.1, 99.4, 100.6], higher_is_better=False)
    assert moved.significant and words.marker(moved) == "🚀"
    lone = adjust_for_many_categories({"nbnxm": moved, **{f"c{i}": same for i in range(6)}}, 0.05)
    assert not lone["nbnxm"].significant and words.marker(lone["nbnxm"]) == "•"
    assert "Benjamini–Hochberg" in words.note(lone["nbnxm"])
    broad = adjust_for_many_categories({f"c{i}": moved for i in range(7)}, 0.05)
    assert all(v.significant and words.marker(v) == "🚀" for v in broad.values())


# --- runs made by `bench`: interleaved pairs, kernels, host noise ----------------------------

SAMPLE = (
    REPO / "tests" / "data" / "samples" / "ROCm_rocprofiler-sdk__source_docs_data_kernel_trace.csv"
)


def _bench_groups(
    tmp_path: Path, scales: list[tuple[float, float]], kernel_scale: float = 1.0
) -> None:
    """Pairs as `bench` leaves them: baseline tagged kernel-baseline-<candidate tag>; each run
    carries the real kernel trace sample with its per-kernel medians scaled."""
    from orchestrator.parsers.rocprof import parse_kernel_csv

    trace = parse_kernel_csv(SAMPLE)
    for i, (base, cand) in enumerate(scales, start=1):
        for tag, scale, kernel in ((f"kernel-baseline-aa-r{i}", base, 1.0),
                                   (f"aa-r{i}", cand, kernel_scale)):  # fmt: skip
            run_dir = make_run(tmp_path, f"stable__w__{tag}", "water-2022.5.log", ns_scale=scale)
            jitter = 1 + (sum(map(ord, tag)) % 7) / 1000  # a median's run-to-run noise, ≤ 0.6%
            kernels = [k.model_copy(update={"median_us": (k.median_us or 1) * kernel * jitter})
                       for k in trace.kernels]  # fmt: skip
            RunStore.save_breakdown(run_dir, trace.model_copy(update={"kernels": kernels}))


PAIRS = [(1.00, 1.01), (1.02, 1.00), (0.99, 1.00), (1.01, 1.02), (1.00, 0.99), (0.98, 0.99)]


def test_bench_groups_are_compared_pair_by_pair(tmp_path: Path) -> None:
    _bench_groups(tmp_path, PAIRS)
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    assert cmp.paired and cmp.headline.paired and cmp.headline.test_method == "paired-t"
    assert words.stats_line(cmp).startswith(
        "statistics: 6 interleaved pairs, paired t on log ratios;"
    )
    assert "could have detected ±" in words.stats_line(cmp) and not cmp.headline.significant
    assert cmp.headline.mdc_pct is not None and 1 < cmp.headline.mdc_pct < 5
    out = render(cmp)
    assert "detectable" in out and f"±{cmp.headline.mdc_pct:.1f}%" in out
    unpaired = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa"),
        paired=False,
    )  # fmt: skip
    assert not unpaired.paired and "6 vs 6 runs, medians, Mann–Whitney" in words.stats_line(
        unpaired
    )


def test_a_run_without_its_partner_is_left_out(tmp_path: Path) -> None:
    _bench_groups(tmp_path, PAIRS)
    shutil.rmtree(tmp_path / "stable__w__aa-r3")
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    assert cmp.paired and cmp.headline.n_baseline == 5
    assert cmp.unpaired == ["stable__w__kernel-baseline-aa-r3"]
    assert "left out, no pair partner: stable__w__kernel-baseline-aa-r3" in render(cmp)


def test_bench_groups_recorded_before_the_fields_still_pair(tmp_path: Path) -> None:
    """Records of schema 3 said group, repeat and role only in their tags."""
    _bench_groups(tmp_path, PAIRS)
    for record in tmp_path.glob("*/result.json"):
        old = json.loads(record.read_text())
        for field in ("group", "repeat", "role", "bench"):
            del old[field]
        record.write_text(json.dumps({**old, "schema_version": 3}))
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    assert cmp.paired and cmp.headline.n_baseline == 6 and not cmp.unpaired


def test_groups_not_made_by_bench_cannot_be_forced_into_pairs(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log")
    with pytest.raises(UsageError, match="not run in interleaved pairs"):
        compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)), paired=True)


def test_kernel_verdicts_from_median_call_durations(tmp_path: Path) -> None:
    _bench_groups(tmp_path, PAIRS, kernel_scale=1.05)  # every kernel 5% slower per call
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    assert (
        len(cmp.kernels) == 4
        and "void addition_kernel<float>(float*, float const*, float const*, int, int)"
        in cmp.kernels
    )
    for v in cmp.kernels.values():
        assert v.paired and v.significant and words.marker(v) == "🐢"
        assert v.delta_pct == pytest.approx(5.0, abs=0.5)
        assert v.p_value is not None and 0 < v.p_value < 0.001
    out = render(cmp)
    assert "top 4 kernels, median call duration in each run:" in out
    assert "🐢 void addition_kernel<float>(float*, float const… (µs)" in out
    assert "kernels: 🐢" in webhook_text(cmp)


def test_kernel_verdicts_need_per_call_data_on_every_run(tmp_path: Path) -> None:
    _bench_groups(tmp_path, PAIRS)
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    assert len(cmp.kernels) == 4  # all four have medians
    run_dir = tmp_path / "stable__w__aa-r2"
    breakdown = RunStore.breakdown(run_dir)
    assert breakdown is not None
    stats_only = [k.model_copy(update={"median_us": None}) for k in breakdown.kernels]
    RunStore.save_breakdown(run_dir, breakdown.model_copy(update={"kernels": stats_only}))
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    assert cmp.kernels == {} and "kernels, median call" not in render(cmp)


def test_runs_that_shared_the_machine_are_named_in_the_report(tmp_path: Path) -> None:
    from orchestrator.runs.hostinfo import HostNoise, ProcessLoad, noise_warnings

    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log")
    noise = HostNoise(samples=9, seconds=8.0, cpu_count=2, run_threads=2, other_cpus=1.1,
                      other_cpus_max=1.9, top_others=[ProcessLoad(name="cc1plus", cpus=0.9)],
                      steal_pct=0.4, other_containers=["relaxed_bartik"])  # fmt: skip
    noise.warnings = noise_warnings(noise)
    result = RunStore.load(b)
    RunStore.save(b, result.model_copy(update={"noise": noise}))
    cmp = compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))
    assert words.noise_lines(cmp) == [f"dev__w__t: {'; '.join(noise.warnings)}"]
    out = render(cmp, "markdown")
    assert "⚠ 1 of 2 runs shared the machine, no verdict: the host was too busy to judge" in out
    assert "other processes used 1.10 CPUs on average (peak 1.90; cc1plus 0.90)" in out
    assert "1 other container was running (relaxed_bartik)" in out
    hook = webhook_text(cmp)
    assert "⚠ no verdict: the host was too busy to judge: 1 of 2 runs shared the machine" in hook
    assert "cc1plus" not in hook  # the webhook stays short


def _flag(run_dir: Path) -> None:
    """Record a compile beside this run, as `runs.hostinfo.NoiseSampler` records one."""
    from orchestrator.runs.hostinfo import HostNoise, ProcessLoad, noise_warnings

    compile_job = [ProcessLoad(name="cc1plus", cpus=0.9)]
    noise = HostNoise(samples=60, seconds=60.0, cpu_count=2, run_threads=2, other_cpus=0.9,
                      other_cpus_max=1.8, top_others=compile_job)  # fmt: skip
    noise.warnings = noise_warnings(noise)
    RunStore.save(run_dir, RunStore.load(run_dir).model_copy(update={"noise": noise}))


#: Pairs 2, 4, 5 and 6 had a compile beside their candidate run, which ran ~40% slower.
BUSY = [(1.00, 1.01), (1.02, 0.60), (0.99, 1.00), (1.01, 0.62), (1.00, 0.58), (0.98, 0.61)]


def test_pairs_that_shared_the_machine_are_left_out_of_the_verdict(tmp_path: Path) -> None:
    scales = [*PAIRS, (1.0, 0.6), (1.01, 0.62)]  # pairs 7 and 8 slowed by a compile
    _bench_groups(tmp_path, scales)
    for i in (7, 8):
        _flag(tmp_path / f"stable__w__aa-r{i}")
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    assert cmp.too_busy is None and cmp.headline.n_candidate == 6 and cmp.runs == 16
    assert cmp.left_out == [f"stable__w__kernel-baseline-aa-r{i} + stable__w__aa-r{i}"
                            for i in (7, 8)]  # fmt: skip
    assert words.marker(cmp.headline) == "•" and abs(cmp.headline.delta_pct) < 1
    out = render(cmp)
    assert "2 of 16 runs shared the machine, left out of the verdict (2 pairs)" in out
    assert "note: left out, a run shared the machine: stable__w__kernel-baseline-aa-r7 + " in out


def test_a_host_too_busy_to_judge_gives_no_marker_anywhere(tmp_path: Path) -> None:
    _bench_groups(tmp_path, BUSY, kernel_scale=1.5)
    base, cand = "stable__w__kernel-baseline-aa", "stable__w__aa"
    unflagged = compare_runs(load_runs(tmp_path, base), load_runs(tmp_path, cand))
    assert words.marker(unflagged.headline) == "🐢"  # the same numbers, not known to be busy
    assert any(words.marker(v) == "🐢" for v in unflagged.kernels.values())
    for i in (2, 4, 5, 6):
        _flag(tmp_path / f"stable__w__aa-r{i}")
    for paired in (True, False):
        cmp = compare_runs(load_runs(tmp_path, base), load_runs(tmp_path, cand), paired=paired)
        assert cmp.too_busy is not None
        verdicts = [cmp.headline, *cmp.categories.values(), *cmp.kernels.values()]
        assert cmp.kernels and all(words.marker(v) == "•" and not v.significant for v in verdicts)
        assert all(v.p_value is None and "too busy to judge" in words.note(v) for v in verdicts)
        out, hook = render(cmp), webhook_text(cmp)
        assert "🐢" not in out + hook and "🚀" not in out + hook
        assert "too busy to judge" in words.stats_line(cmp) and "⚠ no verdict: the host" in hook
        assert BenchOutcome(cmp, 12, 60.0, 70.0).verdict == "too busy"  # not "no change"
        what = "4 of 6 pairs had a run that" if paired else "4 of 12 runs"
        assert words.too_busy(cmp.too_busy).startswith(
            f"the host was too busy to judge: {what} shared the"
        )


def test_a_microbenchmark_on_a_busy_host_gets_no_marker_either(tmp_path: Path) -> None:
    from tests.test_microbench import _microbench_runs

    base = [{"ro_peak": 40 + d, "rw_peak": 20 + d} for d in (0.0, 0.4, -0.3, 0.2, -0.1)]
    cand = [{"ro_peak": 40 + d, "rw_peak": 24 + d} for d in (0.1, 0.3, -0.2, 0.2, 0.0)]
    _microbench_runs(tmp_path, "base", base)
    for path in _microbench_runs(tmp_path, "cand", cand)[:3]:
        _flag(path)
    store = RunStore(tmp_path)
    cmp = compare_groups(
        store.finished("stable-cpu-gcc12__bandwidth-64MiB-temporal__kernel-baseline-b"),
        store.finished("toolchain-clang16__bandwidth-64MiB-temporal__b"),
    )
    assert cmp.too_busy is not None and len(cmp.left_out) == 3
    assert words.marker(cmp.metrics["rw_peak"]) == "•"  # 🚀 on a quiet host (test_microbench.py)
    assert "🚀" not in render(cmp) and "too busy to judge" in render(cmp)


@pytest.mark.parametrize("apart", [0.009, -0.009, 0.011, -0.011])
def test_energies_more_than_one_percent_apart_are_suspect(tmp_path: Path, apart: float) -> None:
    """The candidate 20 % faster, its potential energy `apart` from the baseline's: within
    the 1 % tolerance a 🚀, beyond it (either way) suspect, and no speed-up is shown."""
    for i in range(1, 6):
        make_run(tmp_path, f"stable__w__kernel-baseline-r{i}", "water-2022.5.log",
                 ns_scale=1 + i / 1000)  # fmt: skip
        run_dir = make_run(tmp_path, f"dev__w__fast-r{i}", "water-2022.5.log",
                           ns_scale=1.2 + i / 1000)  # fmt: skip
        result = RunStore.load(run_dir)
        energies = dict(result.energies or {})
        energies["Potential"] *= 1 + apart
        RunStore.save(run_dir, result.model_copy(update={"energies": energies}))
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline"), load_runs(tmp_path, "dev__w__fast")
    )
    assert cmp.headline.significant and cmp.headline.delta_pct == pytest.approx(20, abs=0.5)
    if abs(apart) < 0.01:
        assert not cmp.suspect and words.marker(cmp.headline) == "🚀"
    else:
        assert cmp.suspect and words.marker(cmp.headline) == "⚠"
        assert f"({abs(apart):.1%} apart, tolerance 1%)" in (words.suspect_note(cmp) or "")
        assert "🚀" not in render(cmp) + webhook_text(cmp)


def _kernel_ladder(run_dir: Path, count: int, scale: float) -> None:
    """A kernel trace of `count` kernels: kernel i takes (i + 1) ms in all, in calls whose
    median is the shorter the more time it takes (so no other order ranks them alike)."""
    from orchestrator.parsers.rocprof import parse_kernel_csv

    trace = parse_kernel_csv(SAMPLE)
    model = trace.kernels[0]
    kernels = [
        model.model_copy(update={"name": f"kernel_{i:02d}", "total_ms": float(i + 1),
                                 "median_us": scale * (100.0 - i)})
        for i in range(count)
    ]  # fmt: skip
    RunStore.save_breakdown(run_dir, trace.model_copy(update={"kernels": kernels}))


def test_the_top_kernels_are_the_ones_taking_the_most_time(tmp_path: Path) -> None:
    """12 kernels, 8 compared: the 8 with the most baseline time, kernel_04 … kernel_11."""
    count = 12
    for i, (b, c) in enumerate(PAIRS, start=1):
        for tag, scale in ((f"kernel-baseline-aa-r{i}", b), (f"aa-r{i}", c)):
            _kernel_ladder(make_run(tmp_path, f"stable__w__{tag}", "water-2022.5.log"),
                           count, scale)  # fmt: skip
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline-aa"), load_runs(tmp_path, "stable__w__aa")
    )
    by_time = sorted(range(count), key=lambda i: -(i + 1))[:8]
    assert sorted(cmp.kernels) == sorted(f"kernel_{i:02d}" for i in by_time)
    assert "top 8 kernels, median call duration in each run:" in render(cmp)


#: Candidate runs 20 % slower than their baseline, measured with a little noise.
SLOWER = [(1.00, 0.80), (1.01, 0.81), (0.99, 0.79), (1.00, 0.81), (1.02, 0.81)]


@pytest.mark.parametrize("paired", [True, False])
def test_three_clean_pairs_give_a_verdict_and_two_do_not(tmp_path: Path, paired: bool) -> None:
    """A marker needs 3 pairs (3 runs a side unpaired): 5 pairs, 2 flagged, leave exactly 3
    clean, and the 🐢 stands; a third flagged pair leaves 2: too busy to judge."""
    _bench_groups(tmp_path, SLOWER)
    base, cand = "stable__w__kernel-baseline-aa", "stable__w__aa"
    for i in (1, 2):
        _flag(tmp_path / f"stable__w__aa-r{i}")
    cmp = compare_runs(load_runs(tmp_path, base), load_runs(tmp_path, cand), paired=paired)
    assert cmp.too_busy is None and len(cmp.left_out) == 2
    assert cmp.headline.n_candidate == 3 and words.marker(cmp.headline) == "🐢"
    _flag(tmp_path / "stable__w__aa-r3")
    cmp = compare_runs(load_runs(tmp_path, base), load_runs(tmp_path, cand), paired=paired)
    assert cmp.too_busy is not None and words.marker(cmp.headline) == "•"
    what = "2 clean pairs remain" if paired else "leaving 5 baseline and 2 candidate runs"
    assert what in words.too_busy(cmp.too_busy)
