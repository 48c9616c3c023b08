"""What the host looked like during a run: recorded, and warned about when not pinned.

The field report's methodology asks for a `performance` CPU governor and a pinned GPU
performance level before any A/B; we cannot set them (that needs root on the host and
changes the machine), but every result says whether they were set.
"""

from __future__ import annotations

import platform
import re
import socket
from pathlib import Path

from pydantic import BaseModel, Field


class HostInfo(BaseModel):
    hostname: str
    kernel: str
    cpu_model: str | None = None
    cpu_count: int | None = None
    cpu_governor: str | None = None
    gpu_model: str | None = None
    gpu_driver: str | None = None
    gpu_perf_level: str | None = None
    warnings: list[str] = Field(default_factory=list)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


def collect(platform_name: str, sys_root: Path = Path("/")) -> HostInfo:
    cpuinfo = _read(sys_root / "proc/cpuinfo") or ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    info = HostInfo(
        hostname=socket.gethostname(),
        kernel=platform.release(),
        cpu_model=model.group(1).strip() if model else None,
        cpu_count=len(re.findall(r"^processor\s*:", cpuinfo, re.MULTILINE)) or None,
        cpu_governor=_read(sys_root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
    )
    if info.cpu_governor is None:
        info.warnings.append(
            "CPU frequency governor not readable (no cpufreq: a VM or container?); "
            "clocks may vary between runs"
        )
    elif info.cpu_governor != "performance":
        info.warnings.append(
            f"CPU governor is {info.cpu_governor!r}, not 'performance': run "
            f"`sudo cpupower frequency-set -g performance` before benchmarking"
        )
    if platform_name == "rocm":
        for card in sorted((sys_root / "sys/class/drm").glob("card[0-9]*/device")):
            if _read(card / "vendor") != "0x1002":
                continue
            info.gpu_model = _read(card / "product_name") or _read(card / "device")
            info.gpu_perf_level = _read(card / "power_dpm_force_performance_level")
            driver = card / "driver" / "module" / "version"
            info.gpu_driver = _read(driver) or _read(sys_root / "sys/module/amdgpu/version")
            break
        if info.gpu_perf_level not in ("high", "profile_peak", "profile_standard"):
            info.warnings.append(
                f"GPU performance level is {info.gpu_perf_level or 'unknown'}, not pinned: run "
                f"`sudo rocm-smi --setperflevel high` before benchmarking"
            )
    return info
