"""A workload directory found and read whole into a :class:`CounterSummary`."""

from __future__ import annotations

from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.rocprof_compute.analyze import parse_analyze_dir
from orchestrator.parsers.rocprof_compute.counters import (
    Context,
    duration,
    kernel_counters,
    strict_sum,
)
from orchestrator.parsers.rocprof_compute.dispatches import (
    Dispatch,
    clean_kernel_name,
    find_counter_files,
    level_waves,
    long_dispatches,
    merge,
    wide_dispatches,
)
from orchestrator.parsers.rocprof_compute.models import CounterSummary, GpuInfo
from orchestrator.parsers.rocprof_compute.sysinfo import parse_log, parse_roofline, parse_sysinfo
from orchestrator.parsers.rocprof_compute.tables import PROFILE_FIX, read_table, relative


def _is_workload(directory: Path) -> bool:
    return bool(find_counter_files(directory)[1])


def find_workloads(path: Path) -> list[Path]:
    """Every workload directory at or under ``path`` (shallowest first, then by name)."""
    if path.is_file():
        path = path.parent
    if not path.is_dir():
        return []
    if _is_workload(path):
        return [path]
    found = {
        p.parent
        for pattern in ("pmc_perf.csv", "pmc_perf.csv.gz", "results_pmc_perf_*", "pmc_perf_*.csv")
        for p in path.rglob(pattern)
        if p.is_file()
    }
    return sorted(found, key=lambda p: (len(p.parts), str(p)))


def find_workload(path: Path) -> Path | None:
    """The workload directory at or under a run directory (``<out>/<name>/<gpu>/``), or None."""
    found = find_workloads(path)
    return found[0] if found else None


def parse_workload(path: Path, analysis: Path | None = None) -> CounterSummary:
    """A workload directory (or a run directory holding one) → :class:`CounterSummary`.

    ``analysis`` is where ``rocprof-compute analyze`` wrote its CSVs (``--save-dfs DIR``;
    searched recursively); by default ``<workload>/analyze`` is read when it exists.
    """
    if not path.exists():
        raise UserError(f"{path} does not exist. Pass a rocprof-compute workload directory.")
    workload = find_workload(path)
    if workload is None:
        raise UserError(
            f"No pmc_perf.csv (nor results_pmc_perf_<n>.csv) at or under {path}: it is not a "
            "rocprof-compute workload directory, or profiling stopped before writing its "
            f"counters (see log.txt there). {PROFILE_FIX}"
        )
    notes: list[str] = []
    files: list[str] = []
    gpu = GpuInfo()
    if (workload / "sysinfo.csv").is_file():
        gpu = parse_sysinfo(workload / "sysinfo.csv")
        files.append("sysinfo.csv")
    else:
        notes.append("no sysinfo.csv: GPU, HBM peak and theoretical occupancy are unknown")
    roofline = None
    if (workload / "roofline.csv").is_file():
        roofline = parse_roofline(workload / "roofline.csv")
        files.append("roofline.csv")
    hbm_peak, peak_source = gpu.hbm_bandwidth_gbs, gpu.hbm_bandwidth_source
    if roofline is not None and roofline.hbm_gbs:
        hbm_peak, peak_source = roofline.hbm_gbs, f"roofline.csv HBMBw (device {roofline.device})"

    layout, counter_files = find_counter_files(workload)
    parts: list[Dispatch] = []
    for file in counter_files:
        table = read_table(file, "rocprof-compute counters")
        files.append(relative(file, workload))
        parts.extend(long_dispatches(table) if layout == "long" else wide_dispatches(table))
    dispatches = merge(parts)
    if not dispatches:
        raise UserError(
            f"{counter_files[0]} holds no dispatch: no kernel matched the profile's filters "
            f"(-k/-d), or the application launched none. {PROFILE_FIX}"
        )
    level = level_waves(workload)
    if level:
        files.append("SQ_LEVEL_WAVES.csv")

    by_name: dict[str, list[Dispatch]] = {}
    for dispatch in dispatches:
        by_name.setdefault(clean_kernel_name(dispatch.name), []).append(dispatch)
    ctx = Context(gpu, hbm_peak, level)
    kernels = [kernel_counters(name, group, ctx) for name, group in by_name.items()]
    kernels.sort(key=lambda k: (k.total_ns is None, -(k.total_ns or 0.0), -k.dispatches, k.name))

    no_time = sum(1 for d in dispatches if duration(d) is None)
    if no_time:
        sample = next(d for d in dispatches if duration(d) is None)
        stamps = (sample.meta.get("start_timestamp"), sample.meta.get("end_timestamp"))
        notes.append(
            f"{no_time} of {len(dispatches)} dispatches have no duration (Start/End_Timestamp "
            f"{stamps[0]!r}/{stamps[1]!r}: End <= Start, e.g. timestamps rounded to a few digits "
            "by a spreadsheet): their kernels' times and bandwidths are unknown"
        )
    if not any(k.l2_hit_pct is not None or k.fabric_read_bytes is not None for k in kernels):
        notes.append("no TCC (L2) counters found: L2 hit rate and fabric traffic are unknown")
    elif hbm_peak is None:
        notes.append(
            "no HBM peak (no roofline.csv, and sysinfo.csv has neither hbm_bw nor max_mclk "
            "with a memory channel count): % of HBM peak is unknown"
        )

    version, profiler = (None, None)
    if (workload / "log.txt").is_file():
        version, profiler = parse_log(workload / "log.txt")
    analyze = None
    analysis = analysis if analysis is not None else workload / "analyze"
    if analysis.is_dir():
        analyze = parse_analyze_dir(analysis)
    totals = [k.total_ns for k in kernels]
    return CounterSummary(
        workload_dir=str(workload),
        files=files,
        tool_version=version,
        profiler=profiler,
        gpu=gpu,
        roofline=roofline,
        hbm_peak_gbs=hbm_peak,
        hbm_peak_source=peak_source,
        dispatches=len(dispatches),
        total_ns=strict_sum(totals),
        kernels=kernels,
        analyze=analyze,
        notes=notes,
    )
