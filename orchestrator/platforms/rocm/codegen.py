"""How the code of a ROCm image is read (the GPU code objects its build kept, by the
stack's own LLVM tools) and how microbenchmarks compile in one (its HIP compiler,
driven as its GROMACS build drove it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from orchestrator.codegen.model import probe_argv
from orchestrator.core.settings import Settings, split_targets
from orchestrator.platforms.base import KEPT, MicrobenchCompiler
from orchestrator.platforms.rocm.stacks import STACKS, of_image, stack
from orchestrator.platforms.rocm.targets import gpu_archs, offload_flags
from orchestrator.platforms.roles import CodegenRole

#: Where a GROMACS build keeps each HIP object's GPU code objects, below `kept`
#: (`_gromacs-steps.j2`).
CODEOBJECTS = "codeobjects"


class RocmCodegen(CodegenRole):
    """The GPU code objects, by llvm-objdump; microbenchmarks by the build's HIP compiler."""

    def codegen_probe(
        self, mode: Literal["codegen", "asm"], prefix: str, variant: str | None,
        name: str | Sequence[str] | None = None, unit: str | None = None,
        arch: str | None = None, release: str | None = None, kept: str = KEPT,
    ) -> list[str]:  # fmt: skip
        """The GPU code objects the build kept, read by the stack's own LLVM tools."""
        tools = of_image(variant).llvm_bin_of_image(release)
        if mode == "asm":
            return probe_argv("asm", f"{kept}/{CODEOBJECTS}", objdump=f"{tools}/llvm-objdump",
                              name=name, unit=unit, arch=arch)  # fmt: skip
        return probe_argv(
            "gpu", f"{kept}/{CODEOBJECTS}", objdump=f"{tools}/llvm-objdump",
            readelf=f"{tools}/llvm-readelf", cxxfilt=f"{tools}/llvm-cxxfilt",
        )  # fmt: skip

    def microbench_compiler(
        self, settings: Settings, labels: Mapping[str, str]
    ) -> MicrobenchCompiler:
        """The build's HIP compiler, driven as its GROMACS build drove it, for each of its
        GPU targets (the image's `gpu_arch` label: `gfx1201,gfx942`)."""
        used = STACKS.get(labels.get("rocm_stack") or "", stack(settings))
        targets = split_targets(labels.get("gpu_arch")) or gpu_archs(settings)
        return MicrobenchCompiler(
            api="hip",
            compiler=labels.get("compiler") or used.stable_hip(settings),
            flags=[
                "-x",
                "hip",
                f"--rocm-path={used.rocm_path(settings)}",
                *offload_flags(targets),
                f"--rocm-device-lib-path={used.device_libs(settings)}",
                "-O3",
            ],
            libs=list(used.microbench_libs),
            source="bandwidth_gpu.cu",
        )
