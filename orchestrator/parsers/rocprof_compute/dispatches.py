"""A workload's dispatches from its counter files: one row per dispatch, or one per counter."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.categories import strip_kernel_suffix
from orchestrator.parsers.rocprof_compute.tables import PROFILE_FIX, Table, read_table

_META = (
    "dispatch_id",
    "kernel_name",
    "grid_size",
    "workgroup_size",
    "lds_per_workgroup",
    "scratch_per_workitem",
    "arch_vgpr",
    "accum_vgpr",
    "sgpr",
    "wave_size",
    "start_timestamp",
    "end_timestamp",
)
_COUNTERS = (
    "sq_waves",
    "sq_insts_valu",
    "grbm_gui_active",
    "tcc_hit_sum",
    "tcc_miss_sum",
    "tcc_bubble_sum",
    "tcc_ea_rdreq_sum",
    "tcc_ea_rdreq_32b_sum",
    "tcc_ea_wrreq_sum",
    "tcc_ea_wrreq_64b_sum",
    "tcc_ea0_rdreq_sum",
    "tcc_ea0_rdreq_32b_sum",
    "tcc_ea0_wrreq_sum",
    "tcc_ea0_wrreq_64b_sum",
)


@dataclass
class Dispatch:
    """One kernel dispatch: its metadata and counters, the passes of a run merged."""

    id: str
    name: str
    meta: dict[str, float | None]
    counters: dict[str, float | None]
    source: str


def clean_kernel_name(name: str) -> str:
    """The name without the code-object suffix rocprof added (``[clone .kd]``, ``(.kd)``).

    Analyze wraps long names in its tables with a newline; that is undone here too, so
    names from every release and table compare equal.
    """
    return strip_kernel_suffix(" ".join(part for part in name.replace("\n", "").split(" ") if part))


def _require_name_column(table: Table) -> None:
    if not table.has("kernel_name"):
        found = ", ".join(h for h in table.header[:8] if h) or "none"
        raise UserError(
            f"{table.path} has no Kernel_Name column (first columns: {found}), so it is not "
            f"a rocprof-compute counter file. {PROFILE_FIX}"
        )


def wide_dispatches(table: Table) -> Iterator[Dispatch]:
    """One dispatch per row (``pmc_perf.csv``, ``pmc_perf_<n>.csv``)."""
    _require_name_column(table)
    wanted = [c for c in _COUNTERS if table.has(c)]
    for line, cells in table.rows:
        yield Dispatch(
            id=table.text(cells, "dispatch_id") or str(line),
            name=table.text(cells, "kernel_name") or "",
            meta={m: table.number(cells, m, line) for m in _META[2:]},
            counters={c: table.number(cells, c, line) for c in wanted},
            source=table.path.name,
        )


def long_dispatches(table: Table) -> Iterator[Dispatch]:
    """``results_pmc_perf_<n>.csv``: one row per counter per dispatch, pivoted."""
    _require_name_column(table)
    for needed in ("counter_name", "counter_value", "dispatch_id"):
        if not table.has(needed):
            raise UserError(
                f"{table.path} has no {needed} column, which a rocprofiler-sdk counter file "
                f"(results_pmc_perf_<n>.csv) has. {PROFILE_FIX}"
            )
    by_id: dict[str, Dispatch] = {}
    for line, cells in table.rows:
        dispatch_id = table.text(cells, "dispatch_id") or ""
        dispatch = by_id.get(dispatch_id)
        if dispatch is None:
            dispatch = by_id[dispatch_id] = Dispatch(
                id=dispatch_id,
                name=table.text(cells, "kernel_name") or "",
                meta={m: table.number(cells, m, line) for m in _META[2:]},
                counters={},
                source=table.path.name,
            )
        counter = (table.text(cells, "counter_name") or "").lower()
        if counter in _COUNTERS:
            dispatch.counters[counter] = table.number(cells, "counter_value", line)
    yield from by_id.values()


def merge(parts: Iterable[Dispatch]) -> list[Dispatch]:
    """Passes of one run merged by dispatch id: the first pass's timestamps, every counter."""
    merged: dict[str, Dispatch] = {}
    for part in parts:
        have = merged.get(part.id)
        if have is None:
            merged[part.id] = part
            continue
        for key, value in part.counters.items():
            have.counters.setdefault(key, value)
        for key, meta in part.meta.items():
            if have.meta.get(key) is None:
                have.meta[key] = meta
    return list(merged.values())


def _pass_number(path: Path) -> int:
    digits = re.findall(r"\d+", path.name)
    return int(digits[-1]) if digits else 0


def find_counter_files(workload: Path) -> tuple[str, list[Path]]:
    """(layout, files) of the counter data in a workload directory."""
    for name in ("pmc_perf.csv", "pmc_perf.csv.gz"):
        if (workload / name).is_file():
            return "wide", [workload / name]
    for layout, pattern in (("long", "results_pmc_perf_*.csv"), ("wide", "pmc_perf_*.csv")):
        found = [*workload.glob(pattern), *workload.glob(pattern + ".gz")]
        if found:
            return layout, sorted(found, key=lambda p: (_pass_number(p), p.name))
    return "", []


def level_waves(workload: Path) -> dict[str, float]:
    """Dispatch id → SQ_ACCUM_PREV_HIRES of the SQ_LEVEL_WAVES pass, when it was collected."""
    path = workload / "SQ_LEVEL_WAVES.csv"
    if not path.is_file():
        return {}
    table = read_table(path, "rocprof-compute SQ_LEVEL_WAVES pass")
    if not (table.has("dispatch_id") and table.has("sq_accum_prev_hires")):
        return {}
    found: dict[str, float] = {}
    for line, cells in table.rows:
        value = table.number(cells, "sq_accum_prev_hires", line)
        dispatch_id = table.text(cells, "dispatch_id")
        if value is not None and dispatch_id is not None:
            found[dispatch_id] = value
    return found
