"""`share load` as a trust boundary: archives crafted here, each an attack of issue 39.

Each crafted archive is consistent wherever the attacker controls it (checksums, the
manifest, the lockfile), so only the rule under test stands between it and the engine.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import engine as engine_mod
from orchestrator.core.errors import UserError
from orchestrator.core.events import Caution, Event
from orchestrator.core.settings import load_settings
from orchestrator.images.catalog import find_by_inputs, label_and_tag, layers_digest, shared_tag
from orchestrator.images.provenance import LOCK_LABEL, ImageRecord, Lockfile
from orchestrator.workflows import share, share_sign
from orchestrator.workflows.share_archive import TEMP_PREFIX

Tar = list[tuple[tarfile.TarInfo, bytes]]


def _quiet(_: object) -> None:
    pass


def _settings(results: Path, **share_settings: Any) -> Any:
    return load_settings(platform="cpu", results_dir=results, share=share_settings)


@pytest.fixture(scope="module")
def made(engine: Any) -> Iterator[Callable[..., tuple[ImageRecord, str]]]:
    """Makes a tiny GROMACS image FROM a tiny parent (with `parent_labels`), recording
    `pinned` as the lockfile's parents (default: the real parent); removes them after."""
    refs: list[str] = []

    def make(
        build: str | None = None,
        parent_labels: dict[str, str] | None = None,
        pin_parent: bool = True,
    ) -> tuple[ImageRecord, str]:
        name = build or f"trust-{uuid.uuid4().hex[:8]}"
        parent_tag = f"gmxbench-scratch/trust-parent:{uuid.uuid4().hex[:8]}"
        parent_id = engine_mod.build(
            engine, "FROM scratch\nCOPY a /a\n", what=parent_tag,
            files={"a": uuid.uuid4().hex.encode()}, labels=parent_labels or {},
        )  # fmt: skip
        if parent_labels:  # stamped as the catalog stamps its own images
            layers = layers_digest(engine_mod.image(engine, parent_id))  # type: ignore[arg-type]
            parent_id = engine_mod.build(
                engine, f"FROM {parent_id}\n", what=parent_tag,
                labels={**parent_labels, "gmxbench.layers": layers},
            )  # fmt: skip
        engine_mod.tag(engine, parent_id, parent_tag)
        tag = f"gromacs:{name}" if "/" not in name and ":" not in name else name
        record = ImageRecord(tag=tag, id="", build=name, platform="cpu")
        lock = Lockfile(
            record=record, template="test", context={"why": "share trust tests"},
            dockerfile_sha256="0" * 64, parents={parent_tag: parent_id} if pin_parent else {},
        )  # fmt: skip
        raw = engine_mod.build(
            engine, f"FROM {parent_id}\nCOPY b /b\n", what=record.tag, files={"b": name.encode()}
        )
        embedded = {LOCK_LABEL: lock.model_dump_json(exclude={"record": {"id"}})}
        record.id = label_and_tag(engine, raw, record, [tag], _quiet, embedded)
        refs.extend([tag, parent_tag])
        return record, parent_id

    yield make
    for ref in refs:
        engine.images.remove(ref, force=True)


def _read(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


def _write_outer(dest: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dest


def _inner(data: bytes) -> Tar:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return [(m, tar.extractfile(m).read() if m.isfile() else b"") for m in tar]  # type: ignore[union-attr]


def _pack(members: Tar) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out.getvalue()


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _craft(
    src: Path,
    dest: Path,
    image_tar: Callable[[Tar], Tar] | None = None,
    manifest: Callable[[share.ShareManifest], None] | None = None,
    image_bytes: bytes | None = None,
) -> Path:
    """A copy of `src` with image.tar (and the manifest) changed, checksums made to agree."""
    members = _read(src)
    if image_tar is not None:
        members[share.IMAGE_MEMBER] = _pack(image_tar(_inner(members[share.IMAGE_MEMBER])))
    if image_bytes is not None:
        members[share.IMAGE_MEMBER] = image_bytes
    data = members[share.IMAGE_MEMBER]
    mani = share.ShareManifest.model_validate_json(members[share.MANIFEST])
    mani.members[share.IMAGE_MEMBER] = share.Member(
        sha256=hashlib.sha256(data).hexdigest(), size=len(data)
    )
    if manifest is not None:
        manifest(mani)
    members[share.MANIFEST] = mani.model_dump_json().encode()
    order = [share.MANIFEST, share.LOCK_MEMBER, share.IMAGE_MEMBER]
    return _write_outer(dest, [(n, members[n]) for n in order])


def _docker_manifest(members: Tar) -> list[dict[str, Any]]:
    return json.loads(next(d for i, d in members if i.name == "manifest.json"))  # type: ignore[no-any-return]


def _tags(client: Any) -> dict[str, str]:
    return engine_mod.tags(client)


# --- finding 1: the engine applies a manifest other than the one checked ---------------


@pytest.mark.parametrize("second", ["manifest.json", "./manifest.json", "the only manifest"])
def test_second_manifest_that_moves_a_tag_is_refused(
    engine: Any, made: Any, clean_engine: Any, tmp_path: Path, second: str
) -> None:
    record, _ = made()
    archive = share.save(engine, _settings(tmp_path / "s"), record.tag, tmp_path)
    victim = "gmxbench-base/debian:bookworm"  # a name the tool builds on, here already
    clean_engine.images.build(fileobj=io.BytesIO(b"FROM scratch\nLABEL a=b\n"), tag=victim)
    before = _tags(clean_engine)

    def plant(members: Tar) -> Tar:
        entries = _docker_manifest(members)
        entries[0]["RepoTags"] = [victim, "gromacs:planted"]
        planted = _file(second, json.dumps(entries).encode())
        if second == "the only manifest":  # refused, or else the tags it moved are put back
            return [(i, json.dumps(entries).encode() if i.name == "manifest.json" else d)
                    for i, d in members]  # fmt: skip
        return [*members, planted]

    bad = _craft(archive, tmp_path / "two.gmxbench.tar.gz", image_tar=plant)
    refused = r"manifest\.json|would tag|changed the engine's tags"
    with pytest.raises(UserError, match=refused):
        share.load(clean_engine, _settings(tmp_path / "r"), bad, trust=True)
    assert _tags(clean_engine) == before  # the base's tag still names its own image
    assert engine_mod.image(clean_engine, record.id) is None


def test_extra_image_in_the_archive_is_refused(
    engine: Any, made: Any, clean_engine: Any, tmp_path: Path
) -> None:
    record, _ = made()
    stowaway, _ = made()
    archive = share.save(engine, _settings(tmp_path / "s"), record.tag, tmp_path)
    both = b"".join(engine_mod.save(engine, [record.id, stowaway.id]))

    def add(manifest: share.ShareManifest) -> None:
        manifest.parent_ids.append(stowaway.id)

    bad = _craft(archive, tmp_path / "extra.gmxbench.tar.gz", image_bytes=both, manifest=add)
    with pytest.raises(UserError, match="are not the lockfile's"):
        share.load(clean_engine, _settings(tmp_path / "r"), bad, trust=True)
    assert engine_mod.image(clean_engine, stowaway.id) is None
    assert clean_engine.images.list(all=True) == []


# --- finding 2: planted tags and a poisoned build cache ---------------------------------


def test_tag_outside_the_tools_repositories_is_refused(
    engine: Any, made: Any, clean_engine: Any, tmp_path: Path
) -> None:
    planted = f"gmxbench-base/debian:planted-{uuid.uuid4().hex[:6]}"
    record, _ = made(build=planted)
    archive = share.save(engine, _settings(tmp_path / "s"), planted, tmp_path / "a.gmxbench.tar.gz")
    with pytest.raises(UserError, match="is not a tag name"):
        share.load(clean_engine, _settings(tmp_path / "r"), archive, trust=True)
    assert _tags(clean_engine) == {}
    assert engine_mod.image(clean_engine, record.id) is None


def test_planted_builder_parent_never_reaches_the_build_cache(
    engine: Any, made: Any, clean_engine: Any, tmp_path: Path
) -> None:
    """A parent the lockfile does not pin is refused; one it pins is kept for `rebuild`
    but never returned by the build's lookup, whatever its labels claim."""
    key = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    labels = {"gmxbench.kind": "builder", "gmxbench.inputs": key}
    record, planted = made(parent_labels=labels, pin_parent=False)
    assert find_by_inputs(engine, key, "builder") is not None  # what the label claims
    archive = share.save(engine, _settings(tmp_path / "s"), record.tag, tmp_path)
    both = b"".join(engine_mod.save(engine, [record.id, planted]))

    def add(manifest: share.ShareManifest) -> None:
        manifest.parent_ids = [planted]

    bad = _craft(archive, tmp_path / "planted.gmxbench.tar.gz", image_bytes=both, manifest=add)
    with pytest.raises(UserError, match="are not the lockfile's"):
        share.load(clean_engine, _settings(tmp_path / "r"), bad, trust=True)
    assert find_by_inputs(clean_engine, key, "builder") is None
    assert engine_mod.image(clean_engine, planted) is None

    key2 = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    pinned_record, pinned = made(parent_labels={**labels, "gmxbench.inputs": key2})
    archive = share.save(engine, _settings(tmp_path / "s"), pinned_record.tag, tmp_path)
    share.load(clean_engine, _settings(tmp_path / "r"), archive, trust=True)
    parent = engine_mod.image(clean_engine, pinned)
    assert parent is not None and parent.tags == (shared_tag(pinned),)
    assert find_by_inputs(clean_engine, key2, "builder") is None


# --- finding 5: archives that exhaust memory and disk -----------------------------------


def _written() -> int:
    """Bytes this process has written so far (`wchar` of /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def test_huge_manifest_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A manifest of 400 MB of spaces is 400 kB gzip'd; the cap's error comes first."""
    huge = b"{" + b" " * (400 << 20) + b"}"
    archive = _write_outer(tmp_path / "huge.gmxbench.tar.gz", [(share.MANIFEST, huge)])
    assert archive.stat().st_size < 2 << 20
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match=r"MAX_RECORD_BYTES.*nothing of it was read"):
            share.load(None, _settings(tmp_path / "r"), archive, trust=True)  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20, f"{peak / 1e6:.0f} MB"


@pytest.mark.parametrize("declared", ["as-is", "smaller"])
def test_member_over_its_cap_is_refused_before_it_is_written(tmp_path: Path, declared: str) -> None:
    """A 128 MB image.tar of zeros is 130 kB gzip'd. Over the cap (or over what the
    manifest says: the 390 MB case of the issue), almost nothing reaches the disk."""
    big = b"\0" * (128 << 20)
    manifest = share.ShareManifest(
        tag="gromacs:x", image_id="sha256:" + "0" * 64,
        members={
            share.LOCK_MEMBER: share.Member(sha256=hashlib.sha256(b"{}").hexdigest(), size=2),
            share.IMAGE_MEMBER: share.Member(
                sha256=hashlib.sha256(big).hexdigest(),
                size=len(big) if declared == "as-is" else 1000,
            ),
        },
    )  # fmt: skip
    archive = _write_outer(
        tmp_path / "big.gmxbench.tar.gz",
        [(share.MANIFEST, manifest.model_dump_json().encode()), (share.LOCK_MEMBER, b"{}"),
         (share.IMAGE_MEMBER, big)],
    )  # fmt: skip
    del big
    caps = {"max_image_bytes": 16 << 20} if declared == "as-is" else {}
    settings = _settings(tmp_path / "r", **caps)
    before = _written()
    with pytest.raises(UserError, match="MAX_IMAGE_BYTES" if declared == "as-is" else "1000"):
        share.load(None, settings, archive, trust=True)  # type: ignore[arg-type]
    assert _written() - before < 4 << 20


# --- signatures -------------------------------------------------------------------------


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    """An ed25519 key of `alice@example.org` and an allowed-signers file that lists it."""
    key = tmp_path / "keys" / "alice"
    key.parent.mkdir()
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", str(key)], check=True
    )
    allowed = tmp_path / "keys" / "allowed_signers"
    public = key.with_suffix(".pub").read_text().strip()
    allowed.write_text(f'alice@example.org namespaces="gmxbench-share" {public}\n')
    return key, allowed


def test_signed_archive_loads_and_a_tampered_one_never_does(
    engine: Any, made: Any, clean_engine: Any, tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    key, allowed = keys
    record, _ = made()
    archive = share.save(engine, _settings(tmp_path / "s", signing_key=key), record.tag, tmp_path)
    assert share_sign.sig_path(archive).is_file()
    settings = _settings(tmp_path / "r", allowed_signers=allowed)

    tampered = tmp_path / "tampered" / archive.name
    tampered.parent.mkdir()
    _craft(archive, tampered, image_tar=lambda members: members)  # the same members, new bytes
    share_sign.sig_path(tampered).write_bytes(share_sign.sig_path(archive).read_bytes())
    for trust in (False, True):
        with pytest.raises(share_sign.Tampered, match="altered after it was signed"):
            share.load(clean_engine, settings, tampered, trust=trust)
    assert clean_engine.images.list(all=True) == []

    said: list[Event] = []
    loaded = share.load(clean_engine, settings, archive, said.append)
    assert loaded.id == record.id
    assert any("signed by alice@example.org" in e.text for e in said)


def test_unsigned_or_unknown_archive_needs_trust(
    engine: Any, made: Any, clean_engine: Any, tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    allowed = keys[1]
    record, _ = made()
    unsigned = share.save(engine, _settings(tmp_path / "s"), record.tag, tmp_path)
    settings = _settings(tmp_path / "r", allowed_signers=allowed)
    with pytest.raises(UserError, match=r"is not signed .*Pass --trust"):
        share.load(clean_engine, settings, unsigned)
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    (tmp_path / "o").mkdir()
    by_other = share.save(
        engine, _settings(tmp_path / "s", signing_key=other), record.tag, tmp_path / "o"
    )
    with pytest.raises(UserError, match=r"does not list.*Pass --trust"):
        share.load(clean_engine, settings, by_other)
    assert clean_engine.images.list(all=True) == []

    said: list[Event] = []
    share.load(clean_engine, settings, unsigned, said.append, trust=True)
    assert any(isinstance(e, Caution) and "--trust" in e.text for e in said)


# --- finding 7: leftovers ---------------------------------------------------------------


def test_stale_share_folders_are_swept_live_ones_kept(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    scratch = Path(tempfile.gettempdir())
    stale = scratch / f"{TEMP_PREFIX}{gone.pid}-{uuid.uuid4().hex[:6]}"
    live = scratch / f"{TEMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:6]}"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "image.tar").write_bytes(b"x" * 1000)
    said: list[Event] = []
    text = tmp_path / "not-an-archive.gmxbench.tar.gz"
    text.write_text("x")
    try:
        with pytest.raises(UserError, match="not a complete gmxbench share archive"):
            share.load(None, _settings(tmp_path / "r"), text, said.append, trust=True)  # type: ignore[arg-type]
        assert not stale.exists() and live.exists()
        assert any(str(stale) in e.text for e in said)
    finally:
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)


def test_an_archive_rewritten_after_its_signature_is_checked_is_refused(
    engine: Any, made: Any, clean_engine: Any, tmp_path: Path, keys: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The attacker's moment, between the signature check and the unpacking: the file is
    replaced by an archive of the same members (every manifest check passes); the bytes
    unpacked are not those that verified, so nothing is loaded."""
    key, allowed = keys
    record, _ = made()
    archive = share.save(engine, _settings(tmp_path / "s", signing_key=key), record.tag, tmp_path)
    other = tmp_path / "other" / archive.name
    other.parent.mkdir()
    _craft(archive, other, image_tar=lambda members: members)  # the same members, new bytes
    verify = share_sign.require

    def verify_then_rewrite(*args: Any, **kwargs: Any) -> str | None:
        digest = verify(*args, **kwargs)
        shutil.copyfile(other, archive)
        return digest

    monkeypatch.setattr(share_sign, "require", verify_then_rewrite)
    settings = _settings(tmp_path / "r", allowed_signers=allowed)
    with pytest.raises(UserError, match="changed after its signature was verified"):
        share.load(clean_engine, settings, archive)
    assert clean_engine.images.list(all=True) == []
