"""`nox -s bench -- --llvm <commit>` end to end on the CPU platform, for real.

The LLVM source is the mini llvm-project (`tests/mini_llvm.py`): the unchanged LLVM
toolchain template builds its clang (which forwards to Debian's clang-16), GROMACS is
built with it (the session's dev image: the same inputs are found, not rebuilt), both
sides run interleaved, and the verdict reaches a real local webhook. Everything the
real LLVM path does runs, except LLVM's own CMake.

CI runs the loop end to end on the ROCm platform (`tests/test_rocm_loop.py`), where the
dev image comes from the compile cache (only the HIP units). Here the CPU dev image is
compiled from scratch by the mini-llvm clang (~10 min on 2 cores), one more full compile
than CI's one per path, so this module runs on request: `nox -s tests -- -m full_compile`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import json_webhook

from orchestrator import engine as engine_mod
from orchestrator.images.gromacs import DEV_CURRENT
from orchestrator.store.runstore import RunStore

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.full_compile]

REPO = Path(__file__).resolve().parent.parent
SYSTEM, STEPS = "water:3k", "1000"


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with json_webhook() as hook:
        yield hook


def bench_cli(
    results: Path, llvm_source: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ, "ORCH_PLATFORM": "cpu", "ORCH_RESULTS_DIR": str(results),
        "ORCH_LLVM_SOURCE": str(llvm_source), "NO_PROXY": "127.0.0.1", **env,
    }  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "bench", *args],
        cwd=REPO, env=full, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip


def test_bench_llvm_commit_end_to_end(
    engine: Any,
    session_results: Path,
    mini_llvm: Any,
    stable_image: Any,
    dev_image: Any,
    webhook: tuple[str, list[dict[str, Any]]],
) -> None:
    url, received = webhook
    commit = mini_llvm.head()
    short = commit[:8]
    proc = bench_cli(
        session_results, mini_llvm.path, "--llvm", short, "--against", "stable", "--system",
        SYSTEM, "--steps", STEPS, "--repeats", "4", ORCH_WEBHOOK_URL=url,
        ORCH_WEBHOOK_FORMAT="json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    headline = re.search(
        rf"^LLVM {short} on water:3k:pme vs stable: [\d.]+ ns/day \(baseline [\d.]+", out, re.M
    )
    assert headline, out
    assert "nbnxm" in out and "pme_spread" in out
    assert f"toolchain image gmxbench-toolchain:cpu-llvm-{short} exists" in proc.stderr
    assert f"up to date: {dev_image.tag}" in proc.stderr  # same inputs as the session's
    assert engine_mod.image(engine, DEV_CURRENT).id == dev_image.id  # type: ignore[union-attr]
    verdicts = [p for p in received if "headline" in json.dumps(p)]
    assert verdicts and headline.group(0) in json.dumps(verdicts[-1])
    runs = RunStore(session_results)
    tag = re.search(rf"{re.escape(dev_image.build)}__water-3k-pme__(llvm-{short}-[\d-]+)-r1", out)
    assert tag, out
    group = runs.group(f"{dev_image.build}__water-3k-pme__{tag.group(1)}")
    assert len(group) == 4
    for path in group:
        result = RunStore.load(path)
        assert result.finished and result.ns_per_day
        assert result.llvm_commit == short
        assert result.compiler_version == f"clang version 23.0.0git ({mini_llvm.path} {commit})"
    assert url not in out + proc.stderr  # the webhook URL is a secret


def test_bench_against_another_build_is_an_ab_of_two_builds(
    engine: Any, llvm_settings: Any, mini_llvm: Any, dev_image: Any
) -> None:
    """`--against-llvm A` (and `--against <build>`) make the baseline a dev build: here the
    same commit on both sides, so both groups run the one dev image (an A/A of it)."""
    from orchestrator.core.errors import UserError
    from orchestrator.workflows.bench import BenchRequest, bench
    from orchestrator.workflows.build import CompilerSpec

    short = mini_llvm.head()[:8]
    for against in (CompilerSpec("llvm", short), CompilerSpec("build", dev_image.build)):
        req = BenchRequest(candidate=CompilerSpec("llvm", short), baseline=against, system=SYSTEM,
                           steps=500, repeats=4)  # fmt: skip
        cmp = bench(engine, llvm_settings, req).comparison
        assert all(run.startswith(f"{dev_image.build}__") for run in cmp.baseline), cmp.baseline
        assert all(run.startswith(f"{dev_image.build}__") for run in cmp.candidate)
        assert cmp.codegen is None  # one image: nothing to diff
    with pytest.raises(UserError, match="no GROMACS image gromacs:no-such-build"):
        missing = CompilerSpec("build", "no-such-build")
        bench(engine, llvm_settings, BenchRequest(baseline=missing, repeats=4))
