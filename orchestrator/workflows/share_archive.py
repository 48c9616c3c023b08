"""Reading an untrusted `docker save` tar: bounded, one meaning per name, re-packed.

The engine reads a tar its own way (a later `manifest.json` wins, `RepoTags` tag,
`repositories` tags too), so `share load` never hands it the archive's tar: it reads
every member once, refuses any name that could mean two things, and streams a new tar
made only of what it checked (configs, layers, and a manifest of its own with no tags).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import re
import shutil
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from orchestrator import engine
from orchestrator.core.errors import UserError
from orchestrator.engine import Client

#: What a temporary folder of `share` is called: `.gmxbench-share-<pid>-<random>`.
TEMP_PREFIX = ".gmxbench-share-"
#: A folder of no known process is stale once untouched this long (a crash before pids).
STALE_SECONDS = 6 * 3600
IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
BLOCK = tarfile.BLOCKSIZE
CHUNK = 1 << 20


def temp_prefix() -> str:
    return f"{TEMP_PREFIX}{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(folder: Path) -> list[Path]:
    """Remove what a killed `share` left in `folder`: its temporary folders whose process is
    gone, and the `.tmp` of a sidecar. Returns what it removed."""
    removed = []
    for stale in [*folder.glob(f"{TEMP_PREFIX}*"), *folder.glob(".*.gmxbench.tar.gz.*.tmp")]:
        pid = stale.name.removeprefix(TEMP_PREFIX).split("-", 1)[0]
        try:
            if pid.isdigit() and stale.name.startswith(TEMP_PREFIX):
                if _alive(int(pid)):
                    continue
            elif time.time() - stale.stat().st_mtime < STALE_SECONDS:
                continue
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
            removed.append(stale)
        except OSError:
            pass  # another user's, or gone meanwhile: left as it is
    return removed


def canonical(name: str, where: str) -> str:
    """`name` if it is the one spelling of a relative path; else a `UserError`.

    `./manifest.json`, `a//b`, `a/../b` and `/abs` all name something another reader may
    resolve differently, so none is accepted."""
    if (
        not name
        or name.startswith("/")
        or posixpath.normpath(name) != name
        or (name == ".." or name.startswith("../"))
    ):
        raise UserError(f"{where} has a member named {name!r}, which is not a plain path.")
    return name


def bounded(size: int, cap: int, what: str, where: str, setting: str) -> None:
    """Refuse `size` bytes over `cap`, before a byte of it is read."""
    if size > cap:
        raise UserError(
            f"{where}: {what} is {size} bytes, more than the {cap} that {setting} allows; "
            "nothing of it was read. Raise the setting only for an archive you trust."
        )


@dataclass
class SavedImages:
    """The checked contents of a `docker save` tar: each image's config and layers."""

    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → config JSON
    raw_configs: dict[str, Path] = field(default_factory=dict)  # id → its file
    layers: dict[str, list[Path]] = field(default_factory=dict)  # id → its layer files
    repo_tags: list[str] = field(default_factory=list)


def read_saved(tar_path: Path, into: Path, record_cap: int, where: str) -> SavedImages:
    """Unpack a `docker save` tar into numbered files under `into`, names checked."""
    files: dict[str, Path] = {}
    links: dict[str, str] = {}
    seen: set[str] = set()
    with tarfile.open(tar_path, "r|") as tar:
        for number, info in enumerate(tar):
            name = canonical(info.name, where)
            if name in seen:
                raise UserError(f"{where} holds {name!r} twice; the engine would read the last.")
            seen.add(name)
            if info.isdir():
                continue
            if info.issym() or info.islnk():
                base = posixpath.dirname(name) if info.issym() else ""
                target = posixpath.normpath(posixpath.join(base, info.linkname))
                if target.startswith(("/", "../")) or target == "..":
                    raise UserError(f"{where}: {name!r} links outside the archive.")
                links[name] = target
                continue
            if not info.isfile():
                raise UserError(f"{where}: {name!r} is not a file, a folder or a link.")
            dest = into / str(number)
            src = tar.extractfile(info)
            assert src is not None  # a regular file
            with dest.open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
            files[name] = dest

    def resolve(name: str) -> Path:
        for _ in range(8):
            if name in files:
                return files[name]
            if name not in links:
                break
            name = links[name]
        raise UserError(f"{where} names {name!r}, which it does not hold as a file.")

    def record(name: str) -> Any:
        path = resolve(name)
        bounded(path.stat().st_size, record_cap, name, where, "ORCH_SHARE__MAX_RECORD_BYTES")
        return json.loads(path.read_bytes())

    saved = SavedImages()
    try:
        entries = record("manifest.json")
        for entry in entries:
            config = resolve(entry["Config"])
            image_id = "sha256:" + hashlib.sha256(config.read_bytes()).hexdigest()
            if image_id in saved.configs:
                raise UserError(f"{where} lists the image {image_id[:19]} twice.")
            saved.configs[image_id] = record(entry["Config"])
            saved.raw_configs[image_id] = config
            saved.layers[image_id] = [resolve(str(layer)) for layer in entry["Layers"]]
            saved.repo_tags += [str(t) for t in entry.get("RepoTags") or []]
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{where}: image.tar is not a `docker save` archive ({exc}).") from None
    return saved


def _member(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    return info.tobuf(format=tarfile.PAX_FORMAT)


def _file(name: str, src: IO[bytes], size: int) -> Iterator[bytes]:
    yield _member(name, size)
    while chunk := src.read(CHUNK):
        yield chunk
    yield b"\0" * (-size % BLOCK)


def repack(saved: SavedImages, ids: list[str]) -> Iterator[bytes]:
    """A `docker save` tar of exactly `ids`, from checked files only, that tags nothing."""
    manifest: list[dict[str, Any]] = []
    written: dict[Path, str] = {}
    for image_id in ids:
        hexid = image_id.removeprefix("sha256:")
        layers = []
        for path in saved.layers[image_id]:
            written.setdefault(path, f"{len(written)}/layer.tar")
            layers.append(written[path])
        manifest.append({"Config": f"{hexid}.json", "RepoTags": None, "Layers": layers})
    for image_id in ids:
        path = saved.raw_configs[image_id]
        with path.open("rb") as src:
            yield from _file(f"{image_id.removeprefix('sha256:')}.json", src, path.stat().st_size)
    for path, name in written.items():
        with path.open("rb") as src:
            yield from _file(name, src, path.stat().st_size)
    data = json.dumps(manifest).encode()
    yield _member("manifest.json", len(data)) + data + b"\0" * (-len(data) % BLOCK)
    yield b"\0" * (2 * BLOCK)


def load_exactly(client: Client, saved: SavedImages, ids: list[str], where: str) -> None:
    """Load the re-packed images; any other change to the engine's tags or images is undone
    and said."""
    before, present = engine.tags(client), {i for i in ids if engine.image(client, i)}
    loaded: set[str] = set()
    try:
        loaded = engine.load(client, repack(saved, ids), where)
    finally:
        after = engine.tags(client)
        changed = sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
        if changed or loaded != set(ids):
            undo(client, before, changed, [*ids, *sorted(loaded - set(ids) - present)], present)
    if changed or loaded != set(ids):
        raise UserError(
            f"Loading {where} changed the engine's tags {changed} or gave images "
            f"{sorted(loaded)} instead of {ids}; what could be undone was undone. Do not use "
            "this archive; tell whoever made it."
        )


def undo(
    client: Client, before: dict[str, str], changed: list[str], new: list[str], present: set[str]
) -> None:
    """Put moved tags back, drop new ones, then remove the images the load brought."""
    for ref in changed:
        with contextlib.suppress(UserError):  # gone meanwhile: nothing to put back
            if ref in before:
                engine.tag(client, before[ref], ref)
            else:
                engine.untag(client, ref)
    for image_id in new:  # the image before its parents; a tag it named was undone above
        if image_id not in present and IMAGE_ID.fullmatch(image_id):
            with contextlib.suppress(UserError):
                engine.untag(client, image_id)
