"""What a kernel image is once built, shared by ours (`images.kernels`) and a user's own
(`images.user_kernels`) without either importing the other."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files

from orchestrator.platforms.base import KernelCompiler

REPO = "gmxbench-kernels"
#: The programs and headers the kernel images copy (`orchestrator/runs/kernels/`).
SOURCES = files("orchestrator.runs") / "kernels"


@dataclass(frozen=True)
class KernelImage:
    """A kernel image ready to run: its tag and id, and the build it measures."""

    tag: str
    id: str
    build: str
    labels: dict[str, str]
    compiler: KernelCompiler
    #: A user's program: the CPU fingerprint's symbol pattern (its kernels' names).
    pattern: str | None = None
