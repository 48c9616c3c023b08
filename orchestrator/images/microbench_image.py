"""What a microbenchmark image is once built, shared by ours (`images.microbench`) and a
user's own kernel's (`images.user_kernels`) without either importing the other."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from orchestrator.engine import Image
from orchestrator.images.catalog import now_iso
from orchestrator.images.provenance import ImageKind, ImageRecord
from orchestrator.platforms.base import MicrobenchCompiler

#: The repository of microbenchmark images' tags, and their `gmxbench.kind` label: both
#: on disk in users' engines since the first microbenchmark image, so they stay.
REPO = "gmxbench-kernels"
IMAGE_KIND: ImageKind = "kernels"
#: Where the images keep the programs, headers and binaries (the templates say it too).
MICROBENCH_DIR = "/opt/gmxbench/kernels"
#: The programs and headers the microbenchmark images copy (`payloads/microbench/`).
SOURCES = files("orchestrator.payloads") / "microbench"


@dataclass(frozen=True)
class MicrobenchImage:
    """A microbenchmark image ready to run: its tag and id, and the build it measures."""

    tag: str
    id: str
    build: str
    labels: dict[str, str]
    compiler: MicrobenchCompiler
    #: A user's program: the CPU fingerprint's symbol pattern (its kernels' names).
    pattern: str | None = None


def file_digests(context_files: Mapping[str, bytes | Path]) -> list[str]:
    """`name=<sha256>` of each file a microbenchmark image copies, sorted: its inputs key's."""
    found = []
    for name, data in sorted(context_files.items()):
        content = data.read_bytes() if isinstance(data, Path) else data
        found.append(f"{name}={hashlib.sha256(content).hexdigest()}")
    return found


def microbench_record(tag: str, image_id: str, parent: Image, build: str, key: str) -> ImageRecord:
    """A microbenchmark image's record: its parent's (the build it measures), as one."""
    return ImageRecord.from_labels(tag, image_id, parent.labels).model_copy(
        update={"kind": IMAGE_KIND, "build": build, "inputs": key, "created": now_iso()}
    )
