"""rocprof-compute's top kernels side by side as a text table, and what the reader must
know about them in words: `verdict.counter_compare` holds the rows and the facts (GPUs,
HBM peaks, the parser's notes), so the table and the notes are worded here only."""

from __future__ import annotations

from collections.abc import Callable

from tabulate import tabulate

from orchestrator.verdict.counter_compare import CounterComparison, CounterRow, KernelMetrics

__all__ = ["notes", "render_comparison"]

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
    said = notes(comparison)
    if said:
        text += "\n\n" + "\n".join(f"- {note}" for note in said)
    return text + "\n"


def notes(comparison: CounterComparison) -> list[str]:
    """What the reader must know: different GPUs or HBM peaks, the parser's notes on each
    run, and kernels dispatched a different number of times on the two sides."""
    out: list[str] = []
    if len(comparison.archs) > 1:
        shown = ", ".join(sorted(a or "unknown" for a in comparison.archs))
        out.append(
            f"the runs were profiled on different GPUs ({shown}): the differences are the "
            "hardware's as much as the compiler's"
        )
    if len(comparison.peak_sources) > 1:
        out.append(
            "% of HBM peak uses different peaks on the two sides ("
            + "; ".join(comparison.peak_sources)
            + ")"
        )
    out += [f"{n.side} {n.workload_dir}: {n.note}" for n in comparison.run_notes]
    for row in comparison.rows:
        if row.baseline and row.candidate:
            b_n, c_n = row.baseline.dispatches, row.candidate.dispatches
            if b_n is not None and c_n is not None and b_n != c_n:
                out.append(
                    f"{_short(row.name, 60)}: {_fmt(b_n)} vs {_fmt(c_n)} dispatches, so its "
                    "total times differ by that too: compare the time per dispatch"
                )
    return out
