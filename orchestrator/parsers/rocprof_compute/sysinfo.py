"""The GPU and the tool as a workload describes them: ``sysinfo.csv``, ``roofline.csv``,
``log.txt``, and the profiler's words for a GPU it does not support."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.rocprof_compute.models import GpuInfo, RooflinePeaks
from orchestrator.parsers.rocprof_compute.tables import PROFILE_FIX, Table, read_table


def _sysinfo_number(table: Table, cells: list[str], line: int, *names: str) -> float | None:
    for name in names:
        value = table.number(cells, name, line)
        if value is not None:
            return value
    return None


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _positive(value: float | None) -> float | None:
    """sysinfo writes 0 for a clock it could not read (MI350 samples): that is unknown."""
    return value if value is not None and value > 0 else None


def parse_sysinfo(path: Path) -> GpuInfo:
    """``sysinfo.csv`` (first data row) as :class:`GpuInfo`; schema by column name."""
    table = read_table(path, "rocprof-compute sysinfo")
    if not table.rows:
        raise UserError(f"{path} has a header but no row. {PROFILE_FIX}")
    line, cells = table.rows[0]

    def num(*names: str) -> float | None:
        return _sysinfo_number(table, cells, line, *names)

    max_mclk = _positive(num("max_mclk"))
    hbm = _positive(num("hbm_bw"))
    source = "sysinfo hbm_bw" if hbm is not None else None
    channels = num("num_hbm_channels", "num_memory_channels")
    if hbm is None and max_mclk is not None and channels:
        hbm = max_mclk / 1000 * 32 * channels
        source = "sysinfo max_mclk/1000 * 32 * memory channels"
    return GpuInfo(
        arch=table.text(cells, "gpu_arch"),
        model=table.text(cells, "gpu_model"),
        series=table.text(cells, "gpu_series"),
        cu_count=_int(num("cu_per_gpu")),
        simd_per_cu=_int(num("simd_per_cu")),
        max_waves_per_cu=_int(num("max_waves_per_cu")),
        wave_size=_int(num("wave_size")),
        num_xcd=_int(num("num_xcd")),
        l2_channels=_int(num("total_l2_chan")),
        max_sclk_mhz=_positive(num("max_sclk")),
        max_mclk_mhz=max_mclk,
        hbm_bandwidth_gbs=hbm,
        hbm_bandwidth_source=source,
        rocm_version=table.text(cells, "rocm_version"),
        compute_partition=table.text(cells, "compute_partition"),
        memory_partition=table.text(cells, "memory_partition"),
        sysinfo_version=table.text(cells, "version"),
    )


def parse_roofline(path: Path) -> RooflinePeaks | None:
    """Device 0's row (analyze's default ``--device``), else the first row."""
    table = read_table(path, "rocprof-compute roofline")
    if not table.rows:
        return None
    chosen = table.rows[0]
    for line, cells in table.rows:
        if table.number(cells, "device", line) == 0:
            chosen = (line, cells)
            break
    line, cells = chosen
    device = table.number(cells, "device", line)
    return RooflinePeaks(
        device=int(device) if device is not None else 0,
        hbm_gbs=table.number(cells, "HBMBw", line),
        l2_gbs=table.number(cells, "L2Bw", line),
        l1_gbs=table.number(cells, "L1Bw", line),
        lds_gbs=table.number(cells, "LDSBw", line),
        fp32_gflops=table.number(cells, "FP32Flops", line),
        fp64_gflops=table.number(cells, "FP64Flops", line),
    )


_VERSION_LINE = re.compile(
    r"^(?:Omniperf|Rocprofiler-Compute|ROCm Compute Profiler|rocprofiler-compute)"
    r"\s+version:\s*(\S+)",
    re.IGNORECASE | re.MULTILINE,
)
_PROFILER_LINE = re.compile(r"^Profiler choice:\s*(\S+)", re.MULTILINE)


def parse_log(path: Path) -> tuple[str | None, str | None]:
    """(tool version, profiler backend) from the head of ``log.txt``."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(65536)
    except OSError:
        return None, None
    version = _VERSION_LINE.search(head)
    profiler = _PROFILER_LINE.search(head)
    return (version.group(1) if version else None, profiler.group(1) if profiler else None)


# --- the unsupported-GPU message ------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_UNSUPPORTED = re.compile(
    r"Cannot find a supported arch in rocminfo|\bis an unsupported SoC\b|\bUnsupported arch\b",
    re.IGNORECASE,
)


def unsupported_arch(log: str) -> str | None:
    """The profiler's own line saying this GPU is unsupported, colour codes removed, or None.

    Released versions print ``ERROR Cannot find a supported arch in rocminfo`` for a GPU
    they have no configs for (gfx1201 up to at least ROCm 7.1; newer ones append
    ``: <arch>``); older ones ``<arch> is an unsupported SoC``. A run can then be recorded
    as ``profile: skipped`` with these words instead of as a failure.
    """
    for line in log.splitlines():
        clean = _ANSI.sub("", line).strip()
        if _UNSUPPORTED.search(clean):
            return clean
    return None
