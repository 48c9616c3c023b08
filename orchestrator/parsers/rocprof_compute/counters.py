"""Per-kernel counters and rates from a workload's dispatches, by rocprof-compute's formulas.

The formulas are rocprof-compute's own, from its analysis configs
(``src/rocprof_compute_soc/analysis_configs/<arch>/0200_system-speed-of-light.yaml``, v3.0.0
@ 95b600e and rocm-systems develop @ 1b1610f for gfx950):

* L2 hit rate = ``100 * TCC_HIT_sum / (TCC_HIT_sum + TCC_MISS_sum)``.
* L2-fabric read bytes: gfx90a ``32 * TCC_EA_RDREQ_32B_sum + 64 * (TCC_EA_RDREQ_sum -
  TCC_EA_RDREQ_32B_sum)``; gfx942/gfx950 (which count ``TCC_BUBBLE``, the 128-byte reads)
  ``128 * TCC_BUBBLE_sum + 64 * (TCC_EA0_RDREQ_sum - TCC_BUBBLE_sum - TCC_EA0_RDREQ_32B_sum)
  + 32 * TCC_EA0_RDREQ_32B_sum``.
* L2-fabric write bytes: ``64 * TCC_EA_WRREQ_64B_sum + 32 * (TCC_EA_WRREQ_sum -
  TCC_EA_WRREQ_64B_sum)`` (``TCC_EA0_*`` on gfx942/gfx950).
* Wavefront occupancy: ``SQ_ACCUM_PREV_HIRES / (GRBM_GUI_ACTIVE / num_xcd)`` waves on the
  GPU, in percent of ``max_waves_per_cu * cu_per_gpu`` (``GRBM_GUI_ACTIVE`` from
  ``pmc_perf.csv``, as analyze takes it: ``src/utils/parser.py``).
* HBM peak when ``sysinfo.csv`` has no ``hbm_bw``: ``max_mclk / 1000 * 32 *
  num_hbm_channels`` GB/s (develop ``src/utils/parser.py``, ``hbmBandwidth``; worked out
  in :mod:`.sysinfo`).

rocprof-compute itself compares the L2-fabric bandwidth with the HBM peak; that traffic is
everything the L2 exchanged with the fabric (HBM, and also host or peer memory), so it is
an upper bound of HBM traffic and is named ``fabric_*`` here. Where analyze reports the
*mean of per-dispatch ratios*, this module reports the ratio of sums over a kernel's
dispatches (time-weighted); the two are equal for a kernel dispatched once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.parsers.categories import classify
from orchestrator.parsers.occupancy import TARGETS, occupancy_detail
from orchestrator.parsers.rocprof_compute.dispatches import Dispatch
from orchestrator.parsers.rocprof_compute.models import GpuInfo, KernelCounters


def _fabric_bytes(c: dict[str, float | None]) -> tuple[float | None, float | None]:
    """(read, write) bytes between L2 and the fabric: rocprof-compute's formulas (docstring)."""

    def get(*names: str) -> float | None:
        return next((c[n] for n in names if c.get(n) is not None), None)

    rd = get("tcc_ea_rdreq_sum", "tcc_ea0_rdreq_sum")
    rd32 = get("tcc_ea_rdreq_32b_sum", "tcc_ea0_rdreq_32b_sum")
    bubble = c.get("tcc_bubble_sum")
    read: float | None = None
    if rd is not None and rd32 is not None:
        if bubble is not None:
            read = 128 * bubble + 64 * (rd - bubble - rd32) + 32 * rd32
        else:
            read = 32 * rd32 + 64 * (rd - rd32)
    wr = get("tcc_ea_wrreq_sum", "tcc_ea0_wrreq_sum")
    wr64 = get("tcc_ea_wrreq_64b_sum", "tcc_ea0_wrreq_64b_sum")
    write = 64 * wr64 + 32 * (wr - wr64) if wr is not None and wr64 is not None else None
    return read, write


def strict_sum(values: Sequence[float | None]) -> float | None:
    """Sum, or None when any dispatch lacks the value (a partial sum would mislead)."""
    if not values or any(v is None for v in values):
        return None
    return float(sum(v for v in values if v is not None))


def _first_int(dispatches: Sequence[Dispatch], key: str) -> int | None:
    return next((int(v) for d in dispatches if (v := d.meta.get(key)) is not None), None)


def _vgprs_for_occupancy(arch: str, arch_vgpr: int, accum_vgpr: int) -> int:
    """Registers the occupancy rules count: AGPRs share the file on gfx90a and later."""
    target = TARGETS.get(arch.split(":", 1)[0])
    if target is None or not accum_vgpr:
        return arch_vgpr
    if target.unified_agprs:
        return -(-arch_vgpr // 4) * 4 + accum_vgpr
    return max(arch_vgpr, accum_vgpr)


@dataclass
class Context:
    gpu: GpuInfo
    hbm_peak: float | None
    level_waves: dict[str, float]


def duration(d: Dispatch) -> float | None:
    start, end = d.meta.get("start_timestamp"), d.meta.get("end_timestamp")
    if start is None or end is None or end <= start:
        return None
    return end - start


def kernel_counters(name: str, dispatches: list[Dispatch], ctx: Context) -> KernelCounters:
    category, known = classify(name)
    durations = [duration(d) for d in dispatches]
    total_ns = strict_sum(durations)
    n = len(dispatches)

    def counter_sum(key: str) -> float | None:
        return strict_sum([d.counters.get(key) for d in dispatches])

    def mean(key: str) -> float | None:
        total = counter_sum(key)
        return None if total is None else total / n

    hits, misses = counter_sum("tcc_hit_sum"), counter_sum("tcc_miss_sum")
    l2_hit = None
    if hits is not None and misses is not None and hits + misses > 0:
        l2_hit = 100.0 * hits / (hits + misses)
    traffic = [_fabric_bytes(d.counters) for d in dispatches]
    read, write = strict_sum([t[0] for t in traffic]), strict_sum([t[1] for t in traffic])

    def rate(volume: float | None) -> float | None:
        return volume / total_ns if volume is not None and total_ns else None  # B/ns = GB/s

    both = read + write if read is not None and write is not None else None
    fabric = rate(both)
    pct = 100.0 * fabric / ctx.hbm_peak if fabric is not None and ctx.hbm_peak else None

    arch_vgpr, accum_vgpr = (
        _first_int(dispatches, "arch_vgpr"),
        _first_int(dispatches, "accum_vgpr"),
    )
    sgpr, lds = _first_int(dispatches, "sgpr"), _first_int(dispatches, "lds_per_workgroup")
    wave_size = _first_int(dispatches, "wave_size") or ctx.gpu.wave_size
    workgroup = _first_int(dispatches, "workgroup_size")
    detail = None
    if ctx.gpu.arch and arch_vgpr is not None and sgpr is not None and wave_size:
        detail = occupancy_detail(
            ctx.gpu.arch,
            vgprs=_vgprs_for_occupancy(ctx.gpu.arch, arch_vgpr, accum_vgpr or 0),
            sgprs=sgpr,
            lds_bytes=lds or 0,
            wavefront_size=wave_size,
            max_flat_workgroup_size=workgroup,
        )
    return KernelCounters(
        name=name,
        category=category,
        known=known,
        dispatches=n,
        total_ns=total_ns,
        mean_ns=None if total_ns is None else total_ns / n,
        grid_size=_first_int(dispatches, "grid_size"),
        workgroup_size=workgroup,
        wave_size=wave_size,
        arch_vgpr=arch_vgpr,
        accum_vgpr=accum_vgpr,
        sgpr=sgpr,
        lds_per_workgroup=lds,
        scratch_per_workitem=_first_int(dispatches, "scratch_per_workitem"),
        waves_per_dispatch=mean("sq_waves"),
        valu_insts_per_dispatch=mean("sq_insts_valu"),
        occupancy_waves_per_simd=None if detail is None else detail.waves,
        occupancy_limiter=None if detail is None else detail.limiter,
        wave_occupancy_pct=_wave_occupancy(dispatches, ctx),
        l2_hit_pct=l2_hit,
        fabric_read_bytes=read,
        fabric_write_bytes=write,
        fabric_read_gbs=rate(read),
        fabric_write_gbs=rate(write),
        fabric_gbs=fabric,
        pct_of_hbm_peak=pct,
    )


def _wave_occupancy(dispatches: Sequence[Dispatch], ctx: Context) -> float | None:
    """Time-weighted mean waves resident on the GPU, % of its wave slots (analyze's metric)."""
    gpu = ctx.gpu
    if not ctx.level_waves or not (gpu.num_xcd and gpu.max_waves_per_cu and gpu.cu_count):
        return None
    accum = [ctx.level_waves.get(d.id) for d in dispatches]
    active = [d.counters.get("grbm_gui_active") for d in dispatches]
    total_accum, total_active = strict_sum(accum), strict_sum(active)
    if total_accum is None or not total_active:
        return None
    waves = total_accum / (total_active / gpu.num_xcd)
    return 100.0 * waves / (gpu.max_waves_per_cu * gpu.cu_count)
