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
traffic against the HBM peak. The formulas are rocprof-compute's own, from its analysis
configs (``src/rocprof_compute_soc/analysis_configs/<arch>/0200_system-speed-of-light.yaml``,
v3.0.0 @ 95b600e and rocm-systems develop @ 1b1610f for gfx950):

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
  num_hbm_channels`` GB/s (develop ``src/utils/parser.py``, ``hbmBandwidth``).

rocprof-compute itself compares the L2-fabric bandwidth with the HBM peak; that traffic is
everything the L2 exchanged with the fabric (HBM, and also host or peer memory), so it is
an upper bound of HBM traffic and is named ``fabric_*`` here. Where analyze reports the
*mean of per-dispatch ratios*, this module reports the ratio of sums over a kernel's
dispatches (time-weighted); the two are equal for a kernel dispatched once.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import BaseModel, Field

from orchestrator.core.errors import UserError
from orchestrator.parsers.categories import classify
from orchestrator.parsers.occupancy import TARGETS, occupancy_detail

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

SCHEMA_VERSION = 1
_PROFILE_FIX = (
    "Profile again with 'rocprof-compute profile -n <name> -- <command>' and pass the whole "
    "workload directory (<out>/<name>/<gpu model>/)."
)


# --- records -------------------------------------------------------------------------------


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


# --- CSV reading ---------------------------------------------------------------------------

_MISSING = {"", "na", "n/a", "nan", "none", "null"}


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


@dataclass
class _Table:
    """A CSV file held as rows; columns looked up by lower-cased name."""

    path: Path
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line number, cells)
    columns: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, name in enumerate(self.header):
            self.columns.setdefault(name.strip().lower(), index)

    def has(self, name: str) -> bool:
        return name.lower() in self.columns

    def text(self, cells: list[str], name: str) -> str | None:
        index = self.columns.get(name.lower())
        if index is None or index >= len(cells):
            return None
        value = cells[index].strip()
        return None if value.lower() in _MISSING else value

    def number(self, cells: list[str], name: str, line: int) -> float | None:
        value = self.text(cells, name)
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            raise UserError(
                f"{self.path} line {line}, column {name}: {value!r} is not a number. "
                "rocprof-compute writes only numbers there, so the file was edited or "
                f"damaged. {_PROFILE_FIX}"
            ) from None


def _ends_with_newline(path: Path) -> bool:
    """Every writer of these files ends them with a line break; gzip checks its own end."""
    if path.suffix == ".gz":
        return True
    with path.open("rb") as handle:
        handle.seek(0, 2)
        if handle.tell() == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) in (b"\n", b"\r")


def _read_table(path: Path, what: str) -> _Table:
    """The whole CSV, or a UserError for a missing, empty or cut-short file."""
    try:
        handle = _open_text(path)
    except OSError as exc:
        raise UserError(f"Cannot read {path} ({what}): {exc.strerror}. {_PROFILE_FIX}") from None
    try:
        with handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            rows = [(reader.line_num, row) for row in reader if any(c.strip() for c in row)]
    except (csv.Error, OSError, EOFError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} ({what}) is not a readable CSV ({exc}). {_PROFILE_FIX}") from None
    if not header or not any(c.strip() for c in header):
        raise UserError(f"{path} ({what}) is empty: it has no header line. {_PROFILE_FIX}")
    if not _ends_with_newline(path):
        raise UserError(
            f"{path} ({what}) ends mid-row: its last line has no line break, so the file "
            f"was cut short while it was written or copied. {_PROFILE_FIX}"
        )
    for line, row in rows:
        if len(row) < len(header):
            raise UserError(
                f"{path} ({what}) line {line} has {len(row)} of the header's {len(header)} "
                "columns: the file ends mid-row (cut short while it was written or copied). "
                f"{_PROFILE_FIX}"
            )
    return _Table(path, header, rows)


# --- sysinfo, roofline, log ------------------------------------------------------------------


def _sysinfo_number(table: _Table, cells: list[str], line: int, *names: str) -> float | None:
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
    table = _read_table(path, "rocprof-compute sysinfo")
    if not table.rows:
        raise UserError(f"{path} has a header but no row. {_PROFILE_FIX}")
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


def _parse_roofline(path: Path) -> RooflinePeaks | None:
    """Device 0's row (analyze's default ``--device``), else the first row."""
    table = _read_table(path, "rocprof-compute roofline")
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


def _parse_log(path: Path) -> tuple[str | None, str | None]:
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


# --- dispatches ------------------------------------------------------------------------------

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
class _Dispatch:
    id: str
    name: str
    meta: dict[str, float | None]
    counters: dict[str, float | None]
    source: str


_CLONE_SUFFIXES = (" [clone .kd]", " (.kd)", ".kd")


def clean_kernel_name(name: str) -> str:
    """The name without the code-object suffix rocprof added (``[clone .kd]``, ``(.kd)``).

    Analyze wraps long names in its tables with a newline; that is undone here too, so
    names from every release and table compare equal.
    """
    name = " ".join(part for part in name.replace("\n", "").split(" ") if part)
    for suffix in _CLONE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)].rstrip()
    return name


def _require_name_column(table: _Table) -> None:
    if not table.has("kernel_name"):
        found = ", ".join(h for h in table.header[:8] if h) or "none"
        raise UserError(
            f"{table.path} has no Kernel_Name column (first columns: {found}), so it is not "
            f"a rocprof-compute counter file. {_PROFILE_FIX}"
        )


def _wide_dispatches(table: _Table) -> Iterator[_Dispatch]:
    """One dispatch per row (``pmc_perf.csv``, ``pmc_perf_<n>.csv``)."""
    _require_name_column(table)
    wanted = [c for c in _COUNTERS if table.has(c)]
    for line, cells in table.rows:
        yield _Dispatch(
            id=table.text(cells, "dispatch_id") or str(line),
            name=table.text(cells, "kernel_name") or "",
            meta={m: table.number(cells, m, line) for m in _META[2:]},
            counters={c: table.number(cells, c, line) for c in wanted},
            source=table.path.name,
        )


def _long_dispatches(table: _Table) -> Iterator[_Dispatch]:
    """``results_pmc_perf_<n>.csv``: one row per counter per dispatch, pivoted."""
    _require_name_column(table)
    for needed in ("counter_name", "counter_value", "dispatch_id"):
        if not table.has(needed):
            raise UserError(
                f"{table.path} has no {needed} column, which a rocprofiler-sdk counter file "
                f"(results_pmc_perf_<n>.csv) has. {_PROFILE_FIX}"
            )
    by_id: dict[str, _Dispatch] = {}
    for line, cells in table.rows:
        dispatch_id = table.text(cells, "dispatch_id") or ""
        dispatch = by_id.get(dispatch_id)
        if dispatch is None:
            dispatch = by_id[dispatch_id] = _Dispatch(
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


def _merge(parts: Iterable[_Dispatch]) -> list[_Dispatch]:
    """Passes of one run merged by dispatch id: the first pass's timestamps, every counter."""
    merged: dict[str, _Dispatch] = {}
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


def _counter_files(workload: Path) -> tuple[str, list[Path]]:
    """(layout, files) of the counter data in a workload directory."""
    for name in ("pmc_perf.csv", "pmc_perf.csv.gz"):
        if (workload / name).is_file():
            return "wide", [workload / name]
    for layout, pattern in (("long", "results_pmc_perf_*.csv"), ("wide", "pmc_perf_*.csv")):
        found = [*workload.glob(pattern), *workload.glob(pattern + ".gz")]
        if found:
            return layout, sorted(found, key=lambda p: (_pass_number(p), p.name))
    return "", []


def _level_waves(workload: Path) -> dict[str, float]:
    """Dispatch id → SQ_ACCUM_PREV_HIRES of the SQ_LEVEL_WAVES pass, when it was collected."""
    path = workload / "SQ_LEVEL_WAVES.csv"
    if not path.is_file():
        return {}
    table = _read_table(path, "rocprof-compute SQ_LEVEL_WAVES pass")
    if not (table.has("dispatch_id") and table.has("sq_accum_prev_hires")):
        return {}
    found: dict[str, float] = {}
    for line, cells in table.rows:
        value = table.number(cells, "sq_accum_prev_hires", line)
        dispatch_id = table.text(cells, "dispatch_id")
        if value is not None and dispatch_id is not None:
            found[dispatch_id] = value
    return found


# --- aggregation -----------------------------------------------------------------------------


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


def _sum(values: Sequence[float | None]) -> float | None:
    """Sum, or None when any dispatch lacks the value (a partial sum would mislead)."""
    if not values or any(v is None for v in values):
        return None
    return float(sum(v for v in values if v is not None))


def _first_int(dispatches: Sequence[_Dispatch], key: str) -> int | None:
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
class _Context:
    gpu: GpuInfo
    hbm_peak: float | None
    level_waves: dict[str, float]


def _duration(d: _Dispatch) -> float | None:
    start, end = d.meta.get("start_timestamp"), d.meta.get("end_timestamp")
    if start is None or end is None or end <= start:
        return None
    return end - start


def _kernel(name: str, dispatches: list[_Dispatch], ctx: _Context) -> KernelCounters:
    category, known = classify(name)
    durations = [_duration(d) for d in dispatches]
    total_ns = _sum(durations)
    n = len(dispatches)

    def counter_sum(key: str) -> float | None:
        return _sum([d.counters.get(key) for d in dispatches])

    def mean(key: str) -> float | None:
        total = counter_sum(key)
        return None if total is None else total / n

    hits, misses = counter_sum("tcc_hit_sum"), counter_sum("tcc_miss_sum")
    l2_hit = None
    if hits is not None and misses is not None and hits + misses > 0:
        l2_hit = 100.0 * hits / (hits + misses)
    traffic = [_fabric_bytes(d.counters) for d in dispatches]
    read, write = _sum([t[0] for t in traffic]), _sum([t[1] for t in traffic])

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


def _wave_occupancy(dispatches: Sequence[_Dispatch], ctx: _Context) -> float | None:
    """Time-weighted mean waves resident on the GPU, % of its wave slots (analyze's metric)."""
    gpu = ctx.gpu
    if not ctx.level_waves or not (gpu.num_xcd and gpu.max_waves_per_cu and gpu.cu_count):
        return None
    accum = [ctx.level_waves.get(d.id) for d in dispatches]
    active = [d.counters.get("grbm_gui_active") for d in dispatches]
    total_accum, total_active = _sum(accum), _sum(active)
    if total_accum is None or not total_active:
        return None
    waves = total_accum / (total_active / gpu.num_xcd)
    return 100.0 * waves / (gpu.max_waves_per_cu * gpu.cu_count)


# --- analyze tables --------------------------------------------------------------------------


def _finite(value: float | None) -> float | None:
    return value if value is not None and value == value and abs(value) != float("inf") else None


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def parse_analyze_dir(directory: Path) -> AnalyzeTables:
    """Top kernels and System Speed-of-Light from ``analyze --save-dfs`` CSVs in ``directory``.

    Files are found by title, at any depth (``*Top_Kernels*.csv``,
    ``2.1_*Speed-of-Light*.csv``), columns by name; analyze writes ``inf`` for a rate over
    a zero duration, kept as None. A directory without them gives empty tables.
    """
    tables = AnalyzeTables(directory=str(directory))
    top = sorted(directory.rglob("*Top_Kernels*.csv"))
    sol = sorted(directory.rglob("2.1_*Speed*Light*.csv"))
    if top:
        table = _read_table(top[0], "rocprof-compute analyze top kernels")
        cols = {_key(h): h for h in table.header}
        tables.files.append(_relative(top[0], directory))
        for line, cells in table.rows:

            def num(key: str, cells: list[str] = cells, line: int = line) -> float | None:
                column = cols.get(key)
                return None if column is None else _finite(table.number(cells, column, line))

            tables.top_kernels.append(
                AnalyzeKernel(
                    name=clean_kernel_name(table.text(cells, cols.get("kernelname", "")) or ""),
                    count=num("count"),
                    sum_ns=num("sumns"),
                    mean_ns=num("meanns"),
                    median_ns=num("medianns"),
                    pct=num("pct"),
                )
            )
    if sol:
        table = _read_table(sol[0], "rocprof-compute analyze speed-of-light")
        cols = {_key(h): h for h in table.header}
        tables.files.append(_relative(sol[0], directory))
        value_col = cols.get("avg") or cols.get("value") or ""
        for line, cells in table.rows:
            metric = table.text(cells, cols.get("metric", ""))
            if metric is None:
                continue
            tables.speed_of_light.append(
                AnalyzeMetric(
                    metric=metric,
                    value=_finite(table.number(cells, value_col, line)),
                    unit=table.text(cells, cols.get("unit", "")),
                    peak=_finite(table.number(cells, cols.get("peak", ""), line)),
                    pct_of_peak=_finite(table.number(cells, cols.get("pctofpeak", ""), line)),
                )
            )
    return tables


# --- workloads -------------------------------------------------------------------------------


def _is_workload(directory: Path) -> bool:
    return bool(_counter_files(directory)[1])


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


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


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
            f"counters (see log.txt there). {_PROFILE_FIX}"
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
        roofline = _parse_roofline(workload / "roofline.csv")
        files.append("roofline.csv")
    hbm_peak, peak_source = gpu.hbm_bandwidth_gbs, gpu.hbm_bandwidth_source
    if roofline is not None and roofline.hbm_gbs:
        hbm_peak, peak_source = roofline.hbm_gbs, f"roofline.csv HBMBw (device {roofline.device})"

    layout, counter_files = _counter_files(workload)
    parts: list[_Dispatch] = []
    for file in counter_files:
        table = _read_table(file, "rocprof-compute counters")
        files.append(_relative(file, workload))
        parts.extend(_long_dispatches(table) if layout == "long" else _wide_dispatches(table))
    dispatches = _merge(parts)
    if not dispatches:
        raise UserError(
            f"{counter_files[0]} holds no dispatch: no kernel matched the profile's filters "
            f"(-k/-d), or the application launched none. {_PROFILE_FIX}"
        )
    level = _level_waves(workload)
    if level:
        files.append("SQ_LEVEL_WAVES.csv")

    by_name: dict[str, list[_Dispatch]] = {}
    for dispatch in dispatches:
        by_name.setdefault(clean_kernel_name(dispatch.name), []).append(dispatch)
    ctx = _Context(gpu, hbm_peak, level)
    kernels = [_kernel(name, group, ctx) for name, group in by_name.items()]
    kernels.sort(key=lambda k: (k.total_ns is None, -(k.total_ns or 0.0), -k.dispatches, k.name))

    no_time = sum(1 for d in dispatches if _duration(d) is None)
    if no_time:
        sample = next(d for d in dispatches if _duration(d) is None)
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
        version, profiler = _parse_log(workload / "log.txt")
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
        total_ns=_sum(totals),
        kernels=kernels,
        analyze=analyze,
        notes=notes,
    )
