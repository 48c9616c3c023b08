"""Occupancy (waves per SIMD) of an AMDGPU kernel from its code object's resource counts.

A port of LLVM's own rules, so that the number matches what the compiler reports
(``-Rpass-analysis=kernel-resource-usage``, ``; Occupancy:`` in ``llc`` output):

* ``IsaInfo::getNumWavesPerEUWithNumVGPRs`` / ``getVGPRAllocGranule`` / ``getTotalNumVGPRs``
  (``llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp``): waves limited by VGPRs are
  ``min(max(total / alignTo(vgprs, granule), 1), max_waves)``. The notes' ``.vgpr_count`` is
  already the total of VGPRs and AGPRs on gfx90a/gfx942/gfx950 (one unified file of 512),
  and ``max(vgprs, agprs)`` on gfx908.
* SGPRs limit only before GFX10. Since llvm-project PR #201342 (2026-06) occupancy is the
  inverse of the per-wave SGPR budget: ``800 / (alignTo(sgprs, 16) + 16)``, the 16 being
  what the trap handler reserves on amdhsa (every HIP code object); LLVM 21 still used a
  step table that ignored both (``sgpr_rule="table"``), so it can report one wave more
  for SGPR-bound GFX9 kernels.
* ``AMDGPUSubtarget::getOccupancyWithWorkGroupSizes``: LDS per workgroup, barriers and
  wave slots per CU (per WGP in WGP mode on GFX10+, with twice the LDS), for the
  kernel's flat workgroup size range ``[1, .max_flat_workgroup_size]``; the upper end
  of its result is the occupancy LLVM reports.

Not modelled: the ``amdgpu-waves-per-eu`` attribute (not in the notes), dynamic VGPRs,
dynamically allocated LDS and scratch.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

SgprRule = Literal["budget", "table"]


class Target(NamedTuple):
    """What occupancy depends on, per processor (GCNProcessors.td / AMDGPU.td features)."""

    generation: int  # 9, 10, 11, 12
    max_waves: int  # IsaInfo::getMaxWavesPerEU
    vgpr_1_5x: bool  # Feature1_5xVGPRs (1536 VGPRs per SIMD in wave32)
    gfx10_3: bool  # FeatureGFX10_3Insts (granule 16/8 instead of 8/4)
    unified_agprs: bool  # FeatureGFX90AInsts: VGPRs + AGPRs share 512 registers
    lds_per_cu: int  # FeatureLocalMemorySize*, doubled in WGP mode on GFX10+


_GFX9 = Target(9, 10, False, False, False, 65536)
_GFX90A = Target(9, 8, False, False, True, 65536)
_GFX1010 = Target(10, 20, False, False, False, 65536)
_GFX1030 = Target(10, 16, False, True, False, 65536)
_GFX11 = Target(11, 16, False, True, False, 65536)
_GFX11_1_5X = Target(11, 16, True, True, False, 65536)
_GFX12 = Target(12, 16, True, True, False, 65536)

TARGETS: dict[str, Target] = {
    **dict.fromkeys(("gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90c"), _GFX9),
    **dict.fromkeys(("gfx90a", "gfx940", "gfx941", "gfx942"), _GFX90A),
    "gfx950": _GFX90A._replace(lds_per_cu=163840),
    **dict.fromkeys(("gfx1010", "gfx1011", "gfx1012", "gfx1013"), _GFX1010),
    **dict.fromkeys(tuple(f"gfx103{i}" for i in range(7)), _GFX1030),
    **dict.fromkeys(("gfx1100", "gfx1101", "gfx1151"), _GFX11_1_5X),
    **dict.fromkeys(("gfx1102", "gfx1103", "gfx1150", "gfx1152", "gfx1153"), _GFX11),
    **dict.fromkeys(("gfx1200", "gfx1201"), _GFX12),
}

TOTAL_SGPRS = 800
SGPR_GRANULE = 16
TRAP_SGPRS = 16
MAX_FLAT_WORKGROUP_SIZE = 1024


class Occupancy(NamedTuple):
    """Waves per SIMD and what limits it (the first of vgprs/sgprs/lds that reaches it)."""

    waves: int
    by_vgprs: int
    by_sgprs: int
    by_lds: int
    max_waves: int

    @property
    def limiter(self) -> str:
        if self.waves == self.max_waves:
            return "none"
        for name, value in (("vgprs", self.by_vgprs), ("lds", self.by_lds)):
            if value == self.waves:
                return name
        return "sgprs"


def _align(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def vgpr_waves(t: Target, vgprs: int, wave64: bool) -> int:
    """IsaInfo::getNumWavesPerEUWithNumVGPRs."""
    if t.unified_agprs:
        granule, total = 8, 512
    elif t.generation < 10:
        granule, total = 4, 256
    elif t.vgpr_1_5x:
        granule, total = (12, 768) if wave64 else (24, 1536)
    elif t.gfx10_3:
        granule, total = (8, 512) if wave64 else (16, 1024)
    else:
        granule, total = (4, 512) if wave64 else (8, 1024)
    if vgprs < granule:
        return t.max_waves
    return min(max(total // _align(vgprs, granule), 1), t.max_waves)


# IsaInfo::getOccupancyWithNumSGPRs before PR #201342 (GFX8/GFX9): (SGPRs at most, waves).
_SGPR_TABLE = ((80, 10), (88, 9), (100, 8))


def sgpr_waves(t: Target, sgprs: int, trap_handler: bool = True, rule: SgprRule = "budget") -> int:
    """IsaInfo::getOccupancyWithNumSGPRs: after llvm-project PR #201342, or its older table."""
    if t.generation >= 10:
        return t.max_waves
    if rule == "table":
        waves = next((w for limit, w in _SGPR_TABLE if sgprs <= limit), 7)
        return min(waves, t.max_waves)
    per_wave = _align(max(sgprs, 1), SGPR_GRANULE) + (TRAP_SGPRS if trap_handler else 0)
    return min(max(TOTAL_SGPRS // per_wave, 1), t.max_waves)


def lds_waves(t: Target, lds_bytes: int, max_wg: int, wave_size: int, wgp_mode: bool) -> int:
    """AMDGPUSubtarget::getOccupancyWithWorkGroupSizes(LDS, {1, max_wg}).second."""
    cu_mode = t.generation >= 10 and not wgp_mode
    eus = 2 if cu_mode else 4
    local_memory = t.lds_per_cu * (2 if t.generation >= 10 and not cu_mode else 1)
    max_wgs_lds = local_memory // max(lds_bytes, 1)
    if not max_wgs_lds:
        return 1
    slots = t.max_waves * eus

    def wgs_per_cu(size: int) -> int:  # IsaInfo::getMaxWorkGroupsPerCU
        waves = -(-size // wave_size)
        if waves == 1:
            return slots
        return min(slots // waves, 32 if t.generation >= 10 and not cu_mode else 16)

    def props(size: int) -> tuple[int, int, int]:
        waves_per_wg = -(-size // wave_size)
        groups = min(wgs_per_cu(size), max_wgs_lds)
        return waves_per_wg, groups, waves_per_wg * groups

    min_waves_per_wg, max_groups, max_waves_cu = props(1)
    _waves_per_wg, _groups, min_waves_cu = props(max_wg)
    if min_waves_cu >= max_waves_cu:
        min_waves_cu, max_waves_cu = max_waves_cu, min_waves_cu
    else:
        leftover_per_wg = (slots - max_groups * min_waves_per_wg) // max_groups
        if leftover_per_wg:
            max_waves_cu += max_groups * min(
                leftover_per_wg, (max_wg - 1) // wave_size + 1 - min_waves_per_wg
            )
    return min(max(-(-max_waves_cu // eus), 1), t.max_waves)


def occupancy_detail(
    arch: str,
    *,
    vgprs: int,
    sgprs: int,
    lds_bytes: int,
    wavefront_size: int,
    max_flat_workgroup_size: int | None = None,
    wgp_mode: bool | None = None,
    trap_handler: bool = True,
    sgpr_rule: SgprRule = "budget",
) -> Occupancy | None:
    """Occupancy with its limits, or None for a processor this table does not know."""
    t = TARGETS.get(arch.split(":", 1)[0])
    if t is None:
        return None
    wave64 = wavefront_size == 64
    by_vgprs = vgpr_waves(t, vgprs, wave64)
    by_sgprs = sgpr_waves(t, sgprs, trap_handler, sgpr_rule)
    by_lds = lds_waves(
        t,
        lds_bytes,
        max_flat_workgroup_size or MAX_FLAT_WORKGROUP_SIZE,
        wavefront_size,
        True if wgp_mode is None else wgp_mode,
    )
    waves = min(by_vgprs, by_sgprs, by_lds, t.max_waves)
    return Occupancy(waves, by_vgprs, by_sgprs, by_lds, t.max_waves)


def occupancy(
    arch: str,
    *,
    vgprs: int,
    sgprs: int,
    lds_bytes: int,
    wavefront_size: int,
    max_flat_workgroup_size: int | None = None,
    wgp_mode: bool | None = None,
) -> int | None:
    """Waves per SIMD (see :func:`occupancy_detail`)."""
    detail = occupancy_detail(
        arch, vgprs=vgprs, sgprs=sgprs, lds_bytes=lds_bytes, wavefront_size=wavefront_size,
        max_flat_workgroup_size=max_flat_workgroup_size, wgp_mode=wgp_mode,
    )  # fmt: skip
    return None if detail is None else detail.waves


# --- NVIDIA ------------------------------------------------------------------------------

#: Resident warps per SM by compute capability (CUDA C++ Programming Guide, "Compute
#: Capabilities", table "Technical Specifications per Compute Capability"). Every one of
#: them has 64K 32-bit registers per SM, at most 255 per thread.
NVIDIA_MAX_WARPS: dict[str, int] = {
    "sm_70": 64, "sm_72": 64, "sm_75": 32, "sm_80": 64, "sm_86": 48, "sm_87": 48,
    "sm_89": 48, "sm_90": 64, "sm_100": 64, "sm_103": 64, "sm_120": 48,
}  # fmt: skip
NVIDIA_REGISTERS_PER_SM = 65536
NVIDIA_REGISTER_UNIT = 256  # registers are allocated to a warp in units of 256
NVIDIA_WARP_GRANULE = 4  # warps by registers are counted in fours (one per SM partition)


def register_warps(arch: str, registers: int) -> int | None:
    """Warps per SM a kernel's registers per thread allow (None: an arch not in the table).

    The register limit of NVIDIA's CUDA Occupancy Calculator for an unknown block size:
    ``floor(65536 / roundup(registers * 32, 256) / 4) * 4``, at most the arch's resident
    warps. Only this limit: the block size, shared memory per block and blocks per SM,
    which can lower the occupancy further, are not in the SASS.
    """
    max_warps = NVIDIA_MAX_WARPS.get(arch.split(":", 1)[0].rstrip("af"))
    if max_warps is None:
        return None
    per_warp = _align(max(registers, 1) * 32, NVIDIA_REGISTER_UNIT)
    by_registers = NVIDIA_REGISTERS_PER_SM // per_warp // NVIDIA_WARP_GRANULE * NVIDIA_WARP_GRANULE
    return min(by_registers, max_warps)
