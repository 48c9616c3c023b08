"""The top kernels of two rocprof-compute runs side by side: time, registers, caches, traffic.

A compiler change shows in a kernel's registers (VGPR/SGPR/LDS → occupancy) before it
shows in its time, and the time only means something next to the memory behaviour that
bounds it (L2 hit rate, fabric bandwidth, % of the HBM peak). So each row puts the
baseline's and the candidate's values of one kernel next to each other.

Repeated runs of one side are folded into one value per kernel metric: the median over
the runs in which the kernel appears (counter collection replays the program, and one
replay can be an outlier). The kernels shown are the union of each side's top N by total
duration; a kernel found on one side only is listed as such, never dropped.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, Field
from tabulate import tabulate

from orchestrator.parsers.rocprof_compute import CounterSummary, KernelCounters

__all__ = [
    "CounterComparison",
    "CounterRow",
    "KernelMetrics",
    "compare_counters",
    "render_comparison",
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


class CounterComparison(BaseModel):
    """Rows for "the top kernels side by side", and what the reader must know about them."""

    baseline_label: str
    candidate_label: str
    baseline_runs: int
    candidate_runs: int
    top_n: int
    rows: list[CounterRow]
    notes: list[str] = Field(default_factory=list)


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


def _notes(base: list[CounterSummary], cand: list[CounterSummary]) -> list[str]:
    notes: list[str] = []
    archs = {s.gpu.arch for s in base} | {s.gpu.arch for s in cand}
    if len(archs) > 1:
        shown = ", ".join(sorted(a or "unknown" for a in archs))
        notes.append(
            f"the runs were profiled on different GPUs ({shown}): the differences are the "
            "hardware's as much as the compiler's"
        )
    sources = {s.hbm_peak_source for s in [*base, *cand] if s.hbm_peak_source}
    if len(sources) > 1:
        notes.append(
            "% of HBM peak uses different peaks on the two sides ("
            + "; ".join(sorted(sources))
            + ")"
        )
    for label, runs in (("baseline", base), ("candidate", cand)):
        for run in runs:
            notes.extend(f"{label} {run.workload_dir}: {note}" for note in run.notes)
    return notes


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
    notes = _notes(base_runs, cand_runs)
    for row in rows:
        if row.baseline and row.candidate:
            b_n, c_n = row.baseline.dispatches, row.candidate.dispatches
            if b_n is not None and c_n is not None and b_n != c_n:
                notes.append(
                    f"{_short(row.name, 60)}: {_fmt(b_n)} vs {_fmt(c_n)} dispatches, so its "
                    "total times differ by that too: compare the time per dispatch"
                )
    return CounterComparison(
        baseline_label=baseline_label,
        candidate_label=candidate_label,
        baseline_runs=len(base_runs),
        candidate_runs=len(cand_runs),
        top_n=top_n,
        rows=rows,
        notes=notes,
    )


# --- text ------------------------------------------------------------------------------------

_DASH = "–"


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return _DASH
    if float(value).is_integer() and digits <= 1:
        return str(int(value))
    return f"{value:.{digits}f}"


def _pair(row: CounterRow, get: Callable[[KernelMetrics], float | None], digits: int = 1) -> str:
    """``base → cand``, one value when they are equal, one side's value for one-sided rows."""
    b = _fmt(get(row.baseline), digits) if row.baseline else None
    c = _fmt(get(row.candidate), digits) if row.candidate else None
    if b is None:
        return c or _DASH
    if c is None or b == c:
        return b
    return f"{b} → {c}"


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def render_comparison(
    comparison: CounterComparison, table_format: str = "github", name_width: int = 60
) -> str:
    """The comparison as a text table (``tabulate`` format ``github`` or ``plain``), notes below."""
    headers = [
        "kernel",
        "category",
        f"time µs ({comparison.baseline_label})",
        f"time µs ({comparison.candidate_label})",
        "Δ time",
        "VGPR",
        "AGPR",
        "SGPR",
        "LDS B",
        "occ. waves/SIMD",
        "L2 hit %",
        "fabric GB/s",
        "% HBM peak",
    ]
    body = []
    for row in comparison.rows:
        b, c = row.baseline, row.candidate
        delta: str
        if row.presence != "both":
            delta = row.presence
        elif row.duration_delta_pct is None:
            delta = _DASH
        else:
            delta = f"{row.duration_delta_pct:+.1f}%"
        body.append(
            [
                _short(row.name, name_width),
                row.category,
                _fmt(b.total_ns / 1e3 if b and b.total_ns is not None else None, 2),
                _fmt(c.total_ns / 1e3 if c and c.total_ns is not None else None, 2),
                delta,
                _pair(row, lambda m: m.arch_vgpr),
                _pair(row, lambda m: m.accum_vgpr),
                _pair(row, lambda m: m.sgpr),
                _pair(row, lambda m: m.lds_per_workgroup),
                _pair(row, lambda m: m.occupancy_waves_per_simd),
                _pair(row, lambda m: m.l2_hit_pct),
                _pair(row, lambda m: m.fabric_gbs, 0),
                _pair(row, lambda m: m.pct_of_hbm_peak),
            ]
        )
    runs = f"{comparison.baseline_runs} vs {comparison.candidate_runs} run(s), medians"
    title = (
        f"Top {comparison.top_n} kernels by total time: {comparison.baseline_label} vs "
        f"{comparison.candidate_label} ({runs})"
    )
    text = title + "\n\n" + tabulate(body, headers=headers, tablefmt=table_format)
    if comparison.notes:
        text += "\n\n" + "\n".join(f"- {note}" for note in comparison.notes)
    return text + "\n"
