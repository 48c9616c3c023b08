"""The ROCm platform: HIP GROMACS for one AMD GPU target, kernels traced by rocprofv3.

Stable builds use ROCm's own amdclang++ with the vendor's HIP defaults; dev builds send
HIP straight through the clang under test with the flags hipcc would inject. Runs get
/dev/kfd and the selected GPU's render node, the groups owning them, and seccomp off.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.core.settings import GromacsSource, Settings
from orchestrator.parsers.breakdown import KernelBreakdown
from orchestrator.parsers.mdlog import MdLog
from orchestrator.parsers.rocprof import find_rocprof_files, parse_rocprof
from orchestrator.platforms.base import (
    PREFIX_MAP,
    BuildFacts,
    Compiler,
    ContainerOptions,
    DeviceInfo,
    Flavor,
    Platform,
    Probe,
    ProfileMode,
    common_cmake_flags,
)

#: What hipcc injects; going through clang directly puts these on us (field report).
HIP_DEV_FLAGS = (
    "-fPIC -fno-gpu-rdc -ffast-math -munsafe-fp-atomics -fdenormal-fp-math=ieee "
    "-fcuda-flush-denormals-to-zero -fno-slp-vectorize -Wno-unused-command-line-argument "
    "-Wno-pass-failed"
)
DEFAULT_ARCH = "gfx1201"
#: Where the profilers write, inside the run directory.
TRACE_DIR, COUNTERS_DIR = "rocprof", "rocprof-compute"
#: GPU performance levels that count as pinned for benchmarking.
PINNED_LEVELS = ("high", "profile_peak", "profile_standard")


def detect_gpu_arch() -> str | None:
    """The first GPU's gfx target from the KFD topology (no ROCm tools needed)."""
    nodes = Path("/sys/class/kfd/kfd/topology/nodes")
    if not nodes.is_dir():
        return None
    for props in sorted(nodes.glob("*/properties")):
        text = props.read_text(errors="replace")
        match = re.search(r"^gfx_target_version\s+(\d+)", text, re.MULTILINE)
        if match and int(match.group(1)):
            version = int(match.group(1))
            major, minor, step = version // 10000, (version // 100) % 100, version % 100
            return f"gfx{major}{minor:x}{step:x}"
    return None


def rocm_path(settings: Settings) -> str:
    """Where ROCm lives in every image: the reference layout of TheRock packages."""
    return f"/opt/rocm/core-{settings.rocm_version}"


def gpu_arch(settings: Settings) -> str:
    """The GPU target: the setting, else the host's first GPU, else gfx1201."""
    return settings.gpu_arch or detect_gpu_arch() or DEFAULT_ARCH


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


class RocmPlatform(Platform):
    """/dev/kfd plus the selected GPU's render node, their owning groups, seccomp off."""

    name = "rocm"
    default_base = "rocm/dev-ubuntu-24.04:7.12-complete"
    default_gromacs: ClassVar[GromacsSource] = GromacsSource(
        url="git+https://gitlab.com/gromacs/gromacs.git", ref="4947-hip-feature-enablement"
    )
    gpu_support = "HIP"
    has_devices = True

    def __init__(self, dev_root: Path = Path("/dev")) -> None:
        self.dev_root = dev_root

    def present(self) -> bool:
        return (self.dev_root / "kfd").exists()

    # Building ------------------------------------------------------------------------

    def builder_context(self, settings: Settings) -> dict[str, Any]:
        return {
            "base_image": self.base_image(settings),
            "rocm_version": settings.rocm_version,
            "rocm_path": rocm_path(settings),
        }

    def gromacs_values(self, settings: Settings) -> dict[str, Any]:
        return {
            "rocm_path": rocm_path(settings),
            "rocm_version": settings.rocm_version,
            "gpu_arch": gpu_arch(settings),
        }

    def record_values(self, settings: Settings) -> dict[str, Any]:
        return {"rocm_version": settings.rocm_version}

    def gpu_target(self, settings: Settings) -> str | None:
        return gpu_arch(settings)

    def stable_compiler(self, settings: Settings, probe: Probe) -> Compiler:
        """ROCm's amdclang++ at the reference path; nothing to ask the image."""
        hip = f"{rocm_path(settings)}/bin/amdclang++"
        return Compiler(name=f"rocm{settings.rocm_version}", cc="cc", cxx="c++", hip=hip)

    def stable_build_name(self, settings: Settings, compiler: Compiler) -> str:
        return f"stable-rocm{settings.rocm_version}"

    def compiler_under_test(self, compiler: Compiler) -> str:
        return compiler.hip or compiler.cxx

    def cmake_flags(
        self, settings: Settings, flavor: Flavor, compiler: Compiler, prefix: str
    ) -> list[str]:
        rocm, arch = rocm_path(settings), gpu_arch(settings)
        flags = [
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DGMX_GPU=HIP",
            f"-DCMAKE_HIP_COMPILER={compiler.hip}",
            f"-DCMAKE_HIP_COMPILER_ROCM_ROOT={rocm}",
        ]
        dev = flavor == "dev"
        if dev:  # stable keeps the vendor's HIP defaults: no CMAKE_HIP_FLAGS at all
            hip_flags = (
                f"--rocm-path={rocm} --offload-arch={arch} {HIP_DEV_FLAGS} "
                f"--rocm-device-lib-path={rocm}/lib/llvm/amdgcn/bitcode {PREFIX_MAP}"
            )
            flags.append(f"-DCMAKE_HIP_FLAGS={hip_flags}")
        flags += [f"-DGMX_HIP_TARGET_ARCH={arch}"]
        if dev:
            flags += [f"-DCMAKE_HIP_ARCHITECTURES={arch}", f"-DGPU_TARGETS={arch}"]
        flags += [f"-DCMAKE_PREFIX_PATH={rocm}", *common_cmake_flags(settings, prefix)]
        if dev:
            flags.append(f"-DHIPCC_HAS_TARGET_ARCH_{arch}=TRUE")
        return flags

    def compiler_problems(self, facts: BuildFacts, compiler: Compiler) -> list[str]:
        hip = facts.cmake_compilers.get("CMAKE_HIP_COMPILER", "")
        if hip != compiler.hip:
            return [f"CMAKE_HIP_COMPILER is {hip!r}, asked for {compiler.hip}"]
        return []

    def recorded_compiler(self, facts: BuildFacts, compiler: Compiler) -> str:
        return self.compiler_under_test(compiler)

    # Running -------------------------------------------------------------------------

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

    def wrap(self, mdrun: list[str], profile: ProfileMode, workdir: str) -> list[str]:
        if profile == "trace":
            return [
                "rocprofv3", "--kernel-trace", "--stats", "--output-format", "csv",
                "-d", f"{workdir}/{TRACE_DIR}", "--", *mdrun,
            ]  # fmt: skip
        if profile == "counters":
            return ["rocprof-compute", "profile", "-n", "gmxbench", "-p",
                    f"{workdir}/{COUNTERS_DIR}", "--", *mdrun]  # fmt: skip
        return mdrun

    def preflight(
        self, simd: str | None, gpu_arch: str | None, options: ContainerOptions
    ) -> list[str]:
        problems = super().preflight(simd, gpu_arch, options)
        host_arch = detect_gpu_arch()
        if gpu_arch and host_arch and gpu_arch != host_arch:
            problems.append(
                f"the image was built for {gpu_arch} but this host's GPU is {host_arch}; "
                f"rebuild with ORCH_GPU_ARCH={host_arch}"
            )
        return problems

    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> KernelBreakdown | None:
        """GPU kernels are only known from a trace."""
        return parse_rocprof(run_dir / TRACE_DIR) if profile == "trace" else None

    def profile_breakdown(self, run_dir: Path) -> KernelBreakdown | None:
        traces = run_dir / TRACE_DIR
        if traces.is_dir() and find_rocprof_files(traces):
            return parse_rocprof(traces)
        return None

    def devices(self, sys_root: Path) -> DeviceInfo:
        info = DeviceInfo()
        for card in sorted((sys_root / "sys/class/drm").glob("card[0-9]*/device")):
            if _read(card / "vendor") != "0x1002":
                continue
            info.gpu_model = _read(card / "product_name") or _read(card / "device")
            info.gpu_perf_level = _read(card / "power_dpm_force_performance_level")
            driver = card / "driver" / "module" / "version"
            info.gpu_driver = _read(driver) or _read(sys_root / "sys/module/amdgpu/version")
            break
        if info.gpu_perf_level not in PINNED_LEVELS:
            info.warnings.append(
                f"GPU performance level is {info.gpu_perf_level or 'unknown'}, not pinned: run "
                f"`sudo rocm-smi --setperflevel high` before benchmarking"
            )
        return info
