"""Microbenchmark recipes without an engine: names, outputs of real runs, the tuning analysis,
and compare judging each metric in its declared direction.

Fixtures in tests/data/microbench/: `cpu/` came from this tool's own runs on the CI machine
(bandwidth sweep of stable-cpu-gcc12; `tune::quick` caches of gcc 12 and clang 16);
`gpu/` from the CUDA build of the same sources on the borrowed NVIDIA GPU (device.txt
says which, with the exact commands).
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
from test_faults import record, save  # a RunResult as the runner writes it

from orchestrator.core.errors import UsageError, UserError
from orchestrator.images.user_kernels import BINARY, UserProgram
from orchestrator.parsers.microbench import (
    MetricValue,
    bandwidth_values,
    kernel_values,
    optimum_shift,
    parse_bandwidth,
    parse_bytes,
    parse_kernel,
    parse_tune_cache,
    summarize,
)
from orchestrator.report import words
from orchestrator.report.text import render
from orchestrator.runs import microbench_runs
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import load_recipe, load_system
from orchestrator.store.layout import USER_KERNEL_FILE
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.groups import compare_groups

DATA = Path(__file__).parent / "data" / "microbench"
GPU = DATA / "gpu"


@pytest.mark.parametrize(
    ("given", "name", "nbytes"),
    [
        ("bandwidth", "bandwidth:sweep:temporal", None),
        ("bandwidth:64M", "bandwidth:64MiB:temporal", 64 << 20),
        ("bandwidth:1.5GiB:nt", "bandwidth:1.5GiB:nt", 3 << 29),
        ("bandwidth:nt", "bandwidth:sweep:nt", None),
        ("tune::quick", "tune:256MiB:quick", 256 << 20),
        ("tune:1000000", "tune:1000000:full", 1_000_000),
    ],
)
def test_microbench_system_names(given: str, name: str, nbytes: int | None) -> None:
    system = load_system(given)
    assert (system.name, getattr(system, "bytes", "?")) == (name, nbytes)


@pytest.mark.parametrize(
    ("given", "says"),
    [("bandwidth:lots", "not a size in bytes"), ("tune:sweep", "not a size in bytes"),
     ("bandwidth::streaming", "no variant 'streaming'")],
)  # fmt: skip
def test_bad_microbench_system_names_say_what_to_write(given: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        load_system(given)


def test_a_microbench_recipe_is_not_a_gromacs_system() -> None:
    with pytest.raises(UsageError, match="kernel benchmark, not a GROMACS system"):
        load_recipe("bandwidth")


def test_a_recipe_must_declare_its_headline(tmp_path: Path) -> None:
    shipped = Path(__file__).parent.parent / "recipes/tune.toml"
    text = shipped.read_text().replace('headline = "best_ms"', 'headline = "speed"')
    (tmp_path / "tune.toml").write_text(text)
    with pytest.raises(UsageError, match="headline 'speed' is not one of the metrics"):
        load_system("tune", [tmp_path])


def test_sizes_in_bytes() -> None:
    assert parse_bytes("76k") == 76 * 1024 and parse_bytes("2G") == 2 << 30
    assert parse_bytes("1.7GB") is None and parse_bytes("-1") is None


def test_cpu_sweep_gives_peaks_largest_and_every_size() -> None:
    out = parse_bandwidth(DATA / "cpu" / "bandwidth_sweep.json")
    values = bandwidth_values(out)
    assert values["ro_peak"] == max(row.ro_gbs for row in out.rows)
    largest = max(out.rows, key=lambda row: row.bytes)
    assert values["rw_largest"] == largest.rw_gbs
    assert len([k for k in values if k.startswith("ro@")]) == len(out.rows) > 10
    for row in out.rows:  # GB/s is bytes over the median time, copy counting both ways
        assert row.ro_gbs == pytest.approx(row.bytes / row.ro_ms / 1e6, rel=1e-4)
        assert row.rw_gbs == pytest.approx(2 * row.bytes / row.rw_ms / 1e6, rel=1e-4)


def test_gpu_sweep_of_the_cuda_build_parses_and_reaches_hbm() -> None:
    for name in ("bandwidth_cuda.json", "bandwidth_cuda_nt.json"):
        out = parse_bandwidth(GPU / name)
        assert out.api == "cuda" and out.device.compute_units > 100
        assert out.config["vector_bytes"] == 16 and out.config["block"] == 1024
        assert min(row.bytes for row in out.rows) < 100_000 < 1.5e9 < out.rows[-1].bytes
        # past the 50 MB L2, an H100/H200 streams at terabytes per second
        assert 2000 < bandwidth_values(out)["ro_largest"] < 5000


def test_a_single_size_gives_only_its_two_numbers() -> None:
    out = parse_bandwidth(GPU / "bandwidth_cuda_1g.json")
    assert [row.bytes for row in out.rows] == [1 << 30] and out.config["batches"] == 21
    assert set(bandwidth_values(out)) == {"ro_peak", "rw_peak"}


def test_truncated_bandwidth_output_is_a_clear_error(tmp_path: Path) -> None:
    text = (DATA / "cpu" / "bandwidth_sweep.json").read_text()
    (tmp_path / "bandwidth.json").write_text(text[: len(text) // 2])
    with pytest.raises(UserError, match=r"ends mid-way.*stderr\.log"):
        parse_bandwidth(tmp_path / "bandwidth.json")


@pytest.mark.parametrize("cache", ["cpu/tune_cache_gcc12.json", "gpu/tune_cache.json"])
def test_tuning_summary_from_kernel_tuners_own_cache(cache: str) -> None:
    configs = parse_tune_cache(DATA / cache)
    times = [c.time_ms for c in configs.values() if c.time_ms is not None]
    summary = summarize(DATA / cache)
    assert summary.best_ms == min(times) and summary.valid == len(times)
    assert summary.median_ms == statistics.median(times)
    assert summary.impact == pytest.approx(statistics.median(times) / min(times))
    assert summary.impact > 1
    near = sum(t <= 1.1 * min(times) for t in times) / len(times)
    assert summary.within_10pct == near and 0 < near <= 1


def test_the_optimum_moves_when_another_configuration_wins(tmp_path: Path) -> None:
    base = DATA / "cpu" / "tune_cache_gcc12.json"
    data = json.loads(base.read_text())
    best = summarize(base).best
    runner_up = sorted(
        (e for e in data["cache"].values() if e["time"] > best.time_ms), key=lambda e: e["time"]
    )[0]
    runner_up["time"] = best.time_ms / 2  # the candidate compiler made another config best
    moved = tmp_path / "cand.json"
    moved.write_text(json.dumps(data))
    shift = optimum_shift(base, moved)
    assert shift.moved and shift.candidate_best_ms == best.time_ms / 2
    assert shift.old_best_under_candidate_ms == best.time_ms
    assert shift.old_best_penalty_pct == pytest.approx(100.0)
    assert not optimum_shift(base, base).moved


def test_a_cache_of_failures_only_says_the_compiler_cannot_build_it(tmp_path: Path) -> None:
    data = json.loads((DATA / "cpu" / "tune_cache_gcc12.json").read_text())
    for entry in data["cache"].values():
        entry["time"] = "CompilationFailedConfig"
    (tmp_path / "c.json").write_text(json.dumps(data))
    with pytest.raises(UserError, match="every one failed"):
        summarize(tmp_path / "c.json")


def _microbench_runs(tmp_path: Path, side: str, values: list[dict[str, float]]) -> list[Path]:
    """Run directories of `bench`-made pairs with these metric values (bandwidth's specs)."""
    system = load_system("bandwidth:64MiB")
    specs = {m.name: m for m in system.metrics}
    paths = []
    for i, numbers in enumerate(values, start=1):
        tag = f"kernel-baseline-b-r{i}" if side == "base" else f"b-r{i}"
        build = "stable-cpu-gcc12" if side == "base" else "toolchain-clang16"
        metrics = {
            name: MetricValue(value=v, unit=specs[name].unit, better=specs[name].better)
            for name, v in numbers.items()
        }
        result = record(
            f"{build}__{system.name.replace(':', '-')}__{tag}", system=system.name, build=build,
            tag=tag, kind="kernel", headline="ro_peak", finished=True, metrics=metrics,
        )  # fmt: skip
        paths.append(save(tmp_path, result))
    return paths


def test_compare_judges_each_microbench_metric_in_its_declared_direction(tmp_path: Path) -> None:
    base = [{"ro_peak": 40 + d, "rw_peak": 20 + d} for d in (0.0, 0.4, -0.3, 0.2, -0.1)]
    cand = [{"ro_peak": 40 + d, "rw_peak": 24 + d} for d in (0.1, 0.3, -0.2, 0.2, 0.0)]
    _microbench_runs(tmp_path, "base", base)
    _microbench_runs(tmp_path, "cand", cand)
    store = RunStore(tmp_path)
    cmp = compare_groups(
        store.finished("stable-cpu-gcc12__bandwidth-64MiB-temporal__kernel-baseline-b"),
        store.finished("toolchain-clang16__bandwidth-64MiB-temporal__b"),
    )
    assert cmp.paired and cmp.headline_name == "ro_peak" and cmp.headline_unit == "GB/s"
    assert words.marker(cmp.headline) == "•"  # ro_peak did not move
    rw = cmp.metrics["rw_peak"]
    assert rw.significant and rw.improved and words.marker(rw) == "🚀"  # higher GB/s is better
    text = render(cmp)
    assert "ro_peak (GB/s)" in text and "🚀 rw_peak" in text


def test_microbench_runs_are_not_compared_with_mdrun_runs(tmp_path: Path) -> None:
    paths = _microbench_runs(tmp_path, "base", [{"ro_peak": 1.0, "rw_peak": 1.0}] * 2)
    other = tmp_path / "stable-cpu-gcc12__water-6k-pme__x"
    shutil.copytree(paths[0], other)
    result = json.loads((other / "result.json").read_text())
    result |= {"kind": "gromacs", "system": "water:6k:pme", "ns_per_day": 10.0}
    (other / "result.json").write_text(json.dumps(result))
    store = RunStore(tmp_path)
    with pytest.raises(UsageError, match="measure different things"):
        compare_groups(store.finished(paths[0].name), store.finished(other.name), paired=False)


def test_the_newest_sweep_of_a_host_is_its_memory_ceiling(tmp_path: Path) -> None:
    out = parse_bandwidth(DATA / "cpu" / "bandwidth_sweep.json")
    values = bandwidth_values(out)
    system = load_system("bandwidth")
    specs = {m.name: m for m in system.metrics}
    for tag, stamp, host in [("old", "10:00", "h"), ("new", "11:00", "h"), ("else", "12:00", "x")]:
        metrics = {
            name: MetricValue(value=v, unit="GB/s", better=specs[name.split("@")[0]].better)
            for name, v in values.items()
        }
        result = record(
            f"stable-cpu-gcc12__bandwidth-sweep-temporal__{tag}", system=system.name,
            kind="kernel", headline="ro_peak", finished=True, metrics=metrics,
            timestamp=f"2026-11-23T{stamp}:00+00:00",
            host=record("x").host.model_copy(update={"hostname": host}),
        )  # fmt: skip
        save(tmp_path, result)
    found = RunStore(tmp_path).ceiling("h")
    assert found is not None and found.tag == "t" and found.run_id.endswith("__new")
    assert found.metrics is not None and found.metrics["ro_largest"].value == values["ro_largest"]
    assert RunStore(tmp_path).ceiling("nobody") is None


# --- a user's own kernel (tests/data/user_recipes/) -----------------------------------------

USER = Path(__file__).parent / "data" / "user_recipes"
#: The recipe with its HIP and C++ sources (the CUDA one is checked on a real GPU below).
SAXPY_TOML = (USER / "saxpy" / "saxpy.toml").read_text().replace('cuda = "saxpy.cu"\n', "")


def _user_folder(tmp_path: Path, toml: str, files: dict[str, str]) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "saxpy.toml").write_text(toml)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_a_user_recipe_names_its_sources_and_the_platform_picks_one() -> None:
    system = load_system("saxpy:1MiB", [USER / "saxpy"])
    assert isinstance(system, ResolvedMicrobench) and isinstance(system.program, UserProgram)
    assert system.name == "saxpy:1MiB:default" and system.bytes == 1 << 20
    assert system.source == str(USER / "saxpy" / "saxpy.toml")
    written, path = system.program.source("hip", "b")
    assert written == "saxpy.hip" and path == (USER / "saxpy" / "saxpy.hip").resolve()
    assert system.program.source("openmp", "b")[0] == "saxpy.cpp"
    assert system.program.source("cuda", "b")[0] == "saxpy.cu"
    assert system.program.pattern() == "(saxpy|window)"


def test_a_build_whose_api_the_recipe_has_no_source_for_is_told_what_it_has(
    tmp_path: Path,
) -> None:
    folder = _user_folder(tmp_path, SAXPY_TOML, {"saxpy.hip": "", "saxpy.cpp": ""})
    system = load_system("saxpy", [folder])
    assert isinstance(system, ResolvedMicrobench) and isinstance(system.program, UserProgram)
    with pytest.raises(UserError) as cuda:  # no `cuda` source: says what it has
        system.program.source("cuda", "stable-cuda")
    said = cuda.value.message
    assert "saxpy.toml" in said and "hip = 'saxpy.hip'" in said and "cpu = 'saxpy.cpp'" in said
    assert 'Add `cuda = "<file>"`' in said and "stable-cuda" in said


@pytest.mark.parametrize(
    ("sources", "files", "says"),
    [
        ('hip = "../saxpy.hip"', {}, "outside its folder"),
        ('hip = "sub/../../x.hip"', {}, "outside its folder"),
        ('hip = "missing.hip"', {}, "no such file"),
        ('hip = "/etc/passwd"', {}, "outside its folder"),
        ('hip = "has space.hip"', {"has space.hip": ""}, "not a plain file name"),
    ],
)
def test_a_source_outside_the_folder_or_missing_is_one_clear_paragraph(
    tmp_path: Path, sources: str, files: dict[str, str], says: str
) -> None:
    toml = SAXPY_TOML.replace('hip = "saxpy.hip"\ncpu = "saxpy.cpp"', sources)
    folder = _user_folder(tmp_path, toml, files)
    (tmp_path / "saxpy.hip").write_text("// outside")
    with pytest.raises(UsageError) as err:
        load_system("saxpy", [folder])
    said = err.value.message
    assert str(folder / "saxpy.toml") in said and says in said and "\n" not in said, said


def test_a_source_below_the_recipe_folder_is_found(tmp_path: Path) -> None:
    toml = SAXPY_TOML.replace('hip = "saxpy.hip"', 'hip = "src/saxpy.hip"')
    folder = _user_folder(tmp_path, toml, {"src/saxpy.hip": "", "saxpy.cpp": ""})
    system = load_system("saxpy", [folder])
    assert isinstance(system, ResolvedMicrobench) and isinstance(system.program, UserProgram)
    assert system.program.source("hip", "b")[0] == "src/saxpy.hip"


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda t: 'program = "bandwidth"\n' + t, "either a program of ours"),
        (lambda t: t.replace('[sources]\nhip = "saxpy.hip"\ncpu = "saxpy.cpp"\n', ""),
         "either a program of ours"),
        (lambda t: t.replace('hip = "saxpy.hip"\ncpu = "saxpy.cpp"', ""), "names no file"),
        (lambda t: "sweep = true\n" + t, "one size"),
    ],
)  # fmt: skip
def test_a_recipe_has_a_program_or_sources(tmp_path: Path, edit: Any, says: str) -> None:
    folder = _user_folder(tmp_path, edit(SAXPY_TOML), {"saxpy.hip": "", "saxpy.cpp": ""})
    with pytest.raises(UsageError, match=says):
        load_system("saxpy", [folder])


def test_the_harness_output_gives_ms_and_gbs_per_kernel() -> None:
    out = parse_kernel(DATA / "cpu" / "user_saxpy.json")
    assert out.api == "openmp" and [k.name for k in out.kernels] == ["saxpy", "window"]
    values = kernel_values(out)
    assert set(values) == {"saxpy_ms", "saxpy_gbs", "window_ms", "window_gbs"}
    saxpy = out.kernels[0]
    assert values["saxpy_gbs"] == pytest.approx(saxpy.bytes / saxpy.ms / 1e6, rel=1e-4)


@pytest.mark.parametrize("name", ["user_saxpy_cuda.json", "user_saxpy_cuda_1g.json"])
def test_the_harness_times_the_cuda_twin_on_a_real_gpu(name: str) -> None:
    """saxpy.cu through gmxbench_kernel.h, built by nvcc and run on an H100: the same
    document, with HIP/CUDA event timings; past the 50 MB L2 saxpy streams at HBM speed."""
    out = parse_kernel(GPU / name)
    assert out.api == "cuda" and out.device.compute_units == 132
    values = kernel_values(out)
    assert set(values) == {"saxpy_ms", "saxpy_gbs", "window_ms", "window_gbs"}
    assert 2000 < values["saxpy_gbs"] < 3500 and values["window_ms"] > values["saxpy_ms"]
    for kernel in out.kernels:  # GB/s is the declared bytes over the median time
        assert kernel.gbs == pytest.approx(kernel.bytes / kernel.ms / 1e6, rel=1e-4)
        assert kernel.ms_best <= kernel.ms


def test_a_user_run_keeps_the_declared_metrics_and_names_missing_ones(tmp_path: Path) -> None:
    """The recipe picks what it judges: undeclared numbers stay in kernel.json only; a
    declared one the program did not report fails the run, naming what it reported."""
    system = load_system("saxpy", [USER / "saxpy"])
    assert isinstance(system, ResolvedMicrobench)
    shutil.copy(DATA / "cpu" / "user_saxpy.json", tmp_path / USER_KERNEL_FILE)
    result = record("toolchain-x__saxpy-16MiB-default__t-0", build="toolchain-x")
    result.return_code = 0
    microbench_runs.fill(
        result, system.model_copy(update={"metrics": system.metrics[:2]}), tmp_path
    )
    assert result.finished and set(result.metrics) == {"saxpy_gbs", "saxpy_ms"}
    assert result.metrics["saxpy_ms"].better == "lower" and result.facts["api"] == "openmp"
    data = json.loads((tmp_path / USER_KERNEL_FILE).read_text())
    data["kernels"] = data["kernels"][:1]
    (tmp_path / USER_KERNEL_FILE).write_text(json.dumps(data))
    again = record("toolchain-x__saxpy-16MiB-default__t-1", build="toolchain-x")
    again.return_code = 0
    microbench_runs.fill(again, system, tmp_path)
    assert not again.finished and again.failure is not None
    assert "reported no window_gbs, window_ms" in again.failure and "saxpy.toml" in again.failure
    argv, redirect = microbench_runs.command(system, None, "/run")  # type: ignore[arg-type]
    assert argv == [BINARY, "--size", str(16 << 20), "--variant", "default"]
    assert redirect == f" > {USER_KERNEL_FILE}"
