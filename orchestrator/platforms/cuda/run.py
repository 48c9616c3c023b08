"""What a CUDA run needs of the host: the GPU passed through as NVIDIA's container
toolkit does it (a Docker device request; a CDI device on Podman), a GPU whose target
the image holds code for, and its clocks locked.

The container sees the requested GPU alone, as CUDA device 0 (the toolkit sets
NVIDIA_VISIBLE_DEVICES to it): `CUDA_VISIBLE_DEVICES` is left unset, since the host's
index would name a GPU the container does not have.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from orchestrator.core.settings import split_targets
from orchestrator.engine import EngineKind, gpu_request
from orchestrator.platforms.base import ContainerOptions, DeviceInfo, ProfileMode
from orchestrator.platforms.cuda.targets import from_compute_cap
from orchestrator.platforms.roles import RunRole

#: The fields `devices` asks nvidia-smi for, in order.
SMI_FIELDS = ("name", "driver_version", "compute_cap", "clocks.sm", "clocks.max.sm",
              "clocks_event_reasons.active")  # fmt: skip
#: nvidia-smi's bit of `clocks_event_reasons.active` for an idle GPU (nvml.h).
IDLE_REASON = 0x1
#: The NVIDIA container toolkit's programs: Docker's `--gpus` runs the hook.
TOOLKIT_PROGRAMS = ("nvidia-container-runtime-hook", "nvidia-ctk")
#: Where CDI specs live (`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`).
CDI_DIRS = ("etc/cdi", "var/run/cdi")

#: Runs nvidia-smi with these arguments: (exit code, output); None without nvidia-smi.
Smi = Callable[[Sequence[str]], "tuple[int, str] | None"]


def host_smi(args: Sequence[str]) -> tuple[int, str] | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run([smi, *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.returncode, done.stdout


def parse_smi(line: str) -> dict[str, str]:
    """One line of `nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader`."""
    return dict(zip(SMI_FIELDS, (value.strip() for value in line.split(",")), strict=False))


def _mhz(value: str | None) -> int | None:
    number = (value or "").removesuffix("MHz").strip()
    return int(number) if number.isdigit() else None


class CudaRun(RunRole):
    """The GPU by device request (Docker) or CDI name (Podman); nvidia-smi for the rest."""

    has_devices = True

    def __init__(
        self, dev_root: Path = Path("/dev"), sys_root: Path = Path("/"), smi: Smi = host_smi
    ) -> None:
        self.dev_root = dev_root
        #: Where /etc/cdi and /var/run/cdi are read from, and the toolkit looked for.
        self.sys_root = sys_root
        self.smi = smi

    def present(self) -> bool:
        return (self.dev_root / "nvidiactl").exists()

    def container_options(
        self, device: int, profile: ProfileMode = "none", engine: EngineKind | None = None
    ) -> ContainerOptions:
        opts = ContainerOptions()
        if engine is not None and engine.name == "podman":
            opts.devices.append(f"nvidia.com/gpu={device}")
            if not self._cdi_spec():
                opts.problems.append(
                    "Podman passes NVIDIA GPUs by CDI, but no CDI spec for them is in "
                    f"{' or '.join('/' + d for d in CDI_DIRS)}: run `sudo nvidia-ctk cdi "
                    "generate --output=/etc/cdi/nvidia.yaml` (NVIDIA container toolkit)"
                )
        else:
            opts.device_requests.append(gpu_request("nvidia", device))
            if not self._toolkit():
                opts.problems.append(
                    "Docker passes NVIDIA GPUs through NVIDIA's container toolkit, which this "
                    "host lacks (no nvidia-container-runtime-hook or nvidia-ctk on PATH): "
                    "install nvidia-container-toolkit and restart Docker"
                )
        if not self.present():
            opts.problems.append(
                f"no NVIDIA driver here ({self.dev_root}/nvidiactl does not exist): is the nvidia "
                f"driver loaded and GPU {device} present (`nvidia-smi`)? On a machine without "
                "a GPU, --cpu-only runs this build on the CPU"
            )
        return opts

    def native_options(self, device: int, profile: ProfileMode = "none") -> ContainerOptions:
        """On the host, CUDA numbers the GPUs itself: `CUDA_VISIBLE_DEVICES` picks the one
        asked for (no container toolkit is involved)."""
        opts = ContainerOptions(environment={"CUDA_VISIBLE_DEVICES": str(device)})
        if not self.present():
            opts.problems.append(
                f"no NVIDIA driver here ({self.dev_root}/nvidiactl does not exist): is the "
                f"nvidia driver loaded and GPU {device} present (`nvidia-smi`)? On a machine "
                "without a GPU, --cpu-only runs this build on the CPU"
            )
        return opts

    def _toolkit(self) -> bool:
        return any(shutil.which(program) for program in TOOLKIT_PROGRAMS)

    def _cdi_spec(self) -> bool:
        return any(list((self.sys_root / folder).glob("nvidia*.*")) for folder in CDI_DIRS)

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
        """Beyond the CPU's checks: AMD's profilers are refused, and the host GPU is among
        the targets."""
        problems = super().preflight(simd, gpu_arch, options)
        if profile in ("counters", "systrace"):
            problems.append(
                f"--profile={profile} needs AMD's profilers; on the CUDA platform run "
                "without --profile or with --profile=trace (Nsight Compute: per-kernel time "
                "and executed instructions)"
            )
        problem = self.target_problem(gpu_arch, image)
        if problem:
            problems.append(problem)
        return problems

    def host_target(self) -> str | None:
        """The first GPU's target from nvidia-smi (9.0 is sm_90); None without one."""
        answer = self.smi(["--query-gpu=compute_cap", "--format=csv,noheader"])
        if answer is None or answer[0] != 0 or not answer[1].strip():
            return None
        return from_compute_cap(answer[1].splitlines()[0])

    def target_problem(self, gpu_arch: str | None, image: str | None) -> str | None:
        """Why the host's GPU cannot run the image's code. An sm_90a build runs on sm_90
        alone, as does sm_90: the `a` is the same GPU with its own instructions."""
        host, targets = self.host_target(), split_targets(gpu_arch)
        if not host or not targets or host in {t.rstrip("af") for t in targets}:
            return None
        held = ",".join(targets)
        return (
            f"the image {image or 'to run'} holds GPU code for {held} only, but this host's "
            f"GPU is {host}, which it cannot run; rebuild it with that target added "
            f"(ORCH_GPU_ARCH={held},{host}, or --gpu-arch {held},{host} on build or bench), "
            "or run this build on the CPU with --cpu-only"
        )

    def devices(self, sys_root: Path) -> DeviceInfo:
        """The first GPU by nvidia-smi: model, driver, target, and whether its clocks look
        locked: an idle GPU whose SM clock is far below its maximum is not locked (with
        `nvidia-smi -lgc` an idle GPU holds the locked clock)."""
        info = DeviceInfo()
        answer = self.smi([f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"])
        if answer is None or answer[0] != 0 or not answer[1].strip():
            return info
        fields: dict[str, Any] = parse_smi(answer[1].splitlines()[0])
        info.gpu_model, info.gpu_driver = fields.get("name"), fields.get("driver_version")
        info.gpu_target = from_compute_cap(fields.get("compute_cap", ""))
        sm, top = _mhz(fields.get("clocks.sm")), _mhz(fields.get("clocks.max.sm"))
        try:
            idle = bool(int(fields.get("clocks_event_reasons.active", ""), 16) & IDLE_REASON)
        except ValueError:
            idle = False
        if sm is not None and top is not None:
            unlocked = idle and sm < top // 2
            info.gpu_perf_level = f"{'unlocked' if unlocked else 'locked'} (SM {sm}/{top} MHz)"
            if unlocked:
                info.warnings.append(
                    f"GPU clocks are not locked (idle SM clock {sm} of {top} MHz): run "
                    f"`sudo nvidia-smi -lgc {top},{top}` before benchmarking"
                )
        return info
