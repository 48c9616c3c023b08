"""The engine's images as plain values: look up, list, tag, untag, pull, import."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors

from orchestrator.core.errors import UsageError, UserError
from orchestrator.engine.client import Client
from orchestrator.engine.podman import familiar


@dataclass(frozen=True)
class Image:
    """What the engine knows of one image, as plain values."""

    id: str
    tags: tuple[str, ...]
    labels: dict[str, str]
    layers: tuple[str, ...]
    created: str
    repo_digests: tuple[str, ...]

    @classmethod
    def _of(cls, image: Any) -> Image:
        attrs = image.attrs
        return cls(
            id=str(image.id),
            tags=tuple(familiar(t) for t in image.tags),
            labels=dict(image.labels or {}),
            layers=tuple(attrs.get("RootFS", {}).get("Layers", [])),
            created=str(attrs.get("Created", "")),
            repo_digests=tuple(attrs.get("RepoDigests") or ()),
        )


def image(client: Client, ref: str) -> Image | None:
    """The image `ref` (tag or id) names, or None when the engine has none."""
    try:
        return Image._of(client.images.get(ref))
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:  # e.g. an invalid reference format
        raise UserError(f"{ref!r} is not a usable image reference: {exc.explanation}.") from None


def images(client: Client, labels: list[str], name: str | None = None) -> list[Image]:
    """Images carrying every `key` or `key=value` label in `labels` (and named `name`).

    The engine filters by the first label, this function by the others: Podman 4.3
    answers nothing at all when asked for two labels at once.
    """
    found = client.images.list(name=name, filters={"label": labels[:1]} if labels else None)
    return [
        image
        for image in map(Image._of, found)
        if all(_carries(image.labels, wanted) for wanted in labels[1:])
    ]


def _carries(labels: Mapping[str, str], wanted: str) -> bool:
    key, sep, value = wanted.partition("=")
    return key in labels and (not sep or labels[key] == value)


def tag(client: Client, image_id: str, ref: str) -> None:
    """Point `ref` (`repo:tag`) at an image; a colon before the last `/` is a port."""
    repo, sep, version = ref.rpartition(":")
    if not sep or "/" in version:
        repo, version = ref, "latest"
    try:
        client.images.get(image_id).tag(repo, tag=version)
    except docker.errors.APIError as exc:
        raise UsageError(f"{ref!r} is not a registry/repository: {exc.explanation}.") from None


def remove_image(client: Client, ref: str, *, force: bool = False, noprune: bool = False) -> None:
    """Remove `ref`; an image with other tags only loses this one."""
    client.images.remove(ref, force=force, noprune=noprune)


def untag(client: Client, ref: str) -> str | None:
    """`remove_image(ref)`: None once `ref` is gone (the image too, when it was its last
    tag and no image is built on it), else the engine's reason (a container uses it).
    For `prune`, which says why an image stays."""
    try:
        remove_image(client, ref)
    except docker.errors.NotFound:
        return None
    except docker.errors.APIError as exc:
        if image(client, ref) is not None:
            return str(exc.explanation or exc).split("\n")[0][:200]
    return None


def pull(client: Client, ref: str) -> Image:
    try:
        return Image._of(client.images.pull(ref))
    except docker.errors.APIError as exc:
        raise UserError(str(exc.explanation or exc).split("\n")[0][:160]) from None


def import_tarball(client: Client, tarball: Path, ref: str, changes: list[str]) -> Image | None:
    """`docker import` a root filesystem tarball as `ref` with Dockerfile `changes`.

    Imported untagged, then tagged by the id the engine reports: Podman ignores an
    import's `tag` (it would name the image `:latest`).
    """
    answer = client.api.import_image_from_file(str(tarball), changes=changes)
    ids = [
        str(json.loads(text).get("status", ""))
        for text in str(answer).splitlines()
        if text.strip().startswith("{")
    ]
    image_id = next((i for i in reversed(ids) if i.startswith("sha256:")), None)
    if image_id is None:
        return None
    tag(client, image_id, ref)
    return image(client, ref)
