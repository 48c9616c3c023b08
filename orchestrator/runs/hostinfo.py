"""What the host looked like during a run: recorded, and warned about when not pinned.

The field report's methodology asks for a `performance` CPU governor and a pinned GPU
performance level before any A/B; we cannot set them (that needs root on the host and
changes the machine), but every result says whether they were set.
"""

from __future__ import annotations

import platform as platform_module
import re
import socket
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.platforms.base import Platform


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


def collect(platform: Platform, sys_root: Path = Path("/")) -> HostInfo:
    """The host now, with a warning for each thing that makes timings less repeatable."""
    cpuinfo = _read(sys_root / "proc/cpuinfo") or ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    info = HostInfo(
        hostname=socket.gethostname(),
        kernel=platform_module.release(),
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
    devices = platform.devices(sys_root)
    info.gpu_model, info.gpu_driver = devices.gpu_model, devices.gpu_driver
    info.gpu_perf_level = devices.gpu_perf_level
    info.warnings += devices.warnings
    return info
