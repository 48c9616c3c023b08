"""The CUDA platform: CUDA GROMACS for NVIDIA GPU targets (sm_90 by default).

Stable builds use nvcc; dev builds use the clang of the LLVM under test as the CUDA
compiler (NVPTX, then the toolkit's ptxas). The builder is Debian sid with its
nvidia-cuda-toolkit (non-free), so images build on any machine that reaches Debian's
mirror, without a GPU. Its roles: `build.py` (the builder, the stable compiler, the
CMake flags), `run.py` (GPU passthrough by device request or CDI, preflight, nvidia-smi),
`profilers.py` and `codegen.py` (cuobjdump over the kept objects); `targets.py` knows
the sm_ targets.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.platforms.cuda.build import CudaBuild
from orchestrator.platforms.cuda.codegen import CudaCodegen
from orchestrator.platforms.cuda.profilers import CudaProfiler
from orchestrator.platforms.cuda.run import CudaRun, Smi, host_smi
from orchestrator.platforms.roles import Platform


class CudaPlatform(Platform):
    """The CUDA platform with its roles; `dev_root`, `sys_root` and `smi` are a test's."""

    build: CudaBuild
    run: CudaRun
    profiler: CudaProfiler
    codegen: CudaCodegen

    def __init__(
        self, dev_root: Path = Path("/dev"), sys_root: Path = Path("/"), smi: Smi = host_smi
    ) -> None:
        super().__init__(
            "cuda", CudaBuild(), CudaRun(dev_root, sys_root, smi), CudaProfiler(), CudaCodegen()
        )
