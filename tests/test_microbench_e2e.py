"""Microbenchmark recipes for real: compiled in the builds' images by their own compilers, run in
run containers, compared by bench; and the HIP variant compiled for gfx1201 with
Debian's ROCm stack (the code object is read back; no AMD GPU runs it here)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from orchestrator import engine as engine_mod
from orchestrator.core.errors import UserError
from orchestrator.images import microbench
from orchestrator.report import words
from orchestrator.report.text import microbench_run_text, render
from orchestrator.runs.runner import RunRequest, execute, plan_run
from orchestrator.store.database import Database, runs
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.build import CompilerSpec

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _run(engine: Any, settings: Any, build: str, system: str, tag: str) -> Any:
    plan = plan_run(engine, settings, RunRequest(build=build, system=system, tag=tag))
    return plan, execute(engine, settings, plan)


def test_bandwidth_runs_in_the_stable_image_with_its_compiler(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    plan, result = _run(engine, cpu_settings, stable_image.tag, "bandwidth:16MiB", "k1")
    assert result.finished, result.failure
    assert result.kind == "kernel" and result.headline == "ro_peak"
    assert set(result.metrics) == {"ro_peak", "rw_peak"}
    assert all(m.unit == "GB/s" and m.value > 0.5 for m in result.metrics.values())
    assert result.facts["api"] == "openmp" and result.build == stable_image.build
    labels = engine.images.get(plan.image_id).labels
    assert labels["gmxbench.kind"] == "kernels"
    assert labels["gmxbench.compiler"] == stable_image.compiler  # the build's own compiler
    assert "ro_peak" in microbench_run_text(result)
    db = Database.of(cpu_settings)  # recorded in the results database as it ended
    row = db.query(runs.select().where(runs.c.run_id == result.run_id))[0]
    assert row.state == "finished" and row.headline_value == result.metrics["ro_peak"].value
    assert row.image_id == plan.image_id and row.kind == "kernel"
    started = (
        time.monotonic()
    )  # the microbenchmark image is keyed by its inputs: found, not rebuilt
    again = microbench.ensure(engine, cpu_settings, stable_image.tag, "bandwidth")
    assert again.id == plan.image_id and time.monotonic() - started < 10
    _, nt = _run(engine, cpu_settings, stable_image.tag, "bandwidth:16MiB:nt", "k1")
    assert nt.finished and nt.command[0].endswith("/bandwidth-nt")


def test_bench_compares_microbenchmarks_of_a_toolchain_without_building_gromacs(
    engine: Any, cpu_settings: Any, stable_image: Any, toolchain_image: str
) -> None:
    req = BenchRequest(
        candidate=CompilerSpec("toolchain", toolchain_image), system="bandwidth:16MiB", repeats=4
    )
    cmp = bench(engine, cpu_settings, req).comparison
    assert cmp.headline_name == "ro_peak" and cmp.headline_unit == "GB/s"
    assert cmp.headline.n_candidate == 4 and set(cmp.metrics) == {"rw_peak"}
    assert all(name.startswith("toolchain-llvm-") for name in cmp.candidate)
    assert all(name.startswith(f"{stable_image.build}__") for name in cmp.baseline)
    text = render(cmp)
    assert text.startswith(words.headline_text(cmp)) and "rw_peak" in text


def test_tune_finds_each_compilers_optimum_and_says_whether_it_moved(
    engine: Any, cpu_settings: Any, stable_image: Any, toolchain_image: str
) -> None:
    req = BenchRequest(
        candidate=CompilerSpec("toolchain", toolchain_image), system="tune:8MiB:quick", repeats=4
    )
    cmp = bench(engine, cpu_settings, req).comparison
    assert cmp.headline_name == "best_ms" and cmp.headline_unit == "ms"
    assert words.marker(cmp.metrics["impact"]) == "•" and cmp.metrics["impact"].p_value is None
    optimum = next(line for line in words.findings(cmp) if line.startswith("optimum "))
    assert "VEC=" in optimum and "UNROLL=" in optimum
    runs = cpu_settings.results_dir
    for name in cmp.baseline + cmp.candidate:  # Kernel Tuner's own cache file is kept
        assert (runs / name / "tune_cache.json").is_file()
        assert (runs / name / "tune_summary.json").is_file()


def test_hip_bandwidth_compiles_to_gfx1201_code_with_nontemporal_accesses(
    engine: Any, rocm_settings: Any, rocm_stable: Any
) -> None:
    image = microbench.ensure(engine, rocm_settings, rocm_stable.tag, "bandwidth")
    assert image.compiler.api == "hip" and "--offload-arch=gfx1201" in image.compiler.flags
    llvm = "/usr/lib/llvm-21/bin"
    script = (
        "set -e; cd /tmp; for b in bandwidth bandwidth-nt; do "
        f"cp /opt/gmxbench/kernels/bin/$b .; {llvm}/llvm-objdump --offloading $b > /dev/null; "
        f'echo "== $b"; {llvm}/llvm-objdump -d --mcpu=gfx1201 '
        "$b.*gfx1201 | grep -o 'global_[a-z]*_b128.*' | sort -u; done"
    )
    code, out = engine_mod.run_capture(engine, image.id, ["sh", "-c", script])
    assert code == 0, out
    temporal, nt = out.split("== bandwidth-nt")
    assert "global_load_b128" in temporal and "global_store_b128" in temporal
    assert "TH_LOAD_NT" not in temporal and "TH_STORE_NT" not in temporal
    assert "TH_LOAD_NT" in nt and "TH_STORE_NT" in nt
    with pytest.raises(UserError, match="hip-python"):  # no Kernel Tuner backend pinned yet
        microbench.ensure(engine, rocm_settings, rocm_stable.tag, "tune")
