"""The GPU targets of a ROCm build: the setting, else the host's GPU, else gfx1201, and
how clang is told each one."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.core.settings import Settings, split_targets

DEFAULT_ARCH = "gfx1201"


def detect_gpu_arch(sys_root: Path = Path("/")) -> str | None:
    """The first GPU's gfx target from the KFD topology below `sys_root` (no ROCm tools
    needed): `gfx_target_version 120001` in a node's properties is gfx1201."""
    nodes = sys_root / "sys/class/kfd/kfd/topology/nodes"
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


def gpu_archs(settings: Settings) -> list[str]:
    """The GPU targets a build compiles every HIP unit for, the primary one first: the
    setting (`ORCH_GPU_ARCH=gfx1201,gfx942`), else the host's first GPU, else gfx1201."""
    if settings.gpu_arch:
        targets = split_targets(settings.gpu_arch)
        if not targets[0].startswith("gfx"):
            raise UserError(
                f"ORCH_GPU_ARCH={settings.gpu_arch} names NVIDIA targets, but this build is for "
                "the ROCm platform: set AMD ones (gfx1201, gfx942), or ORCH_PLATFORM=cuda"
            )
        return targets
    return [detect_gpu_arch() or DEFAULT_ARCH]


def gpu_arch(settings: Settings) -> str:
    """The primary GPU target: the first of :func:`gpu_archs`."""
    return gpu_archs(settings)[0]


def offload_flags(targets: Sequence[str]) -> list[str]:
    """clang's `--offload-arch=` once per target: one build, a code object for each."""
    return [f"--offload-arch={target}" for target in targets]
