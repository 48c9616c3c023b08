"""The GPU targets of a CUDA build: the setting, else sm_90 (the H100 the platform was
measured on), how CMake is told each one, and the target of a compute capability as
`nvidia-smi` reports it."""

from __future__ import annotations

from orchestrator.core.errors import UserError
from orchestrator.core.settings import SM_TARGET, Settings, split_targets

DEFAULT_ARCH = "sm_90"


def gpu_archs(settings: Settings) -> list[str]:
    """The targets a build compiles every CUDA unit for, the primary one first: the
    setting (`ORCH_GPU_ARCH=sm_90,sm_80`), else sm_90."""
    targets = split_targets(settings.gpu_arch) or [DEFAULT_ARCH]
    wrong = [target for target in targets if not SM_TARGET.fullmatch(target)]
    if wrong:
        raise UserError(
            f"ORCH_GPU_ARCH={settings.gpu_arch} names {', '.join(wrong)}, which is not an NVIDIA "
            "target, but this build is for the CUDA platform: set sm_ names (sm_90, sm_80), "
            "or ORCH_PLATFORM=rocm for AMD targets"
        )
    return targets


def cmake_arch(target: str) -> str:
    """CMake's `CMAKE_CUDA_ARCHITECTURES` entry of a target: sm_90 is 90, sm_90a 90a."""
    return target.removeprefix("sm_")


def from_compute_cap(cap: str) -> str | None:
    """`nvidia-smi --query-gpu=compute_cap`'s answer (9.0) as a target (sm_90)."""
    major, _, minor = cap.strip().partition(".")
    if not (major.isdigit() and minor.isdigit()):
        return None
    return f"sm_{major}{minor}"
