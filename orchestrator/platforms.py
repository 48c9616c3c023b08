"""Container platforms: what differs between a ROCm GPU run and a CPU run.

Each platform answers two questions (ReFrame keeps its container platforms behind a
two-method interface the same way): which engine options a run container needs, and
how the profiler wraps mdrun. Everything else in a run is shared.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from orchestrator.errors import UserError
from orchestrator.settings import detect_gpu_arch

ProfileMode = Literal["none", "trace", "counters"]

#: Host CPU flags each GMX_SIMD level needs (x86 from /proc/cpuinfo).
SIMD_CPU_FLAGS: dict[str, set[str]] = {
    "None": set(),
    "SSE2": {"sse2"},
    "SSE4.1": {"sse4_1"},
    "AVX_128_FMA": {"avx", "fma4"},
    "AVX_256": {"avx"},
    "AVX2_128": {"avx2", "fma"},
    "AVX2_256": {"avx2", "fma"},
    "AVX_512": {"avx512f"},
}


@dataclass
class ContainerOptions:
    """The engine options a platform adds to every run container."""

    devices: list[str] = field(default_factory=list)
    group_add: list[str] = field(default_factory=list)
    security_opt: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def engine_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.devices:
            out["devices"] = self.devices
        if self.group_add:
            out["group_add"] = self.group_add
        if self.security_opt:
            out["security_opt"] = self.security_opt
        return out


class RunPlatform(Protocol):
    name: str

    def container_options(self, device: int) -> ContainerOptions: ...

    def wrap(self, mdrun: list[str], profile: ProfileMode) -> list[str]: ...


class CpuPlatform:
    """No devices, no profiler: md.log's cycle accounting is the per-category breakdown."""

    name = "cpu"

    def container_options(self, device: int) -> ContainerOptions:
        return ContainerOptions()

    def wrap(self, mdrun: list[str], profile: ProfileMode) -> list[str]:
        if profile == "counters":
            raise UserError(
                "--profile=counters needs rocprof-compute and a GPU (ORCH_PLATFORM=rocm); on the "
                "CPU platform use --profile=trace, which records md.log's cycle accounting."
            )
        return mdrun


class RocmPlatform:
    """/dev/kfd plus the selected GPU's render node, their owning groups, seccomp off."""

    name = "rocm"

    def __init__(self, dev_root: Path = Path("/dev")) -> None:
        self.dev_root = dev_root

    def container_options(self, device: int) -> ContainerOptions:
        opts = ContainerOptions(security_opt=["seccomp=unconfined"])
        nodes = [self.dev_root / "kfd", self.dev_root / "dri" / f"renderD{128 + device}"]
        for node in nodes:
            host = f"/dev/{node.relative_to(self.dev_root)}"
            opts.devices.append(f"{host}:{host}:rwm")
            try:
                gid = str(node.stat().st_gid)
            except FileNotFoundError:
                opts.problems.append(
                    f"GPU device node {host} does not exist: is the amdgpu driver loaded and "
                    f"is GPU {device} present? (`ls /dev/dri`; pick another with --device)"
                )
                continue
            if gid not in opts.group_add:
                opts.group_add.append(gid)
        visible = str(device)
        opts.environment = {"HIP_VISIBLE_DEVICES": visible, "ROCR_VISIBLE_DEVICES": visible}
        return opts

    def wrap(self, mdrun: list[str], profile: ProfileMode) -> list[str]:
        if profile == "trace":
            return [
                "rocprofv3", "--kernel-trace", "--stats", "--output-format", "csv",
                "-d", "/run/rocprof", "--", *mdrun,
            ]  # fmt: skip
        if profile == "counters":
            return ["rocprof-compute", "profile", "-n", "gmxbench", "-p", "/run/rocprof-compute",
                    "--", *mdrun]  # fmt: skip
        return mdrun


def platform_for(name: str) -> RunPlatform:
    return RocmPlatform() if name == "rocm" else CpuPlatform()


def host_cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    match = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def preflight(
    labels: dict[str, str], platform: RunPlatform, options: ContainerOptions
) -> list[str]:
    """Problems that would make the run fail or lie, found before any container starts."""
    from orchestrator import LABEL_PREFIX

    problems = list(options.problems)
    simd = labels.get(LABEL_PREFIX + "simd")
    missing = SIMD_CPU_FLAGS.get(simd or "None", set()) - host_cpu_flags()
    if simd and missing and os.uname().machine == "x86_64":
        problems.append(
            f"the image was built for GMX_SIMD={simd} but this CPU lacks "
            f"{', '.join(sorted(missing))}; "
            f"rebuild with ORCH_SIMD set to a level this host supports (e.g. AVX_256 or SSE4.1)"
        )
    image_arch = labels.get(LABEL_PREFIX + "gpu_arch")
    host_arch = detect_gpu_arch()
    if platform.name == "rocm" and image_arch and host_arch and image_arch != host_arch:
        problems.append(
            f"the image was built for {image_arch} but this host's GPU is {host_arch}; "
            f"rebuild with ORCH_GPU_ARCH={host_arch}"
        )
    return problems
