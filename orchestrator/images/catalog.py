"""The catalog of the project's images: find by inputs, list, label, tag, and tell ours apart.

Every image is keyed by its inputs (rendered Dockerfile + parent image ids): an image
whose inputs already exist is reused as it is, so a build with nothing changed takes
seconds and yields the same id. Labels travel with an image, and so do they with any
image built FROM it; the layers stamp (`LAYERS_LABEL`) tells the two apart.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from orchestrator import engine
from orchestrator.core import interrupts
from orchestrator.core.errors import UserError
from orchestrator.core.events import Caution, Emit, ignore
from orchestrator.core.files import DamagedRecord
from orchestrator.core.settings import Settings
from orchestrator.engine import Client, Image
from orchestrator.images.provenance import (
    INPUTS_LABEL,
    KIND_LABEL,
    LAYERS_LABEL,
    LOCK_LABEL,
    ImageKind,
    ImageRecord,
    container_labels,
)
from orchestrator.platforms import active

#: The fields `images --json` shows of each image.
SUMMARY_FIELDS = [
    "tag",
    "id",
    "platform",
    "build",
    "base_image",
    "base_digest",
    "gromacs_source",
    "gromacs_commit",
    "compiler",
    "compiler_version",
    "llvm_commit",
    "cmake_flags",
    "gpu_arch",
    "simd",
    "created",
]


@dataclass(frozen=True)
class Ref:
    """An image we made or reuse: the tag templates name it by, and its id."""

    tag: str
    id: str


def inputs_key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def layers_digest(image: Image) -> str:
    """One digest of an image's filesystem layers (their diff ids, in order)."""
    return "sha256:" + hashlib.sha256("\n".join(image.layers).encode()).hexdigest()


def is_ours(image: Image) -> bool:
    """True for the image we labeled, false for anything built FROM it.

    Children inherit every label (the raw GROMACS build carries its toolchain's, a
    user's `FROM gromacs:…` carries the lockfile), so the labels alone cannot say whose
    they are; the layers digest stamped with them can: a child adds layers.
    """
    labels = image.labels
    if LAYERS_LABEL not in labels and labels.get(KIND_LABEL) == "base":
        return len(image.layers) == 1  # a `docker import`
    return labels.get(LAYERS_LABEL) == layers_digest(image)


#: Parents that came in a share archive: kept for `rebuild`, never reused by a build.
SHARED_REPO = "gmxbench-shared"


def shared_tag(image_id: str) -> str:
    return f"{SHARED_REPO}:{image_id.removeprefix('sha256:')[:12]}"


def find_by_inputs(client: Client, key: str, kind: ImageKind) -> Image | None:
    """A finished image of this kind made from these inputs, tagged ones first.

    A GROMACS image counts only once verified, i.e. when it carries its lockfile; an
    image that came as a parent in someone's archive never counts (its labels are theirs).
    """
    found = [
        image
        for image in engine.images(client, [f"{INPUTS_LABEL}={key}", f"{KIND_LABEL}={kind}"])
        if is_ours(image)
        and (kind != "gromacs" or LOCK_LABEL in image.labels)
        and not any(t.startswith(f"{SHARED_REPO}:") for t in image.tags)
    ]
    found.sort(key=lambda image: (bool(image.tags), image.created), reverse=True)
    return found[0] if found else None


def keep_tag(client: Client, image: Image, tag: str) -> None:
    """Put `tag` back on a reused image when it was removed."""
    if tag not in image.tags:
        engine.tag(client, image.id, tag)


def base_digest(image: Image) -> str:
    """Registry digest when the base came from a registry, else the local image id."""
    return image.repo_digests[0].split("@", 1)[1] if image.repo_digests else image.id


def new_record(
    settings: Settings, kind: ImageKind, tag: str, image_id: str, key: str, **fields: Any
) -> ImageRecord:
    """The record of an image just built on the active platform from inputs `key`."""
    platform = active(settings)
    return ImageRecord(
        tag=tag, id=image_id, kind=kind, platform=platform.name,
        base_image=platform.build.base_image(settings), inputs=key, created=now_iso(), **fields,
    )  # fmt: skip


def label_and_tag(
    client: Client,
    image_id: str,
    record: ImageRecord,
    tags: list[str],
    emit: Emit,
    extra_labels: dict[str, str] | None = None,
) -> str:
    """Stamp the record's labels on a verified image (a one-line build) and tag it.

    A label-only build keeps the layers, so the layers digest stamped here marks the
    result as the image these labels describe (`is_ours`).
    """
    built = engine.image(client, image_id)
    assert built is not None, image_id
    labels = {**record.labels(), **(extra_labels or {}), LAYERS_LABEL: layers_digest(built)}
    final_id = engine.build(
        client, f"FROM {image_id}\n", what=f"labels of {tags[0]}", labels=labels, emit=emit
    )
    with interrupts.deferred():  # all tags or none
        for tag in tags:
            engine.tag(client, final_id, tag)
    return final_id


class StaleTag(UserError):
    """A tag we would build is taken by an image of other inputs; `tag` names it."""

    def __init__(self, tag: str) -> None:
        super().__init__(
            f"{tag} already exists and was built from other inputs; tags are never overwritten. "
            f"Remove it (`docker rmi {tag}`) to rebuild it, or keep it and change nothing."
        )
        self.tag = tag


def refuse_overwrite(client: Client, tag: str, key: str) -> None:
    existing = engine.image(client, tag)
    if existing is not None and existing.labels.get(INPUTS_LABEL) != key:
        raise StaleTag(tag)


def probe(
    client: Client, image: str, command: list[str], timeout: float = 120, stderr: bool = True
) -> tuple[int, str]:
    """Run a short command in `image` (a labelled, throw-away container), as the invoking
    user with no capabilities: a probe reads an image, and needs nothing more."""
    return engine.run_capture(
        client, image, command, timeout=timeout, labels=container_labels("probe"),
        stderr=stderr, user=engine.container_user(engine.kind(client)),
    )  # fmt: skip


def list_images(
    client: Client, kinds: tuple[str, ...] = ("gromacs",), emit: Emit = ignore
) -> list[ImageRecord]:
    """Records of the project's tagged images, newest first; damaged ones said and left out."""
    records = []
    for image in engine.images(client, [KIND_LABEL]):
        if image.labels.get(KIND_LABEL) not in kinds or not is_ours(image):
            continue
        for tag in image.tags:
            try:
                records.append(ImageRecord.from_labels(tag, image.id, image.labels))
            except DamagedRecord as exc:
                emit(Caution(f"left out {tag}: {exc.message}"))
    return sorted(records, key=lambda r: (r.created or "", r.tag), reverse=True)


def records_json(records: list[ImageRecord]) -> str:
    return json.dumps([r.model_dump(include=set(SUMMARY_FIELDS)) for r in records], indent=2)
