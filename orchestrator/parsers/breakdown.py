"""The per-category time breakdown shared by the GPU (rocprof) and CPU (md.log) parsers.

One model for both so that reports and diffs treat a GPU kernel trace and a CPU cycle
table the same way: category totals plus the rows behind them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field

from orchestrator.parsers.categories import CATEGORIES, NOT_A_KERNEL


class CategoryTotal(BaseModel):
    """Time and call count summed over one category."""

    total_ms: float
    percent: float
    calls: int


class KernelRow(BaseModel):
    """One kernel (GPU) or one cycle-accounting row (CPU)."""

    name: str
    category: str
    calls: int
    total_ms: float
    avg_us: float
    #: Median, 10th and 90th percentile of this kernel's call durations in the run (µs);
    #: None when the input has no per-call rows (kernel_stats, md.log). The spread of
    #: thousands of calls inside one run is where small codegen changes show first.
    median_us: float | None = None
    p10_us: float | None = None
    p90_us: float | None = None


class Breakdown(BaseModel):
    """Time per category; `unknown` lists names that no rule matched (they are in `other`).

    ``excluded`` lists profiler rows that are no kernel at all (``<barrier packet>``,
    ``Unknown command type``): their time is in no category and not in ``total_ms``, but
    it is shown so that nothing is dropped silently.
    """

    source: str = Field(description="what was parsed, e.g. 'rocprofv3 kernel_trace'")
    files: list[str] = Field(default_factory=list)
    total_ms: float = 0.0
    categories: dict[str, CategoryTotal]
    kernels: list[KernelRow]
    unknown: list[str]
    excluded: list[KernelRow] = Field(default_factory=list)
    excluded_ms: float = 0.0
    notes: list[str] = Field(default_factory=list, description="caveats about this input")


#: Per-name ``(median, p10, p90)`` call durations in µs, from a trace.
CallStats = Mapping[str, tuple[float, float, float]]


def build_breakdown(
    source: str,
    files: Iterable[str],
    rows: Iterable[tuple[str, str, int, int, bool]],
    *,
    call_stats: CallStats | None = None,
    notes: Iterable[str] = (),
) -> Breakdown:
    """Aggregate `(name, category, calls, total_ns, known)` rows into a breakdown.

    Times stay integer nanoseconds until the end so that summing a million trace rows
    loses nothing; percentages are of the summed categorized time. Rows of category
    ``NOT_A_KERNEL`` go to ``excluded`` instead of a category.
    """
    cat_ns = dict.fromkeys(CATEGORIES, 0)
    cat_calls = dict.fromkeys(CATEGORIES, 0)
    merged: dict[str, list[int]] = {}
    categories: dict[str, str] = {}
    unknown: set[str] = set()
    for name, category, calls, total_ns, known in rows:
        slot = merged.setdefault(name, [0, 0])
        slot[0] += calls
        slot[1] += total_ns
        categories[name] = category
        if category == NOT_A_KERNEL:
            continue
        cat_ns[category] = cat_ns.get(category, 0) + total_ns
        cat_calls[category] = cat_calls.get(category, 0) + calls
        if not known:
            unknown.add(name)
    grand = sum(cat_ns.values())
    stats = call_stats or {}
    every = [
        KernelRow(
            name=name,
            category=categories[name],
            calls=calls,
            total_ms=total_ns / 1e6,
            avg_us=(total_ns / calls / 1e3) if calls else 0.0,
            **_quantiles(stats.get(name)),
        )
        for name, (calls, total_ns) in merged.items()
    ]
    every.sort(key=lambda row: (-row.total_ms, row.name))
    kernels = [row for row in every if row.category != NOT_A_KERNEL]
    excluded = [row for row in every if row.category == NOT_A_KERNEL]
    return Breakdown(
        source=source,
        files=list(files),
        total_ms=grand / 1e6,
        categories={
            cat: CategoryTotal(
                total_ms=ns / 1e6,
                percent=(100.0 * ns / grand) if grand else 0.0,
                calls=cat_calls[cat],
            )
            for cat, ns in cat_ns.items()
        },
        kernels=kernels,
        unknown=sorted(unknown),
        excluded=excluded,
        excluded_ms=sum(row.total_ms for row in excluded),
        notes=list(notes),
    )


def _quantiles(stats: tuple[float, float, float] | None) -> dict[str, float | None]:
    if stats is None:
        return {}
    median, p10, p90 = stats
    return {"median_us": median, "p10_us": p10, "p90_us": p90}
