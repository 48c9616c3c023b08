"""How the code of a CUDA image is read: the objects with device code its build kept,
by the toolkit's cuobjdump. Microbenchmarks are not built for CUDA yet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from orchestrator.codegen.model import probe_argv
from orchestrator.core.errors import UserError
from orchestrator.core.settings import Settings
from orchestrator.platforms.base import KEPT, MicrobenchCompiler
from orchestrator.platforms.roles import CodegenRole

#: Where a GROMACS build keeps each CUDA object with device code, below `kept`
#: (`_gromacs-steps.j2`).
CODEOBJECTS = "codeobjects"
#: The toolkit's tools by name: /usr/bin in the image, the toolkit's bin folder on PATH
#: on a native host (the probe finds them as the shell would).
CUOBJDUMP, CXXFILT = "cuobjdump", "c++filt"


class CudaCodegen(CodegenRole):
    """The kept objects' SASS by cuobjdump; no microbenchmarks yet."""

    has_microbenchmarks = False

    def codegen_probe(
        self, mode: Literal["codegen", "asm"], prefix: str, variant: str | None,
        name: str | Sequence[str] | None = None, unit: str | None = None,
        arch: str | None = None, release: str | None = None, kept: str = KEPT,
    ) -> list[str]:  # fmt: skip
        """The probe's `sass` mode over the kept objects (`asm`: one function's SASS)."""
        where = f"{kept}/{CODEOBJECTS}"
        if mode == "asm":
            return probe_argv("asm", where, cuobjdump=CUOBJDUMP, name=name, unit=unit,
                              arch=arch)  # fmt: skip
        return probe_argv("sass", where, cuobjdump=CUOBJDUMP, cxxfilt=CXXFILT)

    def microbench_compiler(
        self, settings: Settings, labels: Mapping[str, str]
    ) -> MicrobenchCompiler:
        raise UserError(
            "Microbenchmarks are not yet built for the CUDA platform: run GROMACS systems "
            "on it, or microbenchmarks on a ROCm or CPU build (ORCH_PLATFORM=rocm or cpu)."
        )
