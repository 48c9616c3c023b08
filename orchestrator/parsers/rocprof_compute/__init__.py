"""Parse a rocprof-compute (formerly Omniperf) workload directory into a :class:`CounterSummary`.

``rocprof-compute profile`` replays the application once per counter group and leaves a
*workload directory* (``<out>/<name>/<gpu model>/`` by default): ``pmc_perf.csv`` (one row
per dispatch, one column per counter, ~1000-2700 columns), ``sysinfo.csv`` (the GPU),
``roofline.csv`` (measured peaks; absent with ``--no-roof`` and on GPUs without roofline),
``SQ_LEVEL_WAVES.csv`` (the occupancy pass) and ``log.txt``. With the rocprofiler-sdk
backend the passes may instead be ``results_pmc_perf_<n>.csv`` (long format: one row per
counter per dispatch) or ``pmc_perf_<n>.csv`` (one wide file per pass) that analyze merges
later; newer releases gzip them (``.csv.gz``). All of these are read, by column *name*
(case-insensitive, first occurrence wins), never by position, and a missing column gives
``None`` rather than a guess: the schema drifts between releases (``TCC_EA_RDREQ`` became
``TCC_EA0_RDREQ`` on gfx942, ``sysinfo.csv`` dropped ``hbm_bw`` for
``num_hbm_channels``/``num_memory_channels``, ``Wave_Size`` changed case).

Per kernel (its dispatches summed) the record keeps what a compiler developer reads
first: registers, LDS, scratch, occupancy, VALU instructions, L2 hit rate and the L2↔fabric
traffic against the HBM peak, by rocprof-compute's own formulas (:mod:`.counters` gives them
and their sources).
"""

from orchestrator.parsers.rocprof_compute.analyze import parse_analyze_dir
from orchestrator.parsers.rocprof_compute.dispatches import clean_kernel_name
from orchestrator.parsers.rocprof_compute.models import (
    AnalyzeKernel,
    AnalyzeMetric,
    AnalyzeTables,
    CounterSummary,
    GpuInfo,
    KernelCounters,
    RooflinePeaks,
)
from orchestrator.parsers.rocprof_compute.sysinfo import parse_sysinfo, unsupported_arch
from orchestrator.parsers.rocprof_compute.workload import (
    find_workload,
    find_workloads,
    parse_workload,
)

__all__ = [
    "AnalyzeKernel",
    "AnalyzeMetric",
    "AnalyzeTables",
    "CounterSummary",
    "GpuInfo",
    "KernelCounters",
    "RooflinePeaks",
    "clean_kernel_name",
    "find_workload",
    "find_workloads",
    "parse_analyze_dir",
    "parse_sysinfo",
    "parse_workload",
    "unsupported_arch",
]
