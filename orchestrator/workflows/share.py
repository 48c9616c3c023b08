"""Share GROMACS images without a shared registry: an archive file, or a push.

`save` writes one gzip'd tar: a manifest of sha256 sums, the lockfile and a `docker
save` of the image *by id* (plus its pinned parents), signed with an SSH key when one is
set. An archive is someone else's: `load` refuses it unless an allowed key signed it (or
the user says `--trust`), checks every size before reading, every checksum, the image's
own labels against the lockfile, its name and its parents, then hands the engine a tar
it re-packed from what it checked, and makes sure no tag but its own moved.
`push` records where the image went (`registry_digest`), the reference to cite.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import re
import shutil
import tarfile
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from orchestrator import engine
from orchestrator.core import interrupts
from orchestrator.core.errors import UsageError, UserError, no_space, space_for
from orchestrator.core.events import Caution, Emit, Message, ignore
from orchestrator.core.files import DamagedRecord, write_atomic
from orchestrator.core.settings import Settings, ShareSettings
from orchestrator.engine import Client, Image
from orchestrator.images import provenance
from orchestrator.images.catalog import is_ours, shared_tag
from orchestrator.images.gromacs import REPO, gromacs_ref, lockfile_of
from orchestrator.images.provenance import (
    KIND_LABEL,
    LOCK_LABEL,
    ImageRecord,
    Lockfile,
    label,
    parse_lockfile,
)
from orchestrator.store.layout import lockfile_path
from orchestrator.workflows import share_sign
from orchestrator.workflows.share_archive import (
    SavedImages,
    bounded,
    load_exactly,
    read_saved,
    sweep,
    temp_prefix,
)

MANIFEST, LOCK_MEMBER, IMAGE_MEMBER = "gmxbench-share.json", "lockfile.json", "image.tar"
MEMBERS = {LOCK_MEMBER, IMAGE_MEMBER}
SUFFIX = ".gmxbench.tar.gz"
#: Dev image (1.4 GB tar): level 1 gives 699 MB in 16 s, level 6 659 MB in 40 s.
COMPRESSLEVEL = 1
CHUNK = 1 << 20
NOTHING = "Nothing was loaded or tagged"
PUSH_HINT = (
    "The engine, not this shell, connects to the registry: check that it runs at that "
    "address; a plain-HTTP registry outside 127.0.0.0/8 must be in `insecure-registries` of "
    "/etc/docker/daemon.json, and one that wants credentials needs `docker login <registry>`."
)


class Member(BaseModel):
    sha256: str
    size: int


class ShareManifest(BaseModel):
    """`gmxbench-share.json`, the archive's first member: what the others must hash to."""

    format: Literal[1] = 1
    tag: str
    image_id: str
    parent_ids: list[str] = Field(default_factory=list)
    members: dict[str, Member]


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _copy_hashing(chunks: Iterable[bytes], dest: Path) -> Member:
    digest, size = hashlib.sha256(), 0
    with dest.open("wb") as out:
        for chunk in chunks:
            out.write(chunk)
            digest.update(chunk)
            size += len(chunk)
    return Member(sha256=digest.hexdigest(), size=size)


def _chunks(src: IO[bytes]) -> Iterable[bytes]:
    return iter(lambda: src.read(CHUNK), b"")


def _comparable(lock: Lockfile) -> dict[str, Any]:
    """A lockfile as the label has it: no image id, no digest (`push` adds it later)."""
    return lock.model_dump(exclude={"record": {"id"}, "registry_digest": True})


def _with_local_digest(settings: Settings, lock: Lockfile) -> Lockfile:
    """Keep a digest `push` recorded for this very image id in this results dir."""
    path = lockfile_path(settings.results_dir, lock.record.tag)
    with contextlib.suppress(DamagedRecord):  # none here yet, or unreadable: nothing to keep
        local = provenance.load_lockfile(path)
        if local.record.id == lock.record.id and not lock.registry_digest:
            lock.registry_digest = local.registry_digest
    return lock


def _project_image(client: Client, settings: Settings, tag: str) -> tuple[Image, Lockfile]:
    """A verified GROMACS image (a bare build name means `gromacs:<build>`) and its lockfile."""
    ref = gromacs_ref(tag)
    image = engine.image(client, ref)
    labels = image.labels if image is not None else {}
    if image is None or labels.get(KIND_LABEL) != "gromacs" or LOCK_LABEL not in labels:
        what = "is not an image in this engine" if image is None else "has no gmxbench.lockfile"
        raise UserError(
            f"{ref} {what}; only verified gmxbench GROMACS images can be shared. "
            "`nox -s images` lists them."
        )
    if not is_ours(image):
        raise UserError(
            f"{ref} was built FROM a gmxbench GROMACS image and only inherited its labels; "
            "share the image it was built from, or make yours with `nox -s build`."
        )
    lock = lockfile_of(image)
    assert lock is not None  # it has the label, checked above
    return image, _with_local_digest(settings, lock)


#: A build name as a tag takes it: what `gromacs:<build>` may be and nothing else.
BUILD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def _check_images(saved: SavedImages, manifest: ShareManifest, lock: Lockfile, where: Path) -> None:
    """The saved images are exactly the ones the manifest and lockfile describe, untagged,
    named only as the tool names its own, and parents only the lockfile's."""
    problems, configs = [], saved.configs
    if saved.repo_tags:
        problems.append(f"image.tar would tag {', '.join(saved.repo_tags)}")
    wanted = {manifest.image_id, *manifest.parent_ids}
    if set(configs) != wanted:
        problems.append(f"image.tar holds {sorted(configs)}, the manifest lists {sorted(wanted)}")
    pinned = set(lock.parents.values()) - {manifest.image_id}
    if set(manifest.parent_ids) != pinned:
        problems.append(
            f"its parent images {sorted(manifest.parent_ids)} are not the lockfile's "
            f"{sorted(pinned)}"
        )
    labels = (configs.get(manifest.image_id) or {}).get("config", {}).get("Labels") or {}
    if labels.get(KIND_LABEL) != "gromacs":
        problems.append("the image is not labelled gmxbench.kind=gromacs")
    if LOCK_LABEL not in labels:
        problems.append("the image has no gmxbench.lockfile label")
    elif _comparable(parse_lockfile(labels[LOCK_LABEL], f"the image label in {where}", "")) != (
        _comparable(lock)
    ):
        problems.append("the image's gmxbench.lockfile label differs from lockfile.json")
    build = str(labels.get(label("build")))
    tag = f"{REPO}:{build}"
    if not BUILD_NAME.fullmatch(build):
        problems.append(f"its build name {build[:80]!r} is not a tag name (letters, digits, _.-)")
    elif not manifest.tag == lock.record.tag == tag or lock.record.id != manifest.image_id:
        problems.append(f"tags or ids disagree ({manifest.tag}, {lock.record.tag}, label {tag})")
    if problems:
        raise UserError(
            f"{where} was not loaded: {'; '.join(problems)}. {NOTHING}; "
            "make the archive again with `share save` where the image was built."
        )


def save(
    client: Client,
    settings: Settings,
    tag: str,
    dest: Path | None = None,
    emit: Emit = ignore,
) -> Path:
    """Write `<build>.gmxbench.tar.gz` (or `dest`), its `.sha256` and, with a signing key
    set, its `.sig`; never overwrite."""
    image, lock = _project_image(client, settings, tag)
    dest = Path.cwd() if dest is None else Path(dest)
    if dest.is_dir():
        dest = dest / f"{lock.record.tag.rpartition(':')[2]}{SUFFIX}"
    if dest.exists():
        raise UserError(f"{dest} already exists; archives are never overwritten. Remove it first.")
    if not dest.parent.is_dir():
        raise UsageError(f"{dest.parent} is not a directory; create it or save elsewhere.")
    _swept(dest.parent, emit)
    parents = sorted(set(lock.parents.values()) - {image.id})
    missing = [r for r, i in lock.parents.items() if i in parents and not engine.image(client, i)]
    if missing:
        raise UserError(
            f"{lock.record.tag} pins parent images this engine no longer has "
            f"({', '.join(missing)}); an archive carries them all, so that `share load` can "
            "check them. Build them again (`nox -s build`), or share from where they are."
        )
    key = settings.share.signing_key
    started = time.monotonic()
    emit(
        Message(
            f"saving {lock.record.tag} ({image.id[:19]}) and {len(parents)} parent(s) to {dest}"
        )
    )
    with (
        space_for(dest, "the image archive"),  # after the folder below is gone
        tempfile.TemporaryDirectory(prefix=temp_prefix(), dir=dest.parent) as tmp,
    ):
        image_tar = Path(tmp, IMAGE_MEMBER)
        lock_json = (lock.model_dump_json(indent=2) + "\n").encode()
        members = {
            LOCK_MEMBER: Member(sha256=hashlib.sha256(lock_json).hexdigest(), size=len(lock_json)),
            IMAGE_MEMBER: _copy_hashing(engine.save(client, [image.id, *parents]), image_tar),
        }
        manifest = ShareManifest(
            tag=lock.record.tag, image_id=image.id, parent_ids=parents, members=members
        )
        emit(Message(f"exported {members[IMAGE_MEMBER].size / 1e9:.2f} GB"))
        partial = Path(tmp, dest.name)
        with tarfile.open(partial, "w:gz", compresslevel=COMPRESSLEVEL) as tar:
            for name, data in ((MANIFEST, manifest.model_dump_json(indent=2).encode()),
                               (LOCK_MEMBER, lock_json)):  # fmt: skip
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                tar.addfile(info, io.BytesIO(data))
            tar.add(image_tar, arcname=IMAGE_MEMBER)
        if key is not None:
            share_sign.sign(partial, key, Path(tmp, "sig"))
            os.replace(Path(tmp, "sig"), share_sign.sig_path(dest))
        write_atomic(sidecar(dest), f"{_sha256(partial)}  {dest.name}\n")
        os.replace(partial, dest)  # last: an archive that exists is complete
    size = dest.stat().st_size / 1e9
    signed = f", signed with {key}" if key is not None else ", unsigned (ORCH_SHARE__SIGNING_KEY)"
    emit(Message(f"wrote {dest} ({size:.2f} GB{signed}) in {time.monotonic() - started:.0f} s"))
    return dest


def _swept(folder: Path, emit: Emit) -> None:
    for stale in sweep(folder):
        emit(Caution(f"removed {stale}, left by a share command that was killed"))


def _extract(path: Path, into: Path, caps: ShareSettings, signed: str | None) -> ShareManifest:
    """Unpack into `into`, checking each member against the manifest (the first member):
    sizes before a byte is copied, so neither memory nor disk goes past the caps. With
    `signed`, the bytes read must be those whose signature verified (a file rewritten in
    between is refused: nothing from it is loaded)."""
    seen: set[str] = set()
    record_cap = caps.max_record_bytes
    try:
        with (
            path.open("rb") as raw,
            tarfile.open(fileobj=(read := _Hashing(raw)), mode="r|gz") as tar,
        ):
            first = tar.next()
            if first is None or first.name != MANIFEST or not first.isfile():
                raise UserError(f"{path} is not a gmxbench share archive (no {MANIFEST} first).")
            bounded(first.size, record_cap, MANIFEST, str(path), "ORCH_SHARE__MAX_RECORD_BYTES")
            manifest = ShareManifest.model_validate_json(tar.extractfile(first).read(record_cap))  # type: ignore[union-attr]
            while (info := tar.next()) is not None:
                want = manifest.members.get(info.name) if info.name in MEMBERS else None
                if want is None or info.name in seen or not info.isfile():  # no ../ names
                    raise UserError(f"{path} has an unexpected member {info.name!r}. {NOTHING}.")
                cap, setting = (
                    (record_cap, "ORCH_SHARE__MAX_RECORD_BYTES") if info.name == LOCK_MEMBER
                    else (caps.max_image_bytes, "ORCH_SHARE__MAX_IMAGE_BYTES")
                )  # fmt: skip
                bounded(info.size, cap, info.name, str(path), setting)
                if info.size != want.size:
                    raise UserError(
                        f"{path}: {info.name} is {info.size} bytes, the manifest says {want.size}:"
                        f" the archive was altered or damaged. {NOTHING}; copy it again."
                    )
                if shutil.disk_usage(into).free < info.size + (1 << 30):
                    raise no_space(into, f"the unpacked {info.name} ({info.size / 1e9:.1f} GB)")
                got = _copy_hashing(_chunks(tar.extractfile(info)), into / info.name)  # type: ignore[arg-type]
                if got != want:
                    raise UserError(
                        f"{path}: {info.name} has sha256 {got.sha256[:16]}… ({got.size} bytes), "
                        f"the manifest says {want.sha256[:16]}… ({want.size} bytes): the archive "
                        f"was altered or damaged. {NOTHING}; copy it again."
                    )
                seen.add(info.name)
            if signed is not None and read.rest() != signed:
                raise UserError(
                    f"{path} changed after its signature was verified: nothing was loaded "
                    f"or tagged. {NOTHING}; load it again, with nothing else writing to it."
                )
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, ValidationError) as exc:
        raise UserError(
            f"{path} is not a complete gmxbench share archive ({str(exc).splitlines()[0][:200]})."
            f" {NOTHING}; copy it again or make it with `share save`."
        ) from None
    if seen != MEMBERS or set(manifest.members) != seen:
        raise UserError(f"{path} holds {sorted(seen)}, not lockfile and image. {NOTHING}.")
    return manifest


class _Hashing(io.RawIOBase):
    """A file read once, front to back, hashing what it gives (`tarfile`'s stream mode)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw, self._digest = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        chunk = self._raw.read(size)
        self._digest.update(chunk)
        return chunk

    def rest(self) -> str:
        """The sha256 of the whole file: what was read, then what was left."""
        while self.read(1 << 20):
            pass
        return self._digest.hexdigest()


def load(
    client: Client, settings: Settings, path: Path, emit: Emit = ignore, trust: bool = False
) -> ImageRecord:
    """Verify an archive, load it, tag the image as it was built and save its lockfile."""
    path, started = Path(path), time.monotonic()
    if not path.is_file():
        raise UsageError(f"{path} is not a file; pass an archive made by `share save`.")
    if sidecar(path).exists():
        want, got = (sidecar(path).read_text().split() or [""])[0], _sha256(path)
        if got != want:
            raise UserError(
                f"{path} does not match {sidecar(path)} (sha256 {got[:16]}…, expected "
                f"{want[:16]}…): the copy is damaged. {NOTHING}; copy both files again."
            )
    signed = share_sign.require(path, settings.share.allowed_signers, trust, emit)
    scratch = Path(tempfile.gettempdir())
    _swept(scratch, emit)
    with (
        space_for(scratch, f"the unpacked {path.name}"),
        tempfile.TemporaryDirectory(prefix=temp_prefix(), dir=scratch) as tmp,
    ):
        manifest = _extract(path, Path(tmp), settings.share, signed)
        record_cap = settings.share.max_record_bytes
        lock = parse_lockfile(Path(tmp, LOCK_MEMBER).read_bytes(), f"{LOCK_MEMBER} in {path}")
        files = Path(tmp, "files")
        files.mkdir()
        saved = read_saved(Path(tmp, IMAGE_MEMBER), files, record_cap, f"image.tar in {path}")
        Path(tmp, IMAGE_MEMBER).unlink()  # its files are all that is used from here on
        _check_images(saved, manifest, lock, path)
        tag = lock.record.tag
        existing = engine.image(client, tag)
        if existing is not None and existing.id != manifest.image_id:
            raise UserError(
                f"{tag} already names another image here ({existing.id[:19]}); tags are never "
                f"overwritten. {NOTHING}; remove it (`docker rmi {tag}`) to load this one."
            )
        ids = [manifest.image_id, *manifest.parent_ids]
        if not all(engine.image(client, i) for i in ids):
            emit(Message(f"verified {path.name}; loading {len(ids)} image(s)"))
            load_exactly(client, saved, ids, str(path))
    with interrupts.deferred():  # tagged means its lockfile is on disk
        for parent in manifest.parent_ids:  # kept for `rebuild`, never for a build's reuse
            engine.tag(client, parent, shared_tag(parent))
        if existing is None:
            engine.tag(client, manifest.image_id, tag)
        saved_lock = provenance.save_lockfile(
            settings.results_dir, _with_local_digest(settings, lock)
        )
    took = time.monotonic() - started
    emit(Message(f"{tag} ({manifest.image_id[:19]}) ready in {took:.0f} s; lockfile {saved_lock}"))
    return lock.record


def _split_destination(destination: str, default_tag: str) -> tuple[str, str]:
    """`registry/repo[:tag]`; a colon before the last `/` is a registry port, not a tag."""
    if "@" in destination:
        raise UsageError(f"{destination!r}: push to registry/repo[:tag]; the digest is computed.")
    repo, sep, tag = destination.rpartition(":")
    return (destination, default_tag) if not sep or "/" in tag else (repo, tag)


def push(
    client: Client,
    settings: Settings,
    tag: str,
    destination: str,
    emit: Emit = ignore,
) -> str:
    """Push to `registry/repo[:tag]` (tag: the build name); record and return `repo@digest`."""
    image, lock = _project_image(client, settings, tag)
    repo, version = _split_destination(destination, lock.record.tag.rpartition(":")[2])
    ref = f"{repo}:{version}"
    before = engine.image(client, ref)
    if before is not None and before.id != image.id:
        raise UserError(
            f"{ref} already names another local image ({before.id[:19]}); remove that tag "
            "(`docker rmi`) or push under another tag (registry/repo:tag)."
        )
    engine.tag(client, image.id, ref)
    try:
        digest = engine.push(client, repo, version, emit)
    except engine.PushError as exc:
        raise UserError(f"Pushing {lock.record.tag} to {ref} failed: {exc}. {PUSH_HINT}") from None
    finally:
        now = engine.image(client, image.id)
        if before is None and now is not None and len(now.tags) > 1:
            engine.remove_image(client, ref, noprune=True)  # the local registry tag was a vehicle
    if not digest:
        raise UserError(f"The engine pushed {ref} but reported no digest; push again.")
    lock.registry_digest = f"{repo}@{digest}"
    provenance.save_lockfile(settings.results_dir, lock)
    emit(Message(f"pushed {lock.record.tag} as {lock.registry_digest}"))
    return lock.registry_digest
