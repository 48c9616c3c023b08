"""Time the results database: ingest 10,000 runs into SQLite, then `history` over them.

The runs are real records: each is a `RunResult` with the cycle breakdown of a real
md.log (`tests/data/mdlog/water-2022.5.log`), 200 runs on each of 50 LLVM commits of a
git repository made here (so `history` orders by commit date, as it does for a user).
Targets (issue 10): ingest ≤ 10 s, `history` ≤ 0.5 s. Run `python benchmarks/bench_db.py`.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.store.database import Database, import_runs
from orchestrator.store.layout import sqlite_path
from orchestrator.store.records import ImageRef, RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.history import load_series

RUNS, COMMITS = 10_000, 50
LOG = Path(__file__).resolve().parents[1] / "tests" / "data" / "mdlog" / "water-2022.5.log"


def _repository(path: Path) -> list[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    for role in ("AUTHOR", "COMMITTER"):
        env |= {f"GIT_{role}_NAME": "b", f"GIT_{role}_EMAIL": "b@example.invalid"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    commits = []
    for i in range(COMMITS):
        date = f"2026-03-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00"
        subprocess.run(["git", "-C", str(path), "commit", "-q", "--allow-empty", "-m", f"c{i}"],
                       check=True, env={**env, "GIT_COMMITTER_DATE": date})  # fmt: skip
        head = ["git", "-C", str(path), "rev-parse", "--short=8", "HEAD"]
        commits.append(subprocess.run(head, capture_output=True, text=True).stdout.strip())
    return commits


def _write_runs(store: RunStore, commits: list[str]) -> None:
    breakdown = cycle_breakdown(parse_mdlog(LOG))
    rng = random.Random(10)
    for i in range(RUNS):
        commit = commits[i % COMMITS]
        run = f"dev-llvm-{commit}__water-3k-pme__t{i // COMMITS}"
        path = store.create(run)
        result = RunResult(
            run_id=run, build=f"dev-llvm-{commit}", system="water:3k:pme", tag=f"t{i}",
            platform="cpu", timestamp=f"2026-03-10T00:00:{i % 60:02d}+00:00", finished=True,
            ns_per_day=100 * rng.lognormvariate(0, 0.05) * (0.95 if i % COMMITS >= 30 else 1),
            llvm_commit=commit, image=ImageRef(tag=f"gromacs:dev-llvm-{commit}", id="sha256:0"),
            host=HostInfo(hostname="bench", kernel="k"), command=["gmx", "mdrun"],
        )  # fmt: skip
        RunStore.save(path, result)
        RunStore.save_breakdown(path, breakdown)


def main() -> list[dict[str, float | int | str]]:
    with tempfile.TemporaryDirectory(prefix="gmxbench-bench-db-") as tmp:
        commits = _repository(Path(tmp) / "llvm")
        store = RunStore(Path(tmp) / "results")
        _write_runs(store, commits)
        db = Database(f"sqlite:///{sqlite_path(Path(tmp) / 'results')}")
        db.migrate()
        started = time.perf_counter()
        done = import_runs(db, store)
        ingest = time.perf_counter() - started
        if done.written != RUNS or db.count() != RUNS:
            raise SystemExit(f"wrong ingest: {done.written} written, {db.count()} in the database")
        started = time.perf_counter()
        again = import_runs(db, store)  # idempotent: the same rows again
        reingest = time.perf_counter() - started
        rows = []
        for metric in ("ns/day", "nbnxm"):
            started = time.perf_counter()
            series = load_series(db, "water:3k:pme", metric, llvm_source=str(Path(tmp) / "llvm"))
            seconds = time.perf_counter() - started
            flagged = [p.key for p in series.change_points]
            rows.append({
                "benchmark": f"history {metric}", "runs": RUNS, "seconds": round(seconds, 3),
                "points": len(series.points), "change points": ", ".join(flagged) or "none",
                "target_s": 0.5,
            })  # fmt: skip
        size_mb = sqlite_path(Path(tmp) / "results").stat().st_size / 1e6
    return [
        {"benchmark": "db import (SQLite)", "runs": RUNS, "seconds": round(ingest, 2),
         "runs_per_s": round(RUNS / ingest), "db_mb": round(size_mb, 1), "target_s": 10.0},
        {"benchmark": "db import again (idempotent)", "runs": again.written,
         "seconds": round(reingest, 2), "runs_per_s": round(RUNS / reingest), "target_s": 10.0},
        *rows,
    ]  # fmt: skip


if __name__ == "__main__":
    from tabulate import tabulate

    print(tabulate(main(), headers="keys"))
