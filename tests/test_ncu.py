"""Nsight Compute's CSV, read from real H100 runs of GROMACS (`tests/data/ncu/README.md`)."""

from __future__ import annotations

import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.parsers.ncu import parse_ncu_csv

DATA = Path(__file__).parent / "data" / "ncu"
SOLVE = "void pme_solve_kernel<1, 0, 0>(PmeGpuKernelParams)"
SPREAD = "void pme_spline_and_spread_kernel<4, 1, 1, 1, 1, 1, 0, 0>(PmeGpuKernelParams)"
GATHER = "void pme_gather_kernel<4, 1, 1, 1, 0, 0>(PmeGpuKernelParams)"


def _text(name: str) -> str:
    return lzma.decompress((DATA / f"h100-ncu-{name}.csv.xz").read_bytes()).decode()


def test_every_kernel_is_summed_over_its_launches() -> None:
    text = _text("A-1")
    assert text.startswith("==PROF==") and '"2,304"' in text  # what ncu really writes
    profile = parse_ncu_csv(text, "A-1")
    assert len(profile.kernels) == 21
    solve, spread = profile.kernels[SOLVE], profile.kernels[SPREAD]
    assert (solve.launches, solve.instructions) == (198, 198 * 1_256_640)
    assert (spread.launches, spread.instructions) == (201, 201 * 3_651_274)
    assert profile.kernels["dummy_kernel()"].time_ns == 2304  # "2,304": a separator, not 2.3
    assert 1.0e6 < solve.time_ns < 1.1e6  # 198 launches of 5-6 µs


def test_instructions_repeat_across_runs_and_move_with_the_code() -> None:
    first, again = parse_ncu_csv(_text("A-1"), "A-1"), parse_ncu_csv(_text("A-2"), "A-2")
    changed = parse_ncu_csv(_text("B-1"), "B-1")
    same = [
        k for k in first.kernels if first.kernels[k].instructions == again.kernels[k].instructions
    ]
    assert len(same) >= 16 and SOLVE in same and GATHER in same
    for name, kernel in first.kernels.items():  # the rest: pair lists differ a little
        assert abs((again.kernels[name].instructions or 0) / (kernel.instructions or 1) - 1) < 2e-4
    gather = (changed.kernels[GATHER].instructions or 0) / (first.kernels[GATHER].instructions or 1)
    assert round(gather - 1, 4) == 0.0193  # -maxrregcount=48 made pme_gather execute more
    assert changed.kernels[SOLVE].instructions == first.kernels[SOLVE].instructions


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda t: t.replace('"Metric Value"', '"Value"'), "no column 'Metric Value'"),
        (lambda t: t.replace('"ns","2,304"', '"us","2.304"'), "is in 'us', not 'ns'"),
        (lambda t: t.replace('"2,304"', '"n/a"'), "'n/a', not a number"),
        (lambda t: t.replace("gpu__time_duration.sum", "gpu__cycles.sum"), "no gpu__time"),
    ],
)
def test_a_damaged_csv_is_one_paragraph_naming_it(damage: Callable[[str], str], said: str) -> None:
    with pytest.raises(UserError, match=r"ncu-A-1\.csv") as caught:
        parse_ncu_csv(damage(_text("A-1")), "ncu-A-1.csv")
    assert said in caught.value.message and "--print-units base" in caught.value.message
