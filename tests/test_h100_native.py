"""What the native executor left on the lent H100 (issue 41), read again here.

`tests/data/h100-native/`: `bench --executor native --platform cuda` of GROMACS 2026.3 on
an 88k-atom water box, natively (no container engine) on an H100 with nvcc 13.0, made by
`device-41.sh` (README.md beside it). Kept: the two builds' codegen fingerprints and
lockfiles, 15 runs' records, breakdowns and ncu instruction counts, one ncu CSV, and the
console output of every bench. The records say what the tool claimed at the time; these
tests recompute the claims from them with today's code.
"""

from __future__ import annotations

import itertools
import lzma
from functools import cache
from pathlib import Path

from orchestrator.codegen.diff import diff
from orchestrator.codegen.model import Codegen
from orchestrator.images.provenance import Lockfile
from orchestrator.parsers.breakdown import Breakdown
from orchestrator.parsers.instructions import InstructionCounts
from orchestrator.parsers.ncu import instruction_counts, parse_ncu_csv
from orchestrator.store.records import RunResult
from orchestrator.verdict.compare import category_verdicts
from orchestrator.verdict.controlled import kernel_status
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT
from orchestrator.verdict.instructions import Movement, compare_instructions
from orchestrator.verdict.model import Direction

DATA = Path(__file__).parent / "data" / "h100-native"
RESULTS = DATA / "records"
STABLE, XPTXAS = "stable-nvcc13.0", "stable-nvcc13.0-flags-6b916d5a"
#: The 21 kernels one step of the benchmark runs: 18 of GROMACS, 3 of cuFFT.
RUNNING = 21


@cache
def _runs() -> dict[str, RunResult]:
    return {
        p.name: RunResult.model_validate_json((p / "result.json").read_text())
        for p in sorted(RESULTS.iterdir())
        if (p / "result.json").is_file()
    }


def _traced(build: str) -> list[str]:
    return [n for n, r in _runs().items() if r.build == build and r.profile_mode == "trace"]


@cache
def _counts(run: str) -> InstructionCounts:
    return InstructionCounts.model_validate_json((RESULTS / run / "instructions.json").read_text())


@cache
def _medians(run: str) -> dict[str, float]:
    breakdown = Breakdown.model_validate_json((RESULTS / run / "kernel_result.json").read_text())
    return {k.name: k.median_us or 0.0 for k in breakdown.kernels}


@cache
def _codegen(build: str) -> Codegen:
    text = lzma.decompress((RESULTS / "images" / f"gromacs__{build}.codegen.json.xz").read_bytes())
    return Codegen.model_validate_json(text)


def test_every_run_is_native_finished_and_on_the_h100() -> None:
    runs = _runs()
    assert len(runs) == 15
    for run in runs.values():
        assert run.native and run.finished and run.platform == "cuda", run.run_id
        assert run.ns_per_day and 380 < run.ns_per_day < 480  # the timing run, not ncu's
        assert run.host.gpu_model == "NVIDIA H100 80GB HBM3" and run.host.gpu_target == "sm_90"
        assert run.image.id.startswith("native:sha256:") and run.image.labels["gmxbench.platform"]
    traced = [r for r in runs.values() if r.profile_mode == "trace"]
    assert len(traced) == 11 and all(r.profile and r.profile.status == "ok" for r in traced)


def test_the_builds_are_recorded_as_native_with_their_script() -> None:
    for build, flags in ((STABLE, None), (XPTXAS, "-Xptxas -maxrregcount=48")):
        text = lzma.decompress((RESULTS / "images" / f"gromacs__{build}.lock.json.xz").read_bytes())
        lock = Lockfile.model_validate_json(text)
        assert (
            lock.template == "gromacs-native"
            and lock.record.native_prefix == f"/tmp/gromacs/{build}"
        )
        assert lock.record.compiler == "/usr/local/cuda/bin/nvcc"
        assert lock.gmx_version_info["CUDA compiler"] == "/usr/local/cuda/bin/nvcc (NVIDIA 13.0.88)"
        assert lock.gmx_version_info["GPU support"] == "CUDA"
        assert ("-Xptxas -maxrregcount=48" in lock.dockerfile) is bool(flags)  # the script
        assert lock.build_seconds and 150 < lock.build_seconds < 300  # 16 cores, no cache


def test_the_ptxas_option_changed_130_kernels_but_none_that_runs() -> None:
    """Named before any run: the codegen diff (SASS of every kept object) says which
    kernels changed; of the 21 that run, none did, so nothing may be marked."""
    changed = diff(_codegen(STABLE), _codegen(XPTXAS), "sm_90")
    assert len(changed.changed) == 130
    names = list(_counts(_traced(STABLE)[0]).kernels)
    assert len(names) == RUNNING
    status = kernel_status(names, changed)
    assert sorted(status.values()).count("unchanged") == 18
    assert {n for n, s in status.items() if s == "unknown"} == {
        n for n in names if "regular_fft" in n
    }  # cuFFT's, not in GROMACS's objects


def test_no_aa_split_moves_a_count_or_marks_a_time() -> None:
    """The A/A false-alarm rate on the H100: every split of the 8 traced runs of the stable
    build into 4 against 4 (70 splits x 21 kernels), under the instruction rule and under
    the tool's per-kernel time verdict (statistics and the 2% threshold)."""
    stable = sorted(_traced(STABLE))
    assert len(stable) == 8
    moved = marked = compared = 0
    for group in itertools.combinations(stable, 4):
        rest = [r for r in stable if r not in group]
        counts = compare_instructions([_counts(r) for r in group], [_counts(r) for r in rest])
        assert counts is not None and len(counts.kernels) == RUNNING
        moved += sum(v.movement is not Movement.NONE for v in counts.kernels.values())
        times = category_verdicts(
            {n: [_medians(r)[n] for r in group] for n in counts.kernels},
            {n: [_medians(r)[n] for r in rest] for n in counts.kernels},
            paired=False, threshold_pct=THRESHOLD_PCT, alpha=ALPHA,
        )  # fmt: skip
        marked += sum(v.direction is not Direction.NONE for v in times.values())
        compared += len(counts.kernels)
    assert compared == 70 * RUNNING
    assert moved == 0 and marked == 0  # within the 5% promise: 0 of 1,470 each


def test_unchanged_code_keeps_its_count_across_builds() -> None:
    """The ptxas option's build against the stable one: no running kernel changed, and no
    count moved beyond its run-to-run spread."""
    changed = diff(_codegen(STABLE), _codegen(XPTXAS), "sm_90")
    names = list(_counts(_traced(STABLE)[0]).kernels)
    moved_code = {n for n, s in kernel_status(names, changed).items() if s == "changed"}
    cmp = compare_instructions(
        [_counts(r) for r in _traced(STABLE)], [_counts(r) for r in _traced(XPTXAS)], moved_code
    )
    assert cmp is not None and cmp.code_known
    assert not any(v.marked or v.suspect for v in cmp.kernels.values())
    exact = [v for v in cmp.kernels.values() if v.delta_pct == 0 and v.baseline_spread == 0]
    assert len(exact) >= 15  # nonbonded and prune kernels: dynamic pair lists, spread ~1e-4


def test_the_ncu_csv_names_kernels_as_the_fingerprint_does() -> None:
    """`--print-kernel-base mangled`: ncu's names are the fingerprint's keys."""
    text = lzma.decompress((DATA / "ncu-aa-trace-r4.csv.xz").read_bytes()).decode()
    profile = parse_ncu_csv(text, "ncu-aa-trace-r4")
    assert len(profile.kernels) == RUNNING and all(n.startswith("_Z") for n in profile.kernels)
    counts = instruction_counts(profile)
    assert counts is not None
    assert counts.kernels == _counts("stable-nvcc13.0__water-96k-pme__aa-trace-r4").kernels
    keys = {k.name for k in _codegen(STABLE).kernels.values()}
    assert sum(n in keys for n in profile.kernels) == 18


def test_the_known_change_was_named_first_and_found() -> None:
    """The second A/B (nvcc -maxrregcount=48), whose records did not come back from the
    host (see README.md): its console output names the three running kernels whose code
    changed before the first run, and marks the one whose count moved."""
    text = (DATA / "bench" / "bench-ab2-trace.txt").read_text()
    codegen_at = text.index("codegen after")
    first_run = text.index("pair 1 of 4")
    assert codegen_at < first_run and "pme_gather: 8 of 8 kernels changed" in text
    marked = [line for line in text.splitlines() if line.startswith("◆")]
    assert len(marked) == 1 and "_Z17pme_gather_kernel" in marked[0]
    assert "5,862,720 → 5,975,808" in marked[0] and "+1.93% instr" in marked[0]
