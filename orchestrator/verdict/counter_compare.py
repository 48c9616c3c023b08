"""The top kernels of two rocprof-compute runs side by side: time, registers, caches, traffic.

A compiler change shows in a kernel's registers (VGPR/SGPR/LDS → occupancy) before it
shows in its time, and the time only means something next to the memory behaviour that
bounds it (L2 hit rate, fabric bandwidth, % of the HBM peak). So each row puts the
baseline's and the candidate's values of one kernel next to each other.

Repeated runs of one side are folded into one value per kernel metric: the median over
the runs in which the kernel appears (counter collection replays the program, and one
replay can be an outlier). The kernels shown are the union of each side's top N by total
duration; a kernel found on one side only is listed as such, never dropped. The table and
its notes in words are `report.counters`'.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.parsers.rocprof_compute import CounterSummary, KernelCounters

__all__ = [
    "CounterComparison",
    "CounterRow",
    "KernelMetrics",
    "RunNote",
    "compare_counters",
]

Presence = Literal["both", "baseline only", "candidate only"]


class KernelMetrics(BaseModel):
    """One side's value of each compared metric (medians over its runs)."""

    runs: int = Field(description="runs of this side in which the kernel appears")
    dispatches: float | None = None
    total_ns: float | None = None
    mean_ns: float | None = None
    arch_vgpr: float | None = None
    accum_vgpr: float | None = None
    sgpr: float | None = None
    lds_per_workgroup: float | None = None
    scratch_per_workitem: float | None = None
    occupancy_waves_per_simd: float | None = None
    wave_occupancy_pct: float | None = None
    l2_hit_pct: float | None = None
    fabric_gbs: float | None = None
    pct_of_hbm_peak: float | None = None


_FIELDS = tuple(name for name in KernelMetrics.model_fields if name != "runs")


class CounterRow(BaseModel):
    """One kernel: both sides, and the change of its total duration."""

    name: str
    category: str
    presence: Presence
    baseline: KernelMetrics | None = None
    candidate: KernelMetrics | None = None
    duration_delta_pct: float | None = Field(
        None, description="100 * (candidate - baseline) / baseline of total_ns"
    )


class RunNote(BaseModel):
    """What the parser noted about one profiled run (`CounterSummary.notes`), and whose."""

    side: Literal["baseline", "candidate"]
    workload_dir: str
    note: str


class CounterComparison(BaseModel):
    """Rows for "the top kernels side by side", and what the reader must know about them:
    the GPUs and HBM peaks the two sides were profiled with, and the parser's notes. A row
    whose sides differ in dispatches is noted too (`report.counters.notes`)."""

    baseline_label: str
    candidate_label: str
    baseline_runs: int
    candidate_runs: int
    top_n: int
    rows: list[CounterRow]
    #: The GPU architectures of all runs (None: unknown); more than one: different GPUs.
    archs: list[str | None] = Field(default_factory=list)
    #: Where each side's HBM peak came from, sorted; more than one: different peaks.
    peak_sources: list[str] = Field(default_factory=list)
    run_notes: list[RunNote] = Field(default_factory=list)


def _as_list(value: CounterSummary | Sequence[CounterSummary]) -> list[CounterSummary]:
    return [value] if isinstance(value, CounterSummary) else list(value)


def _median(values: list[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


def _fold(runs: list[CounterSummary]) -> dict[str, tuple[str, KernelMetrics]]:
    """Kernel name → (category, metrics as the median over the runs that have it)."""
    by_name: dict[str, list[KernelCounters]] = {}
    for run in runs:
        for kernel in run.kernels:
            by_name.setdefault(kernel.name, []).append(kernel)
    folded: dict[str, tuple[str, KernelMetrics]] = {}
    for name, kernels in by_name.items():
        values = {f: _median([getattr(k, f) for k in kernels]) for f in _FIELDS}
        folded[name] = (kernels[0].category, KernelMetrics(runs=len(kernels), **values))
    return folded


def _rank(side: dict[str, tuple[str, KernelMetrics]]) -> list[str]:
    """Names by total duration, longest first; kernels without a duration last."""

    def key(name: str) -> tuple[bool, float, float, str]:
        metrics = side[name][1]
        return (
            metrics.total_ns is None,
            -(metrics.total_ns or 0.0),
            -(metrics.dispatches or 0.0),
            name,
        )

    return sorted(side, key=key)


def _run_notes(base: list[CounterSummary], cand: list[CounterSummary]) -> list[RunNote]:
    sides: tuple[tuple[Literal["baseline", "candidate"], list[CounterSummary]], ...] = (
        ("baseline", base), ("candidate", cand),
    )  # fmt: skip
    return [
        RunNote(side=side, workload_dir=run.workload_dir, note=note)
        for side, runs in sides
        for run in runs
        for note in run.notes
    ]


def compare_counters(
    baseline: CounterSummary | Sequence[CounterSummary],
    candidate: CounterSummary | Sequence[CounterSummary],
    *,
    top_n: int = 10,
    baseline_label: str = "baseline",
    candidate_label: str = "candidate",
) -> CounterComparison:
    """The union of both sides' top ``top_n`` kernels, baseline's order first."""
    base_runs, cand_runs = _as_list(baseline), _as_list(candidate)
    if not base_runs or not cand_runs:
        raise ValueError("compare_counters needs at least one run on each side")
    base, cand = _fold(base_runs), _fold(cand_runs)
    chosen = _rank(base)[:top_n]
    chosen += [name for name in _rank(cand)[:top_n] if name not in chosen]
    rows: list[CounterRow] = []
    for name in chosen:
        b, c = base.get(name), cand.get(name)
        presence: Presence = "both" if b and c else ("baseline only" if b else "candidate only")
        delta = None
        if b and c and b[1].total_ns and c[1].total_ns is not None:
            delta = 100.0 * (c[1].total_ns - b[1].total_ns) / b[1].total_ns
        side = b or c
        rows.append(
            CounterRow(
                name=name,
                category=side[0] if side else "other",
                presence=presence,
                baseline=b[1] if b else None,
                candidate=c[1] if c else None,
                duration_delta_pct=delta,
            )
        )
    everyone = [*base_runs, *cand_runs]
    return CounterComparison(
        baseline_label=baseline_label,
        candidate_label=candidate_label,
        baseline_runs=len(base_runs),
        candidate_runs=len(cand_runs),
        top_n=top_n,
        rows=rows,
        archs=sorted({s.gpu.arch for s in everyone}, key=lambda a: a or ""),
        peak_sources=sorted({s.hbm_peak_source for s in everyone if s.hbm_peak_source}),
        run_notes=_run_notes(base_runs, cand_runs),
    )
