"""Volumes: the state that outlives a build (LLVM's tree), listed and made by label."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import docker.errors

from orchestrator.engine.client import Client


@dataclass(frozen=True)
class Volume:
    """A volume as plain values; `size` in bytes when asked for and the engine knows it."""

    name: str
    labels: dict[str, str]
    created: str
    size: int | None = None


def volumes(client: Client, label: str, *, sizes: bool = False) -> list[Volume]:
    """Volumes carrying `label` (`key` or `key=value`), by name. With `sizes`, each one's
    size from the engine's disk usage (`docker system df -v`), which walks the files of
    every volume: 1.3 s for one 186,000-file LLVM workspace, +0.6 s per 200,000 files."""
    found = client.volumes.list(filters={"label": label})
    usage: dict[str, Any] = {}
    if sizes and found:
        usage = {v["Name"]: v.get("UsageData") or {} for v in client.df().get("Volumes") or []}
    out = []
    for v in sorted(found, key=lambda v: str(v.name)):
        size = usage.get(v.name, {}).get("Size")
        out.append(Volume(
            str(v.name), dict(v.attrs.get("Labels") or {}), str(v.attrs.get("CreatedAt", "")),
            size if isinstance(size, int) and size >= 0 else None,  # -1: not computed
        ))  # fmt: skip
    return out


def ensure_volume(client: Client, name: str, labels: Mapping[str, str]) -> bool:
    """Create volume `name` with `labels` unless it exists; True when it was created."""
    try:
        client.volumes.get(name)
        return False
    except docker.errors.NotFound:
        client.volumes.create(name, labels=dict(labels))
        return True
