"""Time parsing a 1,000,000-row ROCm 7.0 kernel_trace.csv into a category breakdown.

The parse keeps every call's duration (per-kernel median/p10/p90), so this also checks
that those quantiles stay cheap.

The budget is 3 s on a 2-core machine: a long GROMACS run traces millions of dispatches
and ``gmxbench parse`` must stay interactive. Run ``python benchmarks/bench_parse.py``.
"""

from __future__ import annotations

import csv
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.parsers.rocprof import parse_rocprof

ROWS = 1_000_000
HEADER = [
    "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id",
    "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size",
    "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X",
    "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
]  # fmt: skip

# ~20 distinct names as rocprofv3 demangles a GROMACS 2026 HIP run, with rough mean µs.
KERNELS: list[tuple[str, int]] = [
    ("void gmx::nbnxmKernel<false, false, (gmx::ElecType)4, (gmx::VdwType)2, 1, 1, "
     "(gmx::PairlistType)4>(gmx::NBAtomDataGpu, gmx::NBParamGpu, gmx::GpuPairlist, bool)", 180),
    ("void gmx::nbnxmKernel<true, false, (gmx::ElecType)4, (gmx::VdwType)2, 1, 1, "
     "(gmx::PairlistType)4>(gmx::NBAtomDataGpu, gmx::NBParamGpu, gmx::GpuPairlist, bool)", 260),
    ("void gmx::nbnxmKernel<false, true, (gmx::ElecType)4, (gmx::VdwType)2, 1, 1, "
     "(gmx::PairlistType)4>(gmx::NBAtomDataGpu, gmx::NBParamGpu, gmx::GpuPairlist, bool)", 210),
    ("void gmx::nbnxmKernelPruneOnly<(gmx::PairlistType)4, true, 4, 1>(gmx::NBAtomDataGpu, "
     "gmx::NBParamGpu, gmx::GpuPairlist, int)", 40),
    ("void gmx::nbnxmKernelBucketSciSort<256>(gmx::GpuPairlist)", 8),
    ("gmx::nbnxmKernelTransformXToXq(int, int, int, gmx::FusedXToXqGridParams, "
     "HIP_vector_type<float, 4u>*, HIP_vector_type<float, 3u> const*, int const*, int const*, "
     "int const*)", 6),
    ("void pmeSplineAndSpreadKernel<4, true, true, true, true, 1, true, (ThreadsPerAtom)0, 64>"
     "(PmeGpuKernelParams)", 70),
    ("void pmeGatherKernel<4, true, true, 1, true, (ThreadsPerAtom)0, 64>(PmeGpuKernelParams)", 45),
    ("void pmeSolveKernel<(GridOrdering)0, false, 0, 64>(PmeGpuKernelParams)", 12),
    ("void pmeSolveKernel<(GridOrdering)0, true, 0, 64>(PmeGpuKernelParams)", 14),
    ("VkFFT_main", 15),
    ("VkFFT_main_R2C", 18),
    ("void gmx::reduceKernel<true, false>(HIP_vector_type<float, 3u> const*, "
     "HIP_vector_type<float, 3u> const*, HIP_vector_type<float, 3u>*, int const*, int)", 5),
    ("void gmx::leapFrogKernel<(gmx::NumTempScaleValues)1, (gmx::ParrinelloRahmanVelocityScaling)0>"
     "(int, HIP_vector_type<float, 3u>*, HIP_vector_type<float, 3u>*, ...)", 7),
    ("void gmx::lincsKernel<true, false>(gmx::LincsGpuKernelParameters, "
     "HIP_vector_type<float, 3u> const*, HIP_vector_type<float, 3u>*, ...)", 20),
    ("void gmx::settleKernel<true, false>(int, gmx::WaterMolecule const*, gmx::SettleParameters, "
     "HIP_vector_type<float, 3u> const*, ...)", 11),
    ("void gmx::bonded_kernel_gpu<false, false>(gmx::BondedGpuKernelParameters, "
     "gmx::BondedGpuKernelBuffers, HIP_vector_type<float, 4u>*, ...)", 25),
    ("__amd_rocclr_copyBuffer", 3),
    ("__amd_rocclr_fillBufferAligned", 2),
    ("pmegrid_to_fftgrid", 4),
]  # fmt: skip


def write_trace(path: Path, rows: int = ROWS, seed: int = 1) -> int:
    """Write a realistic trace; returns the exact sum of End-Start in ns (the answer)."""
    rng = random.Random(seed)
    total = 0
    clock = 1_551_874_061_244_694
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
        writer.writerow(HEADER)
        for i in range(rows):
            name, mean_us = KERNELS[i % len(KERNELS)]
            duration = rng.randint(mean_us * 500, mean_us * 1500)
            total += duration
            start = clock + 1000
            clock = start + duration
            writer.writerow(
                ["KERNEL_DISPATCH", "Agent 4", 1, 1, 852831, i + 1, 10 + i % 20, name, i + 1,
                 start, clock, 0, 0, 64, 0, 32, 256, 1, 1, 65536, 1, 1]
            )  # fmt: skip
    return total


def main() -> list[dict[str, float | int | str]]:
    """Generate, parse once, check the sum; one result row for the nox `perf` session."""
    with tempfile.TemporaryDirectory(prefix="gmxbench-bench-") as tmp:
        trace = Path(tmp) / "host" / "1234_kernel_trace.csv"
        trace.parent.mkdir()
        expected_ns = write_trace(trace)
        size_mb = trace.stat().st_size / 1e6
        started = time.perf_counter()
        breakdown = parse_rocprof(Path(tmp))
        seconds = time.perf_counter() - started
    got_ns = round(breakdown.total_ms * 1e6)
    if abs(got_ns - expected_ns) > 1000 or sum(k.calls for k in breakdown.kernels) != ROWS:
        raise SystemExit(f"wrong result: {got_ns} ns vs expected {expected_ns} ns")
    if any(k.median_us is None for k in breakdown.kernels):
        raise SystemExit("per-kernel call quantiles (median_us) missing from a trace")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return [
        {
            "benchmark": "parse kernel_trace.csv",
            "rows": ROWS,
            "file_mb": round(size_mb, 1),
            "seconds": round(seconds, 3),
            "rows_per_s": round(ROWS / seconds),
            "peak_rss_mb": round(peak_mb, 1),
            "budget_s": 3.0,
        }
    ]


if __name__ == "__main__":
    results = main()
    keys = list(results[0])
    print("  ".join(f"{k:>14}" for k in keys))
    for row in results:
        print("  ".join(f"{row[k]!s:>14}" for k in keys))
