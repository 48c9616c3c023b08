"""Image provenance: the labels every image carries and the lockfile that rebuilds it.

Labels are the truth that travels with an image (`docker save`, a registry); the
lockfile under `results/images/` adds what a rebuild needs (template and context).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from orchestrator.core.files import DamagedRecord, damage, read_model, write_atomic
from orchestrator.core.idents import LlvmCommit
from orchestrator.core.settings import split_targets
from orchestrator.platforms.base import CompileCacheStats
from orchestrator.store.layout import lockfile_path

#: Prefix of every label this project puts on images and containers.
LABEL_PREFIX = "gmxbench."
ImageKind = Literal["base", "builder", "toolchain", "gromacs", "kernels"]


def label(name: str) -> str:
    """The full key of one of our labels (`kind` → `gmxbench.kind`)."""
    return LABEL_PREFIX + name


KIND_LABEL, INPUTS_LABEL = label("kind"), label("inputs")
#: The lockfile, inside the image it describes.
LOCK_LABEL = label("lockfile")
#: Digest of the image's own layers, stamped with its labels (see `catalog.is_ours`).
LAYERS_LABEL = label("layers")
#: A toolchain image's `Compiler`, as JSON.
TOOLCHAIN_LABEL = label("toolchain_json")
#: On containers: what the container is for (`run`, `probe`), which run it is, and the
#: process that started it (JSON of `runs.liveness.Owner`), so `runs clean` can tell a
#: container whose process died from one whose process is still waiting on it.
ROLE_LABEL, RUN_LABEL, OWNER_LABEL = label("role"), label("run"), label("owner")


def container_labels(
    role: str, run_id: str | None = None, owner: str | None = None
) -> dict[str, str]:
    """Labels of a container we start, so none can outlive us unnoticed."""
    labels = {ROLE_LABEL: role, **({RUN_LABEL: run_id} if run_id else {})}
    return {**labels, **({OWNER_LABEL: owner} if owner else {})}


class ImageRecord(BaseModel):
    """What `images --json` prints: one row per tagged project image."""

    tag: str
    id: str
    kind: ImageKind = "gromacs"
    platform: str | None = None
    build: str | None = None
    base_image: str | None = None
    base_digest: str | None = None
    rocm_version: str | None = None
    rocm_stack: str | None = None
    gromacs_source: str | None = None
    gromacs_ref: str | None = None
    gromacs_commit: str | None = None
    gmx_version: str | None = None
    compiler: str | None = None
    compiler_version: str | None = None
    toolchain: str | None = None
    llvm_commit: LlvmCommit | None = None
    llvm_dirty: bool = False
    #: The compiler's LLVM was imported from a tree built outside the tool (its path and
    #: when, and where the commit was read): `rebuild` cannot make it again.
    imported_from: str | None = None
    imported_at: str | None = None
    llvm_commit_from: str | None = None
    cmake_flags: list[str] = Field(default_factory=list)
    #: The GPU targets the build holds code for, comma-joined, primary first
    #: (`gfx1201,gfx942`); the label `gmxbench.gpu_arch`.
    gpu_arch: str | None = None
    simd: str | None = None
    inputs: str | None = None
    created: str | None = None
    #: Where a native build is installed on its host (no image: `images.native`).
    native_prefix: str | None = None

    @property
    def gpu_archs(self) -> list[str]:
        """The GPU targets as a list (empty for a CPU build)."""
        return split_targets(self.gpu_arch)

    def labels(self) -> dict[str, str]:
        """OCI labels plus ours; JSON-encode lists, skip unknowns (labels are strings)."""
        out: dict[str, str] = {}
        for key, value in self.model_dump(exclude={"tag", "id"}).items():
            if value is None or value == []:
                continue
            if isinstance(value, list):
                out[label(key)] = json.dumps(value)
            elif isinstance(value, bool):
                out[label(key)] = "true" if value else "false"
            else:
                out[label(key)] = str(value)
        if self.created:
            out["org.opencontainers.image.created"] = self.created
        if self.gromacs_commit:
            out["org.opencontainers.image.revision"] = self.gromacs_commit
        if self.gromacs_source:
            out["org.opencontainers.image.source"] = self.gromacs_source
        if self.gmx_version:
            out["org.opencontainers.image.version"] = self.gmx_version
        out["org.opencontainers.image.title"] = f"gmxbench {self.kind} {self.build or ''}".strip()
        return out

    @classmethod
    def from_labels(cls, tag: str, image_id: str, labels: dict[str, str]) -> ImageRecord:
        data: dict[str, Any] = {"tag": tag, "id": image_id}
        try:
            for name, field in cls.model_fields.items():
                raw = labels.get(label(name))
                if raw is None or name in ("tag", "id"):
                    continue
                if field.annotation == list[str]:
                    data[name] = json.loads(raw)
                elif field.annotation is bool:
                    data[name] = raw == "true"
                else:
                    data[name] = raw
            return cls.model_validate(data)
        except ValueError as exc:  # JSON or validation
            reason = damage(exc) if isinstance(exc, ValidationError) else str(exc)
            raise DamagedRecord(
                f"The labels of image {tag} ({image_id[:19]}) are damaged: {reason}. "
                f"Remove it (`docker rmi {tag}`) and build it again, or `nox -s rebuild -- "
                f"{tag}` rebuilds it from its lockfile."
            ) from None


class Lockfile(BaseModel):
    """Everything needed to rebuild an image: its record, template, context and packages.

    `dockerfile` is the exact text that was built (templates change over time) and
    `parents` pins each image it names in `FROM` to the id it had, so a rebuild months
    later starts from the same builder and compiler, not whatever the tags point to now.
    """

    schema_version: int = 2
    record: ImageRecord
    template: str
    context: dict[str, Any]
    dockerfile_sha256: str
    dockerfile: str | None = None
    parents: dict[str, str] = Field(default_factory=dict)
    builder: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    gmx_version_info: dict[str, str] = Field(default_factory=dict)
    registry_digest: str | None = None
    #: How long the build took and what the compile cache did (None before schema 3 data).
    build_seconds: float | None = None
    compile_cache: CompileCacheStats | None = None
    #: The codegen taken at build time (`<tag>.codegen.json` beside this file).
    codegen_functions: int | None = None
    codegen_seconds: float | None = None
    #: The AMDGPU code-object versions of its code objects, from that fingerprint (one,
    #: normally; None for a CPU build, without a fingerprint, or before it was recorded).
    code_object_versions: list[int] | None = None

    def embedded(self) -> dict[str, str]:
        """The label that carries this lockfile inside its image (which cannot know its id)."""
        return {LOCK_LABEL: self.model_dump_json(exclude={"record": {"id"}})}


def save_lockfile(results_dir: Path, lock: Lockfile) -> Path:
    path = lockfile_path(results_dir, lock.record.tag)
    return write_atomic(path, lock.model_dump_json(indent=2) + "\n")


LOCKFILE_FIX = (
    "Delete it: an image built here carries its lockfile in a label, and the next "
    "`build` or `rebuild` of that tag writes the file back; without the image, restore "
    "the file from a copy or a share archive."
)


def load_lockfile(path: Path) -> Lockfile:
    return read_model(path, Lockfile, "a lockfile", LOCKFILE_FIX)


def parse_lockfile(
    raw: str | bytes, where: str, image_id: str | None = None, hint: str = ""
) -> Lockfile:
    """A lockfile from a file, an archive member or a label; a clear error if it is none.

    A label cannot know its own image's id, so the caller supplies it.
    """
    try:
        data = json.loads(raw)
        if image_id is not None:
            data["record"]["id"] = image_id
        return Lockfile.model_validate(data)
    except (ValueError, TypeError, KeyError) as exc:  # ValidationError is a ValueError
        reason = damage(exc) if isinstance(exc, ValidationError) else str(exc).splitlines()[0]
        raise DamagedRecord(
            f"{where} is damaged or not a lockfile of this tool ({reason[:200]}). {hint}".strip()
        ) from None
