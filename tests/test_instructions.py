"""Executed instructions per kernel as a verdict of their own, measured on ten real H100 runs.

`tests/data/ncu/`: five ncu runs each of GROMACS 2026.3 built as is (A) and with
`-maxrregcount=48` (B). The false-alarm rates below are computed here, from those files:
every A/A pair of single runs (10 pairs x 21 kernels) under the instruction rule, and under
the time rule the tool applies per kernel (`verdict.compare.category_verdicts`, the
threshold of `verdict.defaults`).
"""

from __future__ import annotations

import itertools
import lzma
from functools import cache
from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.parsers.instructions import (
    InstructionCounts,
    KernelInstructions,
    parse_counter_collection,
)
from orchestrator.parsers.ncu import NcuProfile, instruction_counts, parse_ncu_csv
from orchestrator.report import instructions as instructions_report
from orchestrator.verdict.compare import category_verdicts
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT
from orchestrator.verdict.instructions import Movement, compare_instructions
from orchestrator.verdict.model import Direction

DATA = Path(__file__).parent / "data"
A, B = [f"A-{i}" for i in range(1, 6)], [f"B-{i}" for i in range(1, 6)]
GATHER = "void pme_gather_kernel<4, 1, 1, 1, 0, 0>(PmeGpuKernelParams)"
SCAN = "void cub::DeviceScanKernel<"
PRUNE = "void gmx::nbnxn_kernel_prune_cuda<0>("
LEAPFROG = "void gmx::leapFrogKernel<1, 0>"
#: The kernels whose SASS differs between A and B (`cuobjdump -sass` of both, kept with the
#: runs): of the 21 that ran, only these three.
CHANGED_PREFIXES = (GATHER, SCAN, PRUNE)


@cache
def _profile(run: str) -> NcuProfile:
    text = lzma.decompress((DATA / "ncu" / f"h100-ncu-{run}.csv.xz").read_bytes()).decode()
    return parse_ncu_csv(text, run)


def _counts(run: str) -> InstructionCounts:
    counts = instruction_counts(_profile(run))
    assert counts is not None
    return counts


def _name(prefix: str) -> str:
    return next(n for n in _profile("A-1").kernels if n.startswith(prefix))


CHANGED = {_name(p) for p in CHANGED_PREFIXES}


def test_no_aa_pair_of_single_runs_moves_a_count() -> None:
    moved = total = 0
    for side in (A, B):
        for x, y in itertools.combinations(side, 2):
            cmp = compare_instructions([_counts(x)], [_counts(y)])
            assert cmp is not None
            total += len(cmp.kernels)
            moved += sum(v.movement is not Movement.NONE for v in cmp.kernels.values())
    assert total == 2 * 10 * 21
    assert moved / total <= 0.05 and moved == 0  # measured: 0 of 420


def test_the_time_rule_on_the_same_pairs_cries_wolf() -> None:
    """One run a side, per kernel median launch time against the 2% threshold: 24 of 210
    A/A comparisons exceed it (11%); with statistics (2 runs against 3) none can be tested."""
    beyond = 0
    names = list(_profile("A-1").kernels)
    for x, y in itertools.combinations(A, 2):
        for name in names:
            a, b = _profile(x).kernels[name].median_ns, _profile(y).kernels[name].median_ns
            beyond += abs((b or 0) / (a or 1) - 1) * 100 > THRESHOLD_PCT
    assert beyond == 24
    judged = 0
    for group in itertools.combinations(A, 2):
        rest = [r for r in A if r not in group]
        verdicts = category_verdicts(
            {n: [_profile(r).kernels[n].median_ns or 0 for r in group] for n in names},
            {n: [_profile(r).kernels[n].median_ns or 0 for r in rest] for n in names},
            paired=False, threshold_pct=THRESHOLD_PCT, alpha=ALPHA,
        )  # fmt: skip
        judged += sum(v.testable for v in verdicts.values())
        assert all(v.direction is Direction.NONE for v in verdicts.values())
    assert judged == 0


def test_a_to_b_marks_the_changed_kernels_whose_count_moved() -> None:
    cmp = compare_instructions([_counts(r) for r in A], [_counts(r) for r in B], CHANGED)
    assert cmp is not None and cmp.code_known and len(cmp.kernels) == 21
    moved = {n: v for n, v in cmp.kernels.items() if v.movement is not Movement.NONE}
    assert set(moved) == {GATHER, _name(SCAN)}
    gather, scan = moved[GATHER], moved[_name(SCAN)]
    assert gather.movement is Movement.MORE and round(gather.delta_pct, 2) == 1.93
    assert scan.movement is Movement.FEWER and round(scan.delta_pct, 2) == -0.49
    assert gather.marked and scan.marked and not any(v.suspect for v in cmp.kernels.values())
    assert gather.baseline_per_launch == 5_433_260 and gather.baseline_spread == 0.0
    assert round(gather.limit_pct, 3) == 0.3  # k x floor: both sides repeat exactly
    prune = cmp.kernels[
        _name(PRUNE)
    ]  # its code changed, its count stayed within its pair-list noise
    assert prune.code_changed and prune.movement is Movement.NONE and not prune.marked


def test_time_marks_an_unchanged_kernel_where_the_count_does_not() -> None:
    """The same five interleaved pairs, paired: the time test marks leapFrogKernel<1, 0>
    (byte-identical code) 2.3% faster; its count is exactly the same in all ten runs."""
    names = list(_profile("A-1").kernels)
    verdicts = category_verdicts(
        {n: [_profile(r).kernels[n].median_ns or 0 for r in A] for n in names},
        {n: [_profile(r).kernels[n].median_ns or 0 for r in B] for n in names},
        paired=True, threshold_pct=THRESHOLD_PCT, alpha=ALPHA,
    )  # fmt: skip
    marked = {n for n, v in verdicts.items() if v.direction is not Direction.NONE}
    assert marked == {_name(LEAPFROG)} and not marked & CHANGED
    cmp = compare_instructions([_counts(r) for r in A], [_counts(r) for r in B], CHANGED)
    assert cmp is not None and cmp.kernels[_name(LEAPFROG)].delta_pct == 0


def test_counts_compare_per_launch_and_a_move_without_a_code_change_is_suspect() -> None:
    run = _counts("A-1")
    fewer = run.model_copy(
        update={"kernels": {**run.kernels, GATHER: KernelInstructions(
            name=GATHER, launches=100, instructions=100 * 5_433_260)}}
    )  # fmt: skip
    same = compare_instructions([run], [fewer], CHANGED)
    assert same is not None and same.kernels[GATHER].movement is Movement.NONE
    moved = compare_instructions([_counts("A-1")], [_counts("B-1")], set())
    assert moved is not None and moved.kernels[GATHER].suspect
    assert not moved.kernels[GATHER].marked
    unknown = compare_instructions([_counts("A-1")], [_counts("B-1")])
    assert unknown is not None and not unknown.code_known
    assert unknown.kernels[GATHER].code_changed is None and not unknown.kernels[GATHER].marked


def test_warp_and_wave_instructions_never_compare() -> None:
    wave = _counts("A-1").model_copy(update={"unit": "wave"})
    assert compare_instructions([_counts("A-1")], [wave]) is None
    assert compare_instructions([], [wave]) is None


def test_rocprofv3_counter_collection_real_sample() -> None:
    text = (DATA / "rocprofv3_counters" / "counter_collection.csv").read_text()
    counts = parse_counter_collection(text, "counter_collection.csv", counter="SQ_WAVES")
    assert counts.unit == "wave" and len(counts.kernels) == 4
    divide = counts.kernels["divide_kernel(float*, float const*, float const*, int, int)"]
    assert (divide.launches, divide.instructions) == (1, 16384)
    with pytest.raises(UserError, match="no SQ_INSTS row") as caught:
        parse_counter_collection(text, "counter_collection.csv")
    assert "--pmc SQ_INSTS" in caught.value.message
    with pytest.raises(UserError, match="no column 'Counter_Value'"):
        parse_counter_collection(text.replace("Counter_Value", "Value"), "x.csv")


def test_the_report_shows_counts_beside_time_with_their_own_marker() -> None:
    cmp = compare_instructions([_counts(r) for r in A], [_counts(r) for r in B], CHANGED)
    assert cmp is not None
    text = "\n".join(instructions_report.lines(cmp))
    first = instructions_report.rows(cmp)[0]
    assert first[0] == instructions_report.CHANGED and first[1] == GATHER
    assert first[2:] == ("5,433,260 → 5,538,064", "+1.93% instr", "0.0e+00", "changed")
    assert "-0.49% instr" in text and "at least 0.3%" in text and "🐢" not in text
    suspect = compare_instructions([_counts("A-1")], [_counts("B-1")], set())
    assert suspect is not None
    assert instructions_report.rows(suspect)[0][0] == instructions_report.INPUT
    unknown = compare_instructions([_counts("A-1")], [_counts("B-1")])
    assert unknown is not None and "no codegen diff" in "\n".join(
        instructions_report.lines(unknown)
    )
    data = instructions_report.as_json(cmp)
    assert (
        data["kernels"][GATHER]["marker"] == "◆" and data["kernels"][GATHER]["movement"] == "more"
    )
