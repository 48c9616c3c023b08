"""The compiler loop end to end on the CPU platform: A/A noise check and dev vs stable."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.results.report import render
from orchestrator.runs.store import RunStore
from orchestrator.workflows.bench import BenchRequest, bench

pytestmark = [pytest.mark.engine, pytest.mark.slow]

SYSTEM = "water:3k"
STEPS = 1000


def test_aa_same_build_has_no_significant_change(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    # alpha 0.01 keeps this test's own false-alarm rate under ~1% per CI run.
    req = BenchRequest(system=SYSTEM, steps=STEPS, repeats=5, tag="aa", alpha=0.01)
    outcome = bench(engine, cpu_settings, req)
    cmp = outcome.comparison
    assert outcome.runs == 10 and 0 < outcome.container_seconds < outcome.elapsed
    assert cmp.paired and all("__kernel-baseline-aa-r" in name for name in cmp.baseline)
    assert cmp.ns_per_day.n_baseline == cmp.ns_per_day.n_candidate == 5
    assert cmp.categories, "the CPU cycle accounting gives per-category timings"
    for name, verdict in {"ns/day": cmp.ns_per_day, **cmp.categories}.items():
        assert verdict.testable, name
        assert not verdict.significant, f"A/A found a change in {name}: {verdict.note}"
        assert verdict.marker == "•"
    out = render(cmp)
    assert out.startswith(f"{stable_image.build} on water:3k:pme: ")  # the headline first
    assert "statistics: 5 interleaved pairs" in out


@pytest.mark.full_compile  # builds the CPU dev image (see tests/test_images_e2e.py)
def test_dev_against_stable_with_repeats(
    engine: Any, cpu_settings: Any, stable_image: Any, toolchain_image: str
) -> None:
    req = BenchRequest(toolchain=toolchain_image, system=SYSTEM, steps=STEPS, repeats=3)
    cmp = bench(engine, cpu_settings, req).comparison
    out = render(cmp)
    assert cmp.label.startswith("LLVM ")  # the dev compiler is an LLVM toolchain
    assert out.startswith(cmp.headline)
    assert "statistics: 3 interleaved pairs" in out  # the baseline is measured again
    assert "nbnxm" in out and "pme_spread" in out
    for run in cmp.candidate:
        result = RunStore.load(cpu_settings.results_dir / run)
        assert result.compiler_version and "clang version 23.0.0git" in result.compiler_version
        assert result.finished and result.ns_per_day
