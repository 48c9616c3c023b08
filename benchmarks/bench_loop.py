"""The compiler loop with nothing changed: time spent outside the container runs.

Runs `bench --toolchain <clang image> --repeats 3 --system water` twice into a fresh
results directory. The first call builds whatever image is missing; the second finds
every image up to date, so all it does besides its six container runs (three
interleaved pairs: every bench measures its baseline again) is the tool's own work:
image lookups, planning, parsing and the diff (target ≤ 10 s).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator import engine
from orchestrator.core.settings import load_settings
from orchestrator.images.toolchain_package import ensure_toolchain_package
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.build import CompilerSpec

PACKAGE = "clang-16"
SYSTEM = "water"
REPEATS = 3


def main() -> list[dict[str, float | int | str]]:
    client = engine.connect()
    rows: list[dict[str, float | int | str]] = []
    with tempfile.TemporaryDirectory(prefix="gmxbench-perf-") as tmp:
        settings = load_settings(platform="cpu", results_dir=Path(tmp) / "results")
        toolchain = ensure_toolchain_package(client, settings, PACKAGE)
        for call in ("first (builds what is missing)", "second (nothing changed)"):
            request = BenchRequest(
                candidate=CompilerSpec("toolchain", toolchain), system=SYSTEM, repeats=REPEATS
            )
            outcome = bench(client, settings, request)
            rows.append(
                {
                    "bench call": call,
                    "container runs": outcome.runs,
                    "total s": round(outcome.elapsed, 1),
                    "in containers s": round(outcome.container_seconds, 1),
                    "outside s": round(outcome.outside_seconds, 1),
                    "target": "≤ 10 s (second call)",
                }
            )
    return rows
