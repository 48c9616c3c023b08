"""How the code of a CUDA image is read: the objects with device code its build kept,
by the toolkit's cuobjdump. Microbenchmarks are not built for CUDA yet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from orchestrator.codegen.model import probe_source
from orchestrator.core.errors import UserError
from orchestrator.core.settings import Settings
from orchestrator.platforms.base import MicrobenchCompiler
from orchestrator.platforms.roles import CodegenRole

#: Where a GROMACS build keeps each CUDA object with device code (`_gromacs-build.j2`).
CODEOBJECTS = "/opt/gmxbench/codeobjects"
#: Where the toolkit's tools are in the builder (Debian: on PATH in /usr/bin).
CUDA_BIN = "/usr/bin"


def sass_argv(cuda_bin: str = CUDA_BIN) -> list[str]:
    """The probe's `sass` mode over the kept objects, read by cuobjdump."""
    return ["python3", "-c", probe_source(), "sass", "--cuobjdump", f"{cuda_bin}/cuobjdump",
            "--cxxfilt", "c++filt", CODEOBJECTS]  # fmt: skip


class CudaCodegen(CodegenRole):
    """The kept objects' SASS by cuobjdump; no microbenchmarks yet."""

    has_microbenchmarks = False

    def codegen_probe(
        self, mode: Literal["codegen", "asm"], prefix: str, variant: str | None,
        name: str | Sequence[str] | None = None, unit: str | None = None,
        arch: str | None = None, release: str | None = None,
    ) -> list[str]:  # fmt: skip
        return sass_argv()

    def microbench_compiler(
        self, settings: Settings, labels: Mapping[str, str]
    ) -> MicrobenchCompiler:
        raise UserError(
            "Microbenchmarks are not yet built for the CUDA platform: run GROMACS systems "
            "on it, or microbenchmarks on a ROCm or CPU build (ORCH_PLATFORM=rocm or cpu)."
        )
