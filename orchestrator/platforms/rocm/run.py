"""What a ROCm run needs of the host: /dev/kfd plus the selected GPU's render node,
their owning groups, seccomp off; a GPU whose target the image holds code for; and
its performance level pinned."""

from __future__ import annotations

from pathlib import Path

from orchestrator.core.settings import split_targets
from orchestrator.engine import KEEP_GROUPS, EngineKind
from orchestrator.platforms.base import (
    CONFINED_SECURITY_OPT,
    ContainerOptions,
    DeviceInfo,
    ProfileMode,
)
from orchestrator.platforms.rocm.profilers import SYSTRACE_CAPS, systrace_problems
from orchestrator.platforms.rocm.stacks import STACKS
from orchestrator.platforms.rocm.targets import detect_gpu_arch
from orchestrator.platforms.roles import RunRole

#: GPU performance levels that count as pinned for benchmarking.
PINNED_LEVELS = ("high", "profile_peak", "profile_standard")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


class RocmRun(RunRole):
    """/dev/kfd plus the selected GPU's render node, their owning groups, seccomp off."""

    has_devices = True

    def __init__(self, dev_root: Path = Path("/dev"), sys_root: Path = Path("/")) -> None:
        self.dev_root = dev_root
        #: Where /sys is read from (the GPU's target in the KFD topology): a test's tree.
        self.sys_root = sys_root

    def present(self) -> bool:
        return (self.dev_root / "kfd").exists()

    def container_options(
        self, device: int, profile: ProfileMode = "none", engine: EngineKind | None = None
    ) -> ContainerOptions:
        # seccomp off: Docker's profile refuses the NUMA memory-policy calls (mbind,
        # set_mempolicy) without CAP_SYS_NICE, which is dropped; ROCr places host memory
        # near the GPU with them (AMD's container docs ask for it; docs/platforms.md).
        opts = ContainerOptions(security_opt=[CONFINED_SECURITY_OPT, "seccomp=unconfined"])
        nodes = [self.dev_root / "kfd", self.dev_root / "dri" / f"renderD{128 + device}"]
        keep_groups = engine is not None and engine.name == "podman" and engine.rootless
        if keep_groups:  # rootless Podman: numeric host gids mean nothing in the user
            opts.group_add.append(KEEP_GROUPS)  # namespace; crun passes the user's own
        for node in nodes:
            host = f"/dev/{node.relative_to(self.dev_root)}"
            opts.devices.append(f"{host}:{host}:rwm")
            try:
                gid = str(node.stat().st_gid)
            except FileNotFoundError:
                opts.problems.append(
                    f"GPU device node {host} does not exist: is the amdgpu driver loaded and "
                    f"is GPU {device} present? (`ls /dev/dri`; pick another with --device; "
                    f"on a machine without a GPU, --cpu-only runs this build on the CPU)"
                )
                continue
            if not keep_groups and gid not in opts.group_add:
                opts.group_add.append(gid)
        visible = str(device)
        opts.environment = {"HIP_VISIBLE_DEVICES": visible, "ROCR_VISIBLE_DEVICES": visible}
        if profile == "systrace":
            opts.cap_add = list(SYSTRACE_CAPS)
        return opts

    def preflight(
        self,
        simd: str | None,
        gpu_arch: str | None,
        options: ContainerOptions,
        *,
        profile: ProfileMode = "none",
        variant: str | None = None,
        image: str | None = None,
    ) -> list[str]:
        """Beyond the CPU's checks: the image's stack ships the profiler asked for, the
        host's perf events allow rocprof-sys, and the host's GPU is among its targets."""
        problems = super().preflight(simd, gpu_arch, options)
        if profile != "none" and variant in STACKS and not STACKS[variant].has_profilers:
            problems.append(
                f"--profile={profile} needs AMD's profilers (rocprofv3, rocprof-compute, "
                f"rocprof-sys), which the {variant} ROCm stack does not ship; run without "
                "--profile, or build with ORCH_ROCM_STACK=amd"
            )
        elif profile == "systrace":
            problems += systrace_problems()
        problem = self.target_problem(gpu_arch, image)
        if problem:
            problems.append(problem)
        return problems

    def target_problem(self, gpu_arch: str | None, image: str | None) -> str | None:
        """Why the host's GPU cannot run the image's code: its target (the KFD topology
        below `sys_root`) is not among the image's targets (`gpu_arch`, comma-joined)."""
        host = detect_gpu_arch(self.sys_root)
        targets = split_targets(gpu_arch)
        if not host or not targets or host in targets:
            return None
        held = ",".join(targets)
        with_host = f"{held},{host}"
        return (
            f"the image {image or 'to run'} holds GPU code for {held} only, but this "
            f"host's GPU is {host}, which it cannot run; rebuild it with that target added "
            f"(ORCH_GPU_ARCH={with_host}, or --gpu-arch {with_host} on build or bench), "
            "or run this build on the CPU with --cpu-only"
        )

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
        info.gpu_target = detect_gpu_arch(sys_root)
        if info.gpu_perf_level not in PINNED_LEVELS:
            info.warnings.append(
                f"GPU performance level is {info.gpu_perf_level or 'unknown'}, not pinned: run "
                f"`sudo rocm-smi --setperflevel high` before benchmarking"
            )
        return info
