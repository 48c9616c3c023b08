"""Which comparison two groups of runs get: mdrun's (`compare`) or a microbenchmark's
(`microbench_compare`), by what the runs are. Every caller that compares groups of runs
comes here (hence the name: `judgement` is the `--json` record, `controlled` the verdict
against unchanged kernels)."""

from __future__ import annotations

from orchestrator.codegen.diff import CodegenDiff
from orchestrator.store.runstore import Run, RunStore
from orchestrator.verdict.compare import Ceiling, Comparison, compare_runs
from orchestrator.verdict.controlled import kernel_status
from orchestrator.verdict.counter_compare import compare_counters
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT
from orchestrator.verdict.instructions import InstructionComparison, compare_instructions
from orchestrator.verdict.microbench_compare import compare_microbench_runs


def compare_groups(
    base: list[Run],
    cand: list[Run],
    *,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
    paired: bool | None = None,
    store: RunStore | None = None,
    codegen: CodegenDiff | None = None,
) -> Comparison:
    """`compare_runs` for mdrun runs, `compare_microbench_runs` when any run is a
    microbenchmark's; with the `store`, an mdrun comparison names the memory ceiling of
    its host; runs with rocprof-compute's counters on both sides add their top kernels
    side by side, runs with executed instructions on all runs of both sides their counts;
    with the builds' `codegen` diff, changed kernels are judged against the unchanged ones
    too, and a moved count is marked only for a kernel whose code changed."""
    if any(r.result.kind == "kernel" for r in base + cand):
        return compare_microbench_runs(
            base, cand, threshold_pct=threshold_pct, alpha=alpha, paired=paired
        )
    cmp = compare_runs(
        base, cand, threshold_pct=threshold_pct, alpha=alpha, paired=paired, codegen=codegen
    )
    base_counters = [r.counters for r in base if r.counters is not None]
    cand_counters = [r.counters for r in cand if r.counters is not None]
    if base_counters and cand_counters:
        cmp.counters = compare_counters(base_counters, cand_counters,
                                        baseline_label=base[0].result.build,
                                        candidate_label=cand[0].result.build)  # fmt: skip
    cmp.instructions = instructions_of(base, cand, codegen)
    sweep = store.ceiling(cand[0].result.host.hostname) if store is not None else None
    if sweep is not None and sweep.metrics:
        ro, rw = sweep.metrics["ro_largest"].value, sweep.metrics["rw_largest"].value
        cmp.ceiling = Ceiling(
            read_gbs=ro, copy_gbs=rw, run_id=sweep.run_id, timestamp=sweep.timestamp
        )
    return cmp


def instructions_of(
    base: list[Run], cand: list[Run], codegen: CodegenDiff | None
) -> InstructionComparison | None:
    """The instruction verdict when every run of both sides counted; the kernels' code
    status from the codegen diff, by the names the profiler printed."""
    if any(r.instructions is None for r in base + cand):
        return None
    counts_b = [r.instructions for r in base if r.instructions is not None]
    counts_c = [r.instructions for r in cand if r.instructions is not None]
    if codegen is None:
        return compare_instructions(counts_b, counts_c)
    names = {name for counts in counts_b + counts_c for name in counts.kernels}
    status = kernel_status(names, codegen)
    changed = {n for n, s in status.items() if s == "changed"}
    known = {n for n, s in status.items() if s != "unknown"}
    return compare_instructions(counts_b, counts_c, changed, known=known)
