"""`history`'s change points on simulated histories (`nox -s perf`).

Each trial is a history of `COMMITS` commits with a few runs each, built into `Sample`s and
passed through the product's own `history.build_series` (E-divisive with its permutation
test, then the marker threshold): the share of A/A histories (no change anywhere) that show
any change point, and for a slowdown planted at commit `STEP_AT` the share of histories
where a change point is found within `NEAR` commits of it (the power), exactly there, and
the share with a change point farther away (a false one).
Multiplicative log-normal noise (CV as given), independent runs; fixed seeds.
"""

from __future__ import annotations

import math
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from orchestrator.verdict.history import Sample, build_series

COMMITS = 50
STEP_AT = 25
NEAR = 2
AA_TRIALS = 600
POWER_TRIALS = 150


@dataclass(frozen=True)
class Cell:
    cv: float
    runs: int  # per commit
    step: float  # the slowdown planted at STEP_AT (0: A/A)
    trials: int


CELLS = (
    Cell(0.02, 3, 0.0, AA_TRIALS),
    Cell(0.03, 3, 0.0, AA_TRIALS),
    Cell(0.05, 2, 0.0, AA_TRIALS),
    Cell(0.03, 3, 0.03, POWER_TRIALS),
    Cell(0.03, 3, 0.05, POWER_TRIALS),
    Cell(0.05, 2, 0.03, POWER_TRIALS),
    Cell(0.05, 2, 0.05, POWER_TRIALS),
)


def history(cell: Cell, rng: random.Random) -> list[Sample]:
    """One simulated history: ns/day of `cell.runs` runs of each commit, oldest first."""
    samples = []
    for commit in range(COMMITS):
        level = 100.0 * (1 - cell.step if commit >= STEP_AT else 1.0)
        for run in range(cell.runs):
            samples.append(Sample(
                run_id=f"c{commit:02d}-r{run}", build=f"c{commit:02d}", image_tag="sim",
                image_id="sha256:sim", host="sim", started=f"2026-01-01T00:{commit:02d}:{run:02d}",
                value=level * math.exp(rng.gauss(-cell.cv**2 / 2, cell.cv)),
            ))  # fmt: skip
    return samples


def run_cell(cell: Cell) -> dict[str, Any]:
    rng = random.Random(hash((cell.cv, cell.runs, cell.step)) & 0xFFFFFFFF)
    any_cp = near = exact = far = 0
    for _ in range(cell.trials):
        series = build_series("sim", "ns/day", "ns/day", True, history(cell, rng))
        found = [int(p.key[1:]) for p in series.change_points]
        any_cp += bool(found)
        near += any(abs(c - STEP_AT) <= NEAR for c in found)
        exact += STEP_AT in found
        far += any(abs(c - STEP_AT) > NEAR for c in found)
    row: dict[str, Any] = {"CV": f"{cell.cv:.0%}", "runs/commit": cell.runs}
    if cell.step == 0:
        row |= {"step": "none (A/A)", "any change point": f"{any_cp / cell.trials:.1%}"}
    else:
        row |= {
            "step": f"{cell.step:.0%} at commit {STEP_AT}",
            f"found within ±{NEAR} commits (power)": f"{near / cell.trials:.1%}",
            "at the commit": f"{exact / cell.trials:.1%}",
            f"one > {NEAR} commits away": f"{far / cell.trials:.1%}",
        }
    return row | {"trials": cell.trials}


def main(workers: int | None = None) -> list[dict[str, Any]]:
    """One row per cell, and the time it all took in the last row's `trials`."""
    started = time.monotonic()
    with ProcessPoolExecutor(workers or os.cpu_count() or 2) as pool:
        rows = list(pool.map(run_cell, CELLS))
    rows.append({"CV": f"{time.monotonic() - started:.0f} s in all"})
    return rows


if __name__ == "__main__":
    from tabulate import tabulate

    print(tabulate(main(), headers="keys"))
