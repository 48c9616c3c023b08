"""What a kernel image is once built, shared by ours (`images.kernels`) and a user's own
(`images.user_kernels`) without either importing the other."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from orchestrator.engine import Image
from orchestrator.images.catalog import now_iso
from orchestrator.images.provenance import ImageRecord
from orchestrator.platforms.base import KernelCompiler

REPO = "gmxbench-kernels"
#: The programs and headers the kernel images copy (`orchestrator/payloads/kernels/`).
SOURCES = files("orchestrator.payloads") / "kernels"


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


def file_digests(context_files: Mapping[str, bytes | Path]) -> list[str]:
    """`name=<sha256>` of each file a kernel image copies, sorted: part of its inputs key."""
    found = []
    for name, data in sorted(context_files.items()):
        content = data.read_bytes() if isinstance(data, Path) else data
        found.append(f"{name}={hashlib.sha256(content).hexdigest()}")
    return found


def kernel_record(tag: str, image_id: str, parent: Image, build: str, key: str) -> ImageRecord:
    """A kernel image's record: its parent's (the build it measures), as a kernel image."""
    return ImageRecord.from_labels(tag, image_id, parent.labels).model_copy(
        update={"kind": "kernels", "build": build, "inputs": key, "created": now_iso()}
    )
