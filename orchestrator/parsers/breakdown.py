"""The per-category time breakdown shared by the GPU (rocprof) and CPU (md.log) parsers.

One model for both so that reports and diffs treat a GPU kernel trace and a CPU cycle
table the same way: category totals plus the rows behind them.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from orchestrator.parsers.categories import CATEGORIES


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


class KernelBreakdown(BaseModel):
    """Time per category; `unknown` lists names that no rule matched (they are in `other`)."""

    source: str = Field(description="what was parsed, e.g. 'rocprofv3 kernel_trace'")
    files: list[str] = Field(default_factory=list)
    total_ms: float = 0.0
    categories: dict[str, CategoryTotal]
    kernels: list[KernelRow]
    unknown: list[str]


def build_breakdown(
    source: str,
    files: Iterable[str],
    rows: Iterable[tuple[str, str, int, int, bool]],
) -> KernelBreakdown:
    """Aggregate `(name, category, calls, total_ns, known)` rows into a breakdown.

    Times stay integer nanoseconds until the end so that summing a million trace rows
    loses nothing; percentages are of the summed categorized time.
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
        cat_ns[category] = cat_ns.get(category, 0) + total_ns
        cat_calls[category] = cat_calls.get(category, 0) + calls
        if not known:
            unknown.add(name)
    grand = sum(cat_ns.values())
    kernels = [
        KernelRow(
            name=name,
            category=categories[name],
            calls=calls,
            total_ms=total_ns / 1e6,
            avg_us=(total_ns / calls / 1e3) if calls else 0.0,
        )
        for name, (calls, total_ns) in merged.items()
    ]
    kernels.sort(key=lambda row: (-row.total_ms, row.name))
    return KernelBreakdown(
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
    )
