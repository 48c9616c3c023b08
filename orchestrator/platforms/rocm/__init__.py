"""The ROCm platform: HIP GROMACS for AMD GPU targets, kernels traced by rocprofv3.

Two stacks build it (`ORCH_ROCM_STACK`, `stacks.py`): AMD's ROCm 7.12 as TheRock ships
it (the default: installed below /opt/rocm/core-7.12 from AMD's repository or a release
tarball, amdclang++, rocprofv3; `therock.py`) or Debian's own ROCm packages (hipcc over
Debian's clang, HIP, rocPRIM, rocFFT; no profiler), which any machine that reaches
Debian's mirror can build, CI included. Its roles: `build.py` (the builder, the stable
compiler, the CMake flags), `run.py` (devices, groups, preflight), `profilers.py`
(rocprofv3, rocprof-compute, rocprof-sys) and `codegen.py` (code objects, kernels);
`targets.py` knows the GPU targets.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.platforms.rocm.build import RocmBuild
from orchestrator.platforms.rocm.codegen import RocmCodegen
from orchestrator.platforms.rocm.profilers import RocmProfiler
from orchestrator.platforms.rocm.run import RocmRun
from orchestrator.platforms.roles import Platform


class RocmPlatform(Platform):
    """The ROCm platform with its roles; `dev_root` and `sys_root` are a test's trees."""

    build: RocmBuild
    run: RocmRun
    profiler: RocmProfiler
    codegen: RocmCodegen

    def __init__(self, dev_root: Path = Path("/dev"), sys_root: Path = Path("/")) -> None:
        super().__init__(
            "rocm", RocmBuild(), RocmRun(dev_root, sys_root), RocmProfiler(), RocmCodegen()
        )
