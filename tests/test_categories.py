"""Kernel-name and cycle-row categorization: one table, first match wins, unknowns flagged."""

from __future__ import annotations

import re

import pytest

from orchestrator.parsers.categories import (
    CATEGORIES,
    CONTEXT_RULES,
    CYCLE_RULES,
    KERNEL_RULES,
    NOT_A_KERNEL,
    PME_SPREAD_GATHER,
    base_name,
    categorize,
    categorize_cycle_row,
    classify,
    cycle_row_counted,
    cycle_row_known,
    strip_kernel_suffix,
)

# (name as a profiler prints it, expected category). Demangled forms follow rocm-gromacs.md §3.3.
KERNEL_CASES = [
    # HIP upstream 2025/2026
    (
        "void gmx::nbnxmKernel<false, false, (gmx::ElecType)4, (gmx::VdwType)2, 1, 1, "
        "(gmx::PairlistType)4>(gmx::NBAtomDataGpu, gmx::NBParamGpu, gmx::GpuPairlist, bool)",
        "nbnxm",
    ),
    (
        "_ZN3gmxL11nbnxmKernelILb0ELb0ELNS_8ElecTypeE4ELNS_7VdwTypeE2ELi1ELi1ELNS_12PairlistType"
        "E4EEEvNS_13NBAtomDataGpuENS_10NBParamGpuENS_11GpuPairlistEb.kd",
        "nbnxm",
    ),
    (
        "void gmx::nbnxmKernelPruneOnly<(gmx::PairlistType)4, true, 4, 1>(gmx::NBAtomDataGpu, "
        "gmx::NBParamGpu, gmx::GpuPairlist, int)",
        "nbnxm",
    ),
    ("void gmx::nbnxmKernelBucketSciSort<256>(gmx::GpuPairlist)", "nbnxm"),
    (
        "gmx::nbnxmKernelTransformXToXq(int, int, int, gmx::FusedXToXqGridParams, "
        "HIP_vector_type<float, 4u>*, HIP_vector_type<float, 3u> const*, int const*)",
        "nbnxm",
    ),
    (
        "void pmeSplineAndSpreadKernel<4, true, true, true, true, 1, true, (ThreadsPerAtom)0, 64>"
        "(PmeGpuKernelParams)",
        "pme_spread",
    ),
    (
        "_Z24pmeSplineAndSpreadKernelILi4ELb1ELb1ELb1ELb1ELi1ELb1EL14ThreadsPerAtom0ELi64EEv18"
        "PmeGpuKernelParams",
        "pme_spread",
    ),
    (
        "void pmeGatherKernel<4, true, true, 1, true, (ThreadsPerAtom)0, 64>(PmeGpuKernelParams)",
        "pme_gather",
    ),
    ("void pmeSolveKernel<(GridOrdering)0, false, 0, 64>(PmeGpuKernelParams)", "pme_solve"),
    ("pmegrid_to_fftgrid", "memory"),
    ("void pmeGpuPackHaloExternal(PmeGpuKernelParams)", "memory"),
    ("void gmx::bonded_kernel_gpu<false, false>(gmx::BondedGpuKernelParameters)", "other"),
    ("void gmx::reduceKernel<true, false>(HIP_vector_type<float, 3u> const*, int)", "other"),
    ("void gmx::settleKernel<true, false>(int, gmx::WaterMolecule const*)", "other"),
    ("void gmx::lincsKernel<true, false>(gmx::LincsGpuKernelParameters)", "other"),
    ("dummy_kernel()", "other"),
    # 2026 HIP fork
    ("void gmx::nbnxmKernelSumUp<64>(gmx::NBAtomDataGpu, int)", "nbnxm"),
    ("void gmx::nbfeKernel<true>(gmx::NBAtomDataGpu)", "nbnxm"),
    ("void gmx::nbfeForeignKernel<true>(gmx::NBAtomDataGpu)", "nbnxm"),
    ("void gmx::langevin_kernel<true>(int)", "other"),
    # ROCm/Gromacs fork and CUDA
    ("nbnxn_kernel_ElecEw_VdwLJ_F_prune_hip", "nbnxm"),
    ("nbnxn_kernel_ElecEwQSTab_VdwLJCombGeom_VF_cuda", "nbnxm"),
    ("nbnxm_kernel_prune_cuda", "nbnxm"),
    ("nbnxn_kernel_bucket_sci_sort", "nbnxm"),
    ("gmx::nbnxnKernelBucketSciSort(gmx::GpuPairlist)", "nbnxm"),  # GROMACS 2026.3, CUDA
    ("void nbnxn_gpu_x_to_nbat_x_kernel<true>(int, float3 const*)", "nbnxm"),
    (
        "void pme_spline_and_spread_kernel<4, true, true, true, true, 1>(PmeGpuCudaKernelParams)",
        "pme_spread",
    ),
    ("void pme_gather_kernel<4, true, true, 1, false>(PmeGpuCudaKernelParams)", "pme_gather"),
    ("void pme_solve_kernel<(GridOrdering)0, true, 0>(PmeGpuCudaKernelParams)", "pme_solve"),
    ("kernel_fill", "memory"),
    (
        "void gmx::packSendBufKernel<true, true>(float3*, float3*, int const*, int, float3)",
        "memory",
    ),
    ("void regular_fft<64u, 16u, 8u, 1u>(float2*)", "fft"),
    ("void vector_fft<128u, 8u, 16u, 4u>(float2*)", "fft"),
    ("void cub::CUB_200200_800_NS::DeviceScanKernel<int*, int*>(int*)", "nbnxm"),
    ("void rocprim::ROCPRIM_300400_NS::detail::lookback_scan_kernel<true, int*>(int*)", "nbnxm"),
    ("void rocprim::ROCPRIM_300400_NS::detail::single_scan_kernel<true, int*>(int*)", "nbnxm"),
    # SYCL kernel-name classes (as typeinfo names, demangled and mangled)
    ("typeinfo name for gmx::NbnxmKernel<true, false, (gmx::ElecType)2>", "nbnxm"),
    ("_ZTSN3gmx11NbnxmKernelILb1ELb0EEE", "nbnxm"),
    ("typeinfo name for PmeSplineAndSpreadKernel<4, true>", "pme_spread"),
    ("typeinfo name for PmeGatherKernel<4, true>", "pme_gather"),
    ("typeinfo name for PmeSolveKernel<0, true>", "pme_solve"),
    ("typeinfo name for GridConverter<true>", "memory"),
    # FFT libraries and the HIP runtime
    ("VkFFT_main", "fft"),
    ("VkFFT_main_R2C", "fft"),
    ("fft_rtc_fwd_len64_factors_8_8_wgs_64_tpt_8_half_sp_ip_CI_unitstride_sbrr_dirReg", "fft"),
    ("fft_rtc_back_len100_factors_10_10_wgs_100_tpt_10_sp_op_CI_CI_sbrr", "fft"),
    ("transpose_rtc_tile64x64_sp_op_CI_CI_dim2", "fft"),
    ("r2c_copy_rtc_sp_op", "fft"),
    ("r2c_even_post_sp_ip", "fft"),
    ("__amd_rocclr_copyBuffer", "memory"),
    ("__amd_rocclr_copyBufferRect", "memory"),
    ("__amd_rocclr_fillBufferAligned", "memory"),
    ("__amd_rocclr_fillBufferAligned2D", "memory"),
    ("__amd_rocclr_streamOpsWait", "other"),
    ("__amd_rocclr_initHeap", "other"),
]


@pytest.mark.parametrize(("name", "expected"), KERNEL_CASES)
def test_kernel_names_map_to_expected_category(name: str, expected: str) -> None:
    category, known = classify(name)
    assert (category, known) == (expected, True)
    assert categorize(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "void addition_kernel<float>(float*, float const*, float const*, int, int)",
        "_Z15addition_kernelIfEvPT_PKfS3_ii.kd",
        "bodyForce(Body*, float, int) [clone .kd]",
        "__omp_offloading_30_57b9f__QMnorm_modPnorm_l23",
        "NormKernel1(int, double, double, double const*, double*)",
    ],
)
def test_names_no_rule_matches_are_other_and_unknown(name: str) -> None:
    assert classify(name) == ("other", False)


def test_strip_kernel_suffix_takes_what_each_profiler_appended() -> None:
    name = "bodyForce(Body*, float, int)"
    for spelling in (name, f" {name} ", f"{name} [clone .kd]", f"{name} (.kd)"):
        assert strip_kernel_suffix(spelling) == name
    assert strip_kernel_suffix("_Z9bodyForceP4Bodyfi.kd") == "_Z9bodyForceP4Bodyfi"
    # a rocprof breakdown keeps the descriptor's .kd as rocprofv3 spelled it
    assert strip_kernel_suffix("_Z9bodyForceP4Bodyfi.kd", keep_descriptor=True).endswith(".kd")
    assert strip_kernel_suffix(f"{name} [clone .kd]", keep_descriptor=True) == name


def test_base_name_handles_every_spelling() -> None:
    assert base_name(
        "void gmx::nbnxmKernel<true, (gmx::ElecType)4>(gmx::GpuPairlist<(gmx::PairlistType)4>)"
    ) == ("nbnxmKernel")
    assert base_name("_Z15subtract_kernelPfPKfS1_ii.kd") == "subtract_kernel"
    assert base_name("bodyForce(Body*, float, int) [clone .kd]") == "bodyForce"
    assert base_name("nbnxmKernel") == "nbnxmKernel"  # rocprofv3 -T (truncated)


def test_first_match_wins_layout_copy_is_memory_not_fft() -> None:
    # "pmegrid_to_fftgrid" contains "fft"; the memory rule precedes the generic fft rule.
    memory_index = next(i for i, r in enumerate(KERNEL_RULES) if "fft_?grid" in r.pattern)
    generic_fft = next(i for i, r in enumerate(KERNEL_RULES) if r.pattern == "(?i)fft")
    assert memory_index < generic_fft
    assert categorize("pmegrid_to_fftgrid") == "memory"


def test_rule_table_uses_only_known_categories_and_compiles() -> None:
    assert CATEGORIES == (
        "nbnxm",
        "pme_spread",
        "fft",
        "pme_solve",
        "pme_gather",
        "memory",
        "other",
    )
    for rule in KERNEL_RULES:
        assert rule.category in CATEGORIES
        assert rule.note
        re.compile(rule.pattern)
    for context in CONTEXT_RULES:
        assert context.category in CATEGORIES
        assert context.note
        re.compile(context.base)
        re.compile(context.arguments)
    # the combined 2016-era PME row is the only cycle category outside the seven
    assert set(CYCLE_RULES.values()) <= {*CATEGORIES, PME_SPREAD_GATHER}
    assert PME_SPREAD_GATHER not in CATEGORIES
    assert NOT_A_KERNEL not in CATEGORIES


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("Force", "nbnxm"),
        ("Nonbonded", "nbnxm"),
        ("NB X/F buffer ops.", "nbnxm"),
        ("PME spread", "pme_spread"),
        ("PME spread/gather", PME_SPREAD_GATHER),
        ("PME gather", "pme_gather"),
        ("PME 3D-FFT", "fft"),
        ("PME 3D-FFT Comm.", "fft"),
        ("PME solve Elec", "pme_solve"),
        ("PME solve LJ", "pme_solve"),
        ("Neighbor search", "other"),
        ("Wait GPU NB local", "other"),
        ("PME mesh *", "other"),
        ("Update", "other"),
    ],
)
def test_cycle_rows_map_to_categories(row: str, expected: str) -> None:
    assert categorize_cycle_row(row) == expected


def test_cycle_rows_parents_and_sums_are_not_double_counted() -> None:
    assert not cycle_row_counted("PME mesh", "main", has_pme_breakdown=True)
    assert not cycle_row_counted("PME mesh *", "main", has_pme_breakdown=True)
    assert not cycle_row_counted("PME GPU mesh", "main", has_pme_breakdown=True)
    assert cycle_row_counted("PME mesh", "main", has_pme_breakdown=False)
    assert not cycle_row_counted("Rest", "main", has_pme_breakdown=True)
    assert not cycle_row_counted("Total", "main", has_pme_breakdown=False)
    assert not cycle_row_counted("NS grid local", "pp", has_pme_breakdown=True)
    assert cycle_row_counted("PME spread", "pme", has_pme_breakdown=True)
    assert cycle_row_counted("Force", "main", has_pme_breakdown=True)


def test_cycle_row_known_flags_new_rows_only() -> None:
    assert cycle_row_known("Launch PP GPU ops.")
    assert cycle_row_known("PME wait for PP *")
    assert cycle_row_known("Force")
    assert not cycle_row_known("Brand new counter")
