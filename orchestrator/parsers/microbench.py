"""What the microbenchmarks leave in a run directory, as metrics compare can judge.

`bandwidth` prints one JSON document (`bandwidth.json`: GB/s per size for the read-only
and the copy kernel, and the device); a user's own kernel, timed by
`payloads/microbench/gmxbench_kernel.h`, one of the same family (`kernel.json`: ms and
GB/s per kernel, and the device); `tune` leaves Kernel Tuner's own cache file
(`tune_cache.json`: every configuration with its times) and `tune_meta.json`. The
tuning analysis works on the cache file alone, so a stored cache file (or one from
another machine) is analysed exactly as a fresh one: the best configuration, the
tuning impact (median time / best time, the paper's max/median performance), the share
of configurations within 10% of the best, and, across two builds, whether the optimum
moved and what the old optimum costs under the new compiler.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.core.errors import UserError
from orchestrator.core.files import read_model

#: A configuration this close to the best counts as "near the optimum".
NEAR = 0.10
Better = Literal["higher", "lower", "none"]
_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gib": 1 << 30}  # fmt: skip


class MetricValue(BaseModel):
    """One number a microbenchmark run reports, with what the recipe declares about it."""

    value: float
    unit: str
    better: Better


def parse_bytes(text: str) -> int | None:
    """`64MiB`, `64M`, `1.5GiB`, `76k`, `1000000` → bytes (binary units); None if not a size."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)", text.strip())
    if not match or match.group(2).lower() not in _UNITS:
        return None
    return round(float(match.group(1)) * _UNITS[match.group(2).lower()])


def format_bytes(nbytes: int) -> str:
    """The canonical spelling: `64MiB`, `76KiB`, `1.5GiB`, else the plain number."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and (nbytes * 10) % scale == 0:
            return f"{nbytes / scale:g}{unit}"
    return str(nbytes)


class BandwidthRow(BaseModel):
    bytes: int = Field(gt=0)
    ro_ms: float = Field(gt=0)
    rw_ms: float = Field(gt=0)
    ro_gbs: float = Field(gt=0)
    rw_gbs: float = Field(gt=0)
    ro_gbs_best: float = Field(gt=0)
    rw_gbs_best: float = Field(gt=0)
    launches: list[int]


class Device(BaseModel):
    name: str
    compute_units: int
    clock_mhz: int = 0
    memory_clock_mhz: int = 0
    memory_bus_bits: int = 0
    memory_bytes: int = 0


class BandwidthOutput(BaseModel):
    """`bandwidth.json`, as bandwidth_gpu.cu and bandwidth_cpu.cpp print it."""

    model_config = ConfigDict(populate_by_name=True)

    schema_version: int = Field(alias="schema")
    program: Literal["bandwidth"]
    api: Literal["cuda", "hip", "openmp"]
    device: Device
    config: dict[str, Any]
    rows: list[BandwidthRow] = Field(min_length=1)

    def peak(self, kernel: Literal["ro", "rw"]) -> BandwidthRow:
        return max(self.rows, key=lambda row: getattr(row, f"{kernel}_gbs"))


def parse_bandwidth(path: Path) -> BandwidthOutput:
    return read_model(
        path, BandwidthOutput, "the bandwidth benchmark's output",
        "Run it again; stderr.log in the run directory says why it stopped.",
    )  # fmt: skip


def bandwidth_values(out: BandwidthOutput) -> dict[str, float]:
    """`ro_peak`, `rw_peak`, and for a sweep `ro@<size>`, `rw@<size>` of every size."""
    values = {"ro_peak": out.peak("ro").ro_gbs, "rw_peak": out.peak("rw").rw_gbs}
    if len(out.rows) > 1:  # the largest size is past every cache: DRAM/HBM
        largest = max(out.rows, key=lambda row: row.bytes)
        values |= {"ro_largest": largest.ro_gbs, "rw_largest": largest.rw_gbs}
    for row in out.rows if len(out.rows) > 1 else []:
        size = format_bytes(row.bytes)
        values[f"ro@{size}"], values[f"rw@{size}"] = row.ro_gbs, row.rw_gbs
    return values


class KernelTiming(BaseModel):
    """One kernel of a user's program: per launch, the median and the best batch."""

    name: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    ms: float = Field(gt=0)
    ms_best: float = Field(gt=0)
    launches: int = Field(gt=0)
    #: Bytes the kernel moves per launch, as the program declares them (0: not said).
    bytes: int = Field(ge=0)
    gbs: float | None = Field(None, gt=0)
    gbs_best: float | None = Field(None, gt=0)


class KernelOutput(BaseModel):
    """`kernel.json`, as `gmxbench_kernel.h`'s `Bench::done` prints it."""

    model_config = ConfigDict(populate_by_name=True)

    schema_version: int = Field(alias="schema")
    program: Literal["kernel"]
    api: Literal["cuda", "hip", "openmp"]
    device: Device
    config: dict[str, Any]
    kernels: list[KernelTiming] = Field(min_length=1)


def parse_kernel(path: Path) -> KernelOutput:
    return read_model(
        path, KernelOutput, "the kernel program's output (gmxbench_kernel.h)",
        "Run it again; stderr.log in the run directory says why it stopped (a program "
        "that times no kernel, or ends before `return bench.done();`, prints none).",
    )  # fmt: skip


def kernel_values(out: KernelOutput) -> dict[str, float]:
    """`<name>_ms` of every kernel, and `<name>_gbs` of those that declare their bytes."""
    values: dict[str, float] = {}
    for kernel in out.kernels:
        values[f"{kernel.name}_ms"] = kernel.ms
        if kernel.gbs is not None:
            values[f"{kernel.name}_gbs"] = kernel.gbs
    return values


class TuneMeta(BaseModel):
    """`tune_meta.json`: what tune.py tuned, with what."""

    program: Literal["tune"]
    backend: str
    space: str
    bytes: int
    compiler: str
    compiler_version: str | None = None
    flags: str | None = None
    device: str
    kernel_tuner: str
    configurations: int
    seconds: float
    simulated: bool = False


class Configuration(BaseModel):
    params: dict[str, int | float | str]
    #: Mean time in ms; None when the configuration failed (compile, launch, invalid).
    time_ms: float | None
    failure: str | None = None

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.params.items())


class TuneSummary(BaseModel):
    """What a build's tuning found, from Kernel Tuner's cache file alone."""

    kernel: str
    device: str
    keys: list[str]
    configurations: int
    valid: int
    best: Configuration
    best_ms: float
    median_ms: float
    impact: float = Field(description="median time / best time (max/median performance)")
    within_10pct: float
    failures: dict[str, int] = Field(default_factory=dict)


def parse_tune_cache(path: Path) -> dict[str, Configuration]:
    """Kernel Tuner's cache file: configuration key → its parameters and mean time."""
    fix = "Tune again (the run directory keeps the old file for inspection)."
    if not path.is_file():
        raise UserError(f"Kernel Tuner's cache file {path} is missing. {fix}")
    try:
        data = json.loads(path.read_text())
        keys = list(data["tune_params_keys"])
        out = {}
        for key, entry in dict(data["cache"]).items():
            time = entry.get("time")
            ok = isinstance(time, int | float) and not isinstance(time, bool) and time > 0
            out[key] = Configuration(
                params={k: entry[k] for k in keys},
                time_ms=float(time) if ok else None,
                failure=None if ok else str(time),
            )
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
        raise UserError(
            f"{path} is not a Kernel Tuner cache file ({type(exc).__name__}: {exc}). {fix}"
        ) from None
    return out


def cache_header(path: Path) -> dict[str, Any]:
    """The cache file's own description: kernel, device, parameter names."""
    data = json.loads(path.read_text())
    return {k: data.get(k) for k in ("kernel_name", "device_name", "tune_params_keys")}


def summarize(path: Path) -> TuneSummary:
    """Best configuration, impact and the share near the optimum, from a cache file."""
    configs = parse_tune_cache(path)
    valid = [c for c in configs.values() if c.time_ms is not None]
    if not valid:
        raise UserError(
            f"No configuration in {path} ran ({len(configs)} tried, every one failed): "
            "the compiler under test cannot build the kernel. Its log is in stderr.log."
        )
    best = min(valid, key=lambda c: c.time_ms or 0.0)
    best_ms = best.time_ms or 0.0
    median = statistics.median(c.time_ms or 0.0 for c in valid)
    failures: dict[str, int] = {}
    for c in configs.values():
        if c.failure is not None:
            failures[c.failure] = failures.get(c.failure, 0) + 1
    header = cache_header(path)
    return TuneSummary(
        kernel=str(header["kernel_name"] or ""),
        device=str(header["device_name"] or ""),
        keys=list(header["tune_params_keys"] or []),
        configurations=len(configs),
        valid=len(valid),
        best=best,
        best_ms=best_ms,
        median_ms=median,
        impact=median / best_ms,
        within_10pct=sum((c.time_ms or 0.0) <= best_ms * (1 + NEAR) for c in valid) / len(valid),
        failures=failures,
    )


def tune_values(summary: TuneSummary) -> dict[str, float]:
    return {
        "best_ms": summary.best_ms,
        "median_ms": summary.median_ms,
        "impact": summary.impact,
        "within_10pct": summary.within_10pct,
    }


class OptimumShift(BaseModel):
    """Across two builds: did the best configuration change, and what the old one costs now."""

    moved: bool
    baseline_best: str
    candidate_best: str
    baseline_best_ms: float
    candidate_best_ms: float
    #: The baseline's best configuration, timed under the candidate's compiler.
    old_best_under_candidate_ms: float | None
    #: How much slower the old optimum is than the new one under the new compiler (%).
    old_best_penalty_pct: float | None

    def sentence(self) -> str:
        if not self.moved:
            return f"optimum unchanged: {self.candidate_best}"
        text = f"optimum moved: {self.baseline_best} → {self.candidate_best}"
        if self.old_best_under_candidate_ms is not None and self.old_best_penalty_pct is not None:
            text += (
                f"; the old optimum takes {self.old_best_under_candidate_ms:.3g} ms under the "
                f"new compiler, {self.old_best_penalty_pct:+.1f}% against the new one"
            )
        return text


def optimum_shift(baseline: Path, candidate: Path) -> OptimumShift:
    """Compare the optima of two cache files of the same kernel and space."""
    base, cand = summarize(baseline), summarize(candidate)
    if base.keys != cand.keys:
        raise UserError(
            f"{baseline} and {candidate} tuned different parameters ({base.keys} vs "
            f"{cand.keys}): their optima cannot be compared. Tune both with one recipe."
        )
    configs = parse_tune_cache(candidate)
    old = next((c for c in configs.values() if c.params == base.best.params), None)
    old_ms = old.time_ms if old is not None else None
    return OptimumShift(
        moved=base.best.params != cand.best.params,
        baseline_best=base.best.label,
        candidate_best=cand.best.label,
        baseline_best_ms=base.best_ms,
        candidate_best_ms=cand.best_ms,
        old_best_under_candidate_ms=old_ms,
        old_best_penalty_pct=(100 * (old_ms / cand.best_ms - 1)) if old_ms else None,
    )
