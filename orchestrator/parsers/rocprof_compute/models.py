"""The records of a rocprof-compute workload: ``counters.json`` and the parts it holds."""

from __future__ import annotations

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1


class GpuInfo(BaseModel):
    """The GPU as ``sysinfo.csv`` describes it (None where the release did not write it)."""

    arch: str | None = None
    model: str | None = None
    series: str | None = None
    cu_count: int | None = None
    simd_per_cu: int | None = None
    max_waves_per_cu: int | None = None
    wave_size: int | None = None
    num_xcd: int | None = None
    l2_channels: int | None = None
    max_sclk_mhz: float | None = None
    max_mclk_mhz: float | None = None
    hbm_bandwidth_gbs: float | None = Field(None, description="theoretical peak, GB/s")
    hbm_bandwidth_source: str | None = None
    rocm_version: str | None = None
    compute_partition: str | None = None
    memory_partition: str | None = None
    sysinfo_version: str | None = Field(None, description="sysinfo.csv's own 'version' column")


class RooflinePeaks(BaseModel):
    """Measured peaks from ``roofline.csv`` (rocprof-compute's microbenchmarks), one device."""

    device: int
    hbm_gbs: float | None = None
    l2_gbs: float | None = None
    l1_gbs: float | None = None
    lds_gbs: float | None = None
    fp32_gflops: float | None = None
    fp64_gflops: float | None = None


class KernelCounters(BaseModel):
    """One kernel, its dispatches aggregated; a metric is None when its counters are absent."""

    name: str
    category: str
    known: bool = Field(description="False when only the categories' catch-all matched")
    dispatches: int
    total_ns: float | None = Field(None, description="sum of End-Start over dispatches")
    mean_ns: float | None = None
    grid_size: int | None = None
    workgroup_size: int | None = None
    wave_size: int | None = None
    arch_vgpr: int | None = None
    accum_vgpr: int | None = None
    sgpr: int | None = None
    lds_per_workgroup: int | None = Field(None, description="bytes")
    scratch_per_workitem: int | None = Field(None, description="bytes")
    waves_per_dispatch: float | None = Field(None, description="SQ_WAVES, mean per dispatch")
    valu_insts_per_dispatch: float | None = Field(None, description="SQ_INSTS_VALU, mean")
    occupancy_waves_per_simd: int | None = Field(
        None, description="theoretical, from registers/LDS/workgroup size (parsers.occupancy)"
    )
    occupancy_limiter: str | None = None
    wave_occupancy_pct: float | None = Field(
        None, description="measured (SQ_LEVEL_WAVES), % of max_waves_per_cu * cu_per_gpu"
    )
    l2_hit_pct: float | None = None
    fabric_read_bytes: float | None = None
    fabric_write_bytes: float | None = None
    fabric_read_gbs: float | None = None
    fabric_write_gbs: float | None = None
    fabric_gbs: float | None = Field(None, description="(read + write bytes) / total_ns")
    pct_of_hbm_peak: float | None = None


class AnalyzeMetric(BaseModel):
    """One row of an analyze table (``2.1_Speed-of-Light.csv``): inf/NaN become None."""

    metric: str
    value: float | None
    unit: str | None = None
    peak: float | None = None
    pct_of_peak: float | None = None


class AnalyzeKernel(BaseModel):
    """One row of analyze's ``0.1_Top_Kernels.csv``."""

    name: str
    count: float | None = None
    sum_ns: float | None = None
    mean_ns: float | None = None
    median_ns: float | None = None
    pct: float | None = None


class AnalyzeTables(BaseModel):
    """What ``rocprof-compute analyze --save-dfs DIR`` wrote that this module reads."""

    directory: str
    files: list[str] = Field(default_factory=list)
    top_kernels: list[AnalyzeKernel] = Field(default_factory=list)
    speed_of_light: list[AnalyzeMetric] = Field(default_factory=list)


class CounterSummary(BaseModel):
    """``counters.json``: one rocprof-compute workload, per kernel, plus its GPU and peaks."""

    schema_version: int = SCHEMA_VERSION
    source: str = "rocprof-compute"
    workload_dir: str
    files: list[str] = Field(default_factory=list, description="read, relative to workload_dir")
    tool_version: str | None = Field(None, description="from log.txt, when present")
    profiler: str | None = Field(None, description="backend named in log.txt (rocprofv1/2/3)")
    gpu: GpuInfo
    roofline: RooflinePeaks | None = None
    hbm_peak_gbs: float | None = Field(None, description="denominator of pct_of_hbm_peak")
    hbm_peak_source: str | None = None
    dispatches: int = 0
    total_ns: float | None = None
    kernels: list[KernelCounters] = Field(default_factory=list)
    analyze: AnalyzeTables | None = None
    notes: list[str] = Field(default_factory=list)

    def kernel(self, name: str) -> KernelCounters | None:
        """The kernel of that (clean) name, or None."""
        return next((k for k in self.kernels if k.name == name), None)
