"""What handing a run to SLURM costs: the same run through the local and the SLURM
executor, interleaved, on the one-node cluster the tests start (`tests/slurm.py`).

overhead per run = median wall time of a run through `SlurmExecutor` − median through
`LocalExecutor` (target ≤ 2 s): sbatch, the scheduler's start, a second Python process
on the node, squeue polling, collection. A chain of runs (`--dependency=afterany`) is
timed too, per run. Needs a Docker Engine and Debian's `slurm-wlm` and `munge`.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator import engine
from orchestrator.core.settings import SlurmSettings, load_settings
from orchestrator.images.gromacs import build_gromacs
from orchestrator.runs.executors import Executor, Job, LocalExecutor, SlurmExecutor
from orchestrator.runs.runner import RunRequest
from tests import slurm

REPEATS = 5
SYSTEM = "water:3k"
STEPS = 2000


def _timed(executor: Executor, jobs: list[Job]) -> float:
    started = time.monotonic()
    (chain,) = executor.run([jobs])
    if not all(r.finished for r in chain):
        raise SystemExit(f"perf run failed: {[r.failure for r in chain if not r.finished]}")
    return time.monotonic() - started


def main() -> list[dict[str, float | int | str]]:
    client = engine.connect()
    with tempfile.TemporaryDirectory(prefix="gmxbench-perf-") as tmp, slurm.cluster() as c:
        os.environ["SLURM_CONF"] = str(c.conf)
        settings = load_settings(
            platform="cpu", results_dir=Path(tmp) / "results",
            slurm=SlurmSettings(partition=c.partition, poll_seconds=0.3),
        )  # fmt: skip
        stable = build_gromacs(client, settings, "stable").build or ""

        def job(tag: str) -> Job:
            return Job(tag, RunRequest(build=stable, system=SYSTEM, tag=tag, steps=STEPS))

        local, batch = LocalExecutor(client, settings), SlurmExecutor(client, settings)
        here, there = [], []
        for i in range(REPEATS):
            here.append(_timed(local, [job(f"local{i}")]))
            there.append(_timed(batch, [job(f"slurm{i}")]))
        chain_local = _timed(local, [job(f"chain-local{i}") for i in range(REPEATS)])
        chain_slurm = _timed(batch, [job(f"chain-slurm{i}") for i in range(REPEATS)])
        del os.environ["SLURM_CONF"]
    overhead = [b - a for a, b in zip(here, there, strict=True)]
    return [
        {"benchmark": "run, local executor (s)", "median": round(statistics.median(here), 2),
         "min": round(min(here), 2), "max": round(max(here), 2), "target": ""},
        {"benchmark": "run, SLURM executor (s)", "median": round(statistics.median(there), 2),
         "min": round(min(there), 2), "max": round(max(there), 2), "target": ""},
        {"benchmark": "SLURM overhead per run (s)",
         "median": round(statistics.median(overhead), 2), "min": round(min(overhead), 2),
         "max": round(max(overhead), 2), "target": "≤ 2"},
        {"benchmark": f"chain of {REPEATS}: overhead per run (s)",
         "median": round((chain_slurm - chain_local) / REPEATS, 2), "min": "", "max": "",
         "target": "≤ 2"},
    ]  # fmt: skip
