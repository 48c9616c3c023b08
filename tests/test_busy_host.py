"""A bench beside a real competing process: no verdict, and it says why (issue 29 item 1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from orchestrator.core.events import Event, Step
from orchestrator.report import words
from orchestrator.report.text import render, webhook_text
from orchestrator.store.runstore import RunStore
from orchestrator.workflows.bench import BenchRequest, bench

pytestmark = pytest.mark.engine

PAIRS = 4  # the fewest bench runs (a marker needs 3, made even): enough for a verdict


@pytest.fixture
def busy_cpus() -> Iterator[list[subprocess.Popen[bytes]]]:
    """One process spinning on every core for the duration of the test, ended by its pid."""
    spin = "import time\nwhile True:\n    time.perf_counter()\n"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 2)]
    try:
        yield procs
    finally:
        for proc in procs:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)


def test_an_aa_bench_beside_a_busy_cpu_gives_no_marker_and_says_why(
    engine: Any, cpu_settings: Any, stable_image: Any, busy_cpus: list[Any]
) -> None:
    events: list[Event] = []
    req = BenchRequest(
        system="water:3k", steps=500, repeats=PAIRS, tag=f"busy-{uuid.uuid4().hex[:8]}"
    )
    clock = time.monotonic()
    outcome = bench(engine, cpu_settings, req, emit=events.append)
    print(f"\nA/A bench beside {len(busy_cpus)} spinning processes: "
          f"{time.monotonic() - clock:.1f} s, {outcome.runs} runs")  # fmt: skip
    assert all(proc.poll() is None for proc in busy_cpus), "the competition ran throughout"
    cmp = outcome.comparison
    assert cmp is not None and outcome.verdict == "too busy"  # the database's and webhook's
    # Every run saw the spinning processes; each pair was measured again once (the budget
    # is the plan's most, 4 extra pairs), then the bench stopped: 8 pairs, all left out.
    results = [RunStore.load(cpu_settings.results_dir / r) for r in cmp.baseline + cmp.candidate]
    assert len(results) == outcome.runs == 4 * PAIRS
    assert all(r.noise is not None and r.noise.warnings for r in results)
    assert any("python" in p.name for r in results if r.noise for p in r.noise.top_others)
    # One line a batch names its pairs left out: the first batch's, measured again; then
    # the second's, with the budget spent (the console's length follows pairs, not runs).
    shared = [e.text for e in events if isinstance(e, Step) and "shared the machine" in e.text]
    assert shared == [
        f"pairs {_listed(1, PAIRS)} shared the machine: left out of the verdict: {PAIRS} more "
        "pairs",
        f"pairs {_listed(PAIRS + 1, 2 * PAIRS)} shared the machine: left out of the verdict, "
        "not measured again: the "
        f"budget of {PAIRS} extra pairs is spent",
    ]
    assert len(cmp.left_out) == 2 * PAIRS
    assert cmp.too_busy is not None
    assert words.too_busy(cmp.too_busy).startswith(
        f"the host was too busy to judge: {2 * PAIRS} of {2 * PAIRS} pairs had a run that "
        "shared the machine"
    )
    verdicts = [cmp.headline, *cmp.categories.values(), *cmp.kernels.values()]
    assert cmp.categories and all(words.marker(v) == "•" and not v.significant for v in verdicts)
    out, hook = render(cmp), webhook_text(cmp)
    assert "🚀" not in out + hook and "🐢" not in out + hook
    assert "too busy to judge" in words.stats_line(cmp) and "no verdict" in out
    assert "other processes used" in out  # and what it shared the machine with


def _listed(first: int, last: int) -> str:
    return ", ".join(str(pair) for pair in range(first, last + 1))
