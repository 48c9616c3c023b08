"""`share save`, `load` and `push` against real engines: ours, a clean one, a registry."""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import engine as engine_mod
from orchestrator.core.errors import UserError
from orchestrator.core.events import Event
from orchestrator.core.settings import load_settings
from orchestrator.images.catalog import label_and_tag, shared_tag
from orchestrator.images.provenance import LOCK_LABEL, ImageRecord, Lockfile, load_lockfile
from orchestrator.platforms import active
from orchestrator.store.layout import lockfile_path
from orchestrator.workflows import share

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REGISTRY_IMAGE = "gmxbench-scratch/registry:bookworm"
REGISTRY_DOCKERFILE = """\
FROM {base}
RUN apt-get update \\
 && apt-get install -y --no-install-recommends docker-registry \\
 && rm -rf /var/lib/apt/lists/*
COPY config.yml /etc/gmxbench-registry.yml
EXPOSE 5000
CMD ["docker-registry", "serve", "/etc/gmxbench-registry.yml"]
"""
#: Debian's own config asks for htpasswd credentials; a test registry needs none.
REGISTRY_CONFIG = b"""\
version: 0.1
storage:
  filesystem:
    rootdirectory: /var/lib/docker-registry
http:
  addr: :5000
"""


def _quiet(_: object) -> None:
    pass


def _settings(results: Path) -> Any:
    return load_settings(platform="cpu", results_dir=results)


def _nothing_loaded(client: Any) -> bool:
    return client.images.list(all=True) == []


# --- a tiny project image (two layers of a few bytes, one pinned parent) -------------


@pytest.fixture(scope="module")
def tiny_image(engine: Any) -> Iterator[tuple[ImageRecord, str]]:
    """A made-up GROMACS image FROM a made-up parent: archives of kilobytes, not a GB."""
    name = f"share-test-{uuid.uuid4().hex[:8]}"
    parent_tag = f"gmxbench-scratch/share-parent:{name}"
    parent_id = engine_mod.build(
        engine, "FROM scratch\nCOPY a /a\n", what=parent_tag, files={"a": b"a"}
    )
    engine.images.get(parent_id).tag(*parent_tag.split(":"))
    record = ImageRecord(tag=f"gromacs:{name}", id="", build=name, platform="cpu")
    lock = Lockfile(
        record=record,
        template="test",
        context={"why": "share tests"},
        dockerfile_sha256="0" * 64,
        parents={parent_tag: parent_id},
    )
    raw_id = engine_mod.build(
        engine, f"FROM {parent_id}\nCOPY b /b\n", what=record.tag,
        files={"b": name.encode()},
    )  # fmt: skip
    embedded = {LOCK_LABEL: lock.model_dump_json(exclude={"record": {"id"}})}
    record.id = label_and_tag(engine, raw_id, record, [record.tag], _quiet, embedded)
    yield record, parent_id
    for ref in (record.tag, parent_tag):
        engine.images.remove(ref, force=True)


@pytest.fixture
def tiny_archive(engine: Any, tiny_image: tuple[ImageRecord, str], tmp_path: Path) -> Path:
    record, _ = tiny_image
    return share.save(engine, _settings(tmp_path / "results"), record.tag, tmp_path)


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


def _rewrite(src: Path, dest: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """A copy of an archive with its members changed (and no sidecar)."""
    members = _members(src)
    change(members)
    with tarfile.open(dest, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dest


def test_tiny_round_trip_carries_parents_untagged(
    engine: Any, tiny_image: tuple[ImageRecord, str], tiny_archive: Path, clean_engine: Any
) -> None:
    record, parent_id = tiny_image
    assert tiny_archive.name == f"{record.build}.gmxbench.tar.gz"
    names = {p.name for p in tiny_archive.parent.iterdir()}
    assert names == {tiny_archive.name, tiny_archive.name + ".sha256"}  # no temp files left
    check = subprocess.run(
        ["sha256sum", "-c", tiny_archive.name + ".sha256"],
        cwd=tiny_archive.parent,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    with tarfile.open(tiny_archive, "r|gz") as tar:
        first = tar.next()
        assert first is not None and first.name == share.MANIFEST
        manifest = share.ShareManifest.model_validate_json(tar.extractfile(first).read())  # type: ignore[union-attr]
    assert manifest.image_id == record.id and manifest.parent_ids == [parent_id]

    results = tiny_archive.parent / "loaded"
    loaded = share.load(clean_engine, _settings(results), tiny_archive, trust=True)
    assert loaded.id == record.id
    image = clean_engine.images.get(record.tag)
    assert image.id == record.id
    assert image.labels == engine.images.get(record.id).labels
    parent = clean_engine.images.get(parent_id)
    assert parent.tags == [shared_tag(parent_id)]  # kept for a rebuild, never a build's reuse
    assert {t for i in clean_engine.images.list() for t in i.tags} == {
        record.tag,
        shared_tag(parent_id),
    }
    lock = load_lockfile(lockfile_path(results, record.tag))
    assert lock.record.id == record.id and lock.parents == {
        f"gmxbench-scratch/share-parent:{record.build}": parent_id
    }
    again = share.load(clean_engine, _settings(results), tiny_archive, trust=True)
    assert again == loaded


def test_flipped_byte_in_a_member_is_refused(tiny_archive: Path, clean_engine: Any) -> None:
    def flip(members: dict[str, bytes]) -> None:
        data = bytearray(members[share.LOCK_MEMBER])
        data[10] ^= 0x01
        members[share.LOCK_MEMBER] = bytes(data)

    bad = _rewrite(tiny_archive, tiny_archive.with_name("flipped.gmxbench.tar.gz"), flip)
    with pytest.raises(UserError, match=r"lockfile\.json has sha256 .* altered or damaged"):
        share.load(clean_engine, _settings(bad.parent / "r"), bad, trust=True)
    assert _nothing_loaded(clean_engine)


def test_lockfile_that_disagrees_with_the_label_is_refused(
    tiny_archive: Path, clean_engine: Any
) -> None:
    """Checksums made consistent again: the image's own label still gives it away."""

    def edit(members: dict[str, bytes]) -> None:
        lock = json.loads(members[share.LOCK_MEMBER])
        lock["template"] = "something-else"
        members[share.LOCK_MEMBER] = json.dumps(lock).encode()
        manifest = share.ShareManifest.model_validate_json(members[share.MANIFEST])
        data = members[share.LOCK_MEMBER]
        manifest.members[share.LOCK_MEMBER] = share.Member(
            sha256=hashlib.sha256(data).hexdigest(), size=len(data)
        )
        members[share.MANIFEST] = manifest.model_dump_json().encode()

    bad = _rewrite(tiny_archive, tiny_archive.with_name("edited.gmxbench.tar.gz"), edit)
    with pytest.raises(UserError, match=r"label differs from lockfile\.json"):
        share.load(clean_engine, _settings(bad.parent / "r"), bad, trust=True)
    assert _nothing_loaded(clean_engine)


def test_member_names_cannot_escape(tiny_archive: Path, clean_engine: Any) -> None:
    escape = f"../gmxbench-escape-{uuid.uuid4().hex[:8]}"

    def smuggle(members: dict[str, bytes]) -> None:
        manifest = share.ShareManifest.model_validate_json(members[share.MANIFEST])
        manifest.members[escape] = share.Member(sha256=hashlib.sha256(b"x").hexdigest(), size=1)
        members[share.MANIFEST] = manifest.model_dump_json().encode()
        members[escape] = b"x"

    bad = _rewrite(tiny_archive, tiny_archive.with_name("escape.gmxbench.tar.gz"), smuggle)
    with pytest.raises(UserError, match="unexpected member"):
        share.load(clean_engine, _settings(bad.parent / "r"), bad, trust=True)
    assert not Path("/tmp", escape).resolve().exists()
    assert _nothing_loaded(clean_engine)


def test_wrong_sidecar_truncation_and_non_archives_are_refused(
    tiny_archive: Path, clean_engine: Any, tmp_path: Path
) -> None:
    settings = _settings(tmp_path / "r")
    sidecar = share.sidecar(tiny_archive)
    sidecar.write_text("0" * 64 + f"  {tiny_archive.name}\n")
    with pytest.raises(UserError, match=r"does not match .*\.sha256"):
        share.load(clean_engine, settings, tiny_archive, trust=True)
    sidecar.unlink()

    truncated = tmp_path / "truncated.gmxbench.tar.gz"
    truncated.write_bytes(tiny_archive.read_bytes()[: tiny_archive.stat().st_size // 2])
    with pytest.raises(UserError, match="not a complete gmxbench share archive"):
        share.load(clean_engine, settings, truncated, trust=True)

    text = tmp_path / "notes.txt"
    text.write_text("not an archive\n")
    with pytest.raises(UserError, match="not a complete gmxbench share archive"):
        share.load(clean_engine, settings, text, trust=True)
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        tar.add(text, arcname="notes.txt")
    with pytest.raises(UserError, match="not a gmxbench share archive"):
        share.load(clean_engine, settings, other, trust=True)
    assert _nothing_loaded(clean_engine)


def test_existing_tag_for_another_image_is_refused(
    tiny_image: tuple[ImageRecord, str], tiny_archive: Path, clean_engine: Any, tmp_path: Path
) -> None:
    record, parent_id = tiny_image
    share.load(clean_engine, _settings(tmp_path / "r"), tiny_archive, trust=True)
    clean_engine.images.remove(record.tag)
    clean_engine.images.get(parent_id).tag("gromacs", tag=record.build)
    with pytest.raises(UserError, match="already names another image"):
        share.load(clean_engine, _settings(tmp_path / "r"), tiny_archive, trust=True)
    assert clean_engine.images.get(record.tag).id == parent_id


def test_save_refuses_what_it_cannot_share(
    engine: Any, tiny_image: tuple[ImageRecord, str], tiny_archive: Path, tmp_path: Path
) -> None:
    settings = _settings(tmp_path / "r")
    with pytest.raises(UserError, match=r"gromacs:no-such-build is not an image.*nox -s images"):
        share.save(engine, settings, "no-such-build", tmp_path)
    base = active(settings).build.base_image(settings)
    with pytest.raises(UserError, match=r"no gmxbench\.lockfile"):
        share.save(engine, settings, base, tmp_path)
    before = tiny_archive.read_bytes()
    with pytest.raises(UserError, match="already exists"):
        share.save(engine, settings, tiny_image[0].tag, tiny_archive)
    assert tiny_archive.read_bytes() == before


def test_interrupted_save_leaves_nothing(
    engine: Any, tiny_image: tuple[ImageRecord, str], tmp_path: Path
) -> None:
    def interrupt(event: Event) -> None:
        if event.text.startswith("exported"):
            raise KeyboardInterrupt

    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(KeyboardInterrupt):
        share.save(engine, _settings(tmp_path / "r"), tiny_image[0].tag, out, emit=interrupt)
    assert list(out.iterdir()) == []


# --- the real stable image ------------------------------------------------------------


def test_stable_image_save_then_load_on_a_clean_engine(
    engine: Any, stable_image: Any, stable_archive: Path, clean_engine: Any, tmp_path: Path
) -> None:
    started = time.monotonic()
    record = share.load(clean_engine, _settings(tmp_path), stable_archive, trust=True)
    print(f"\nshare load: {time.monotonic() - started:.1f} s")
    assert record.id == stable_image.id and record.tag == stable_image.tag
    loaded = clean_engine.images.get(stable_image.tag)
    assert loaded.id == stable_image.id
    assert loaded.labels == engine.images.get(stable_image.id).labels
    tags = {t for i in clean_engine.images.list() for t in i.tags}
    assert {t for t in tags if not t.startswith("gmxbench-shared:")} == {stable_image.tag}
    lock = load_lockfile(lockfile_path(tmp_path, stable_image.tag))
    assert lock.record.id == stable_image.id
    assert lock.record.compiler_version == stable_image.compiler_version


def test_archive_with_a_wrong_sidecar_is_refused(
    stable_archive: Path, clean_engine: Any, tmp_path: Path
) -> None:
    copy = tmp_path / stable_archive.name
    os.link(stable_archive, copy)  # the same bytes, instantly
    share.sidecar(copy).write_text(hashlib.sha256(b"another file").hexdigest() + "  x\n")
    with pytest.raises(UserError, match="the copy is damaged"):
        share.load(clean_engine, _settings(tmp_path / "r"), copy, trust=True)
    assert _nothing_loaded(clean_engine)


# --- push to a registry --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def registry(engine: Any, cpu_settings: Any) -> Iterator[str]:
    """Debian's docker-registry on 127.0.0.1 (an insecure-by-default range): its address."""
    from orchestrator.images.base import ensure_base

    ensure_base(engine, cpu_settings)
    dockerfile = REGISTRY_DOCKERFILE.format(
        base=active(cpu_settings).build.base_image(cpu_settings)
    )
    key = hashlib.sha256(dockerfile.encode() + REGISTRY_CONFIG).hexdigest()
    image = engine_mod.image(engine, REGISTRY_IMAGE)
    if image is None or image.labels.get("gmxbench-test.dockerfile") != key:
        built = engine_mod.build(
            engine,
            dockerfile,
            what=REGISTRY_IMAGE,
            labels={"gmxbench-test.dockerfile": key},
            files={"config.yml": REGISTRY_CONFIG},
        )
        engine.images.get(built).tag(*REGISTRY_IMAGE.split(":"))
    container = engine.containers.run(
        REGISTRY_IMAGE, detach=True, ports={"5000/tcp": ("127.0.0.1", None)}
    )
    try:
        container.reload()
        address = f"127.0.0.1:{container.ports['5000/tcp'][0]['HostPort']}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/v2/", timeout=5) as res:
                    if res.status == 200:
                        break
            except urllib.error.HTTPError as exc:  # it answers, but not as a test registry
                pytest.fail(f"the registry at {address} answered {exc}")
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the registry did not answer: {container.logs()[-2000:]!r}")
                time.sleep(0.5)
        yield address
    finally:
        container.remove(force=True)


def test_push_records_the_digest_and_a_clean_engine_pulls_it(
    engine: Any, stable_image: Any, registry: str, clean_engine: Any, tmp_path: Path
) -> None:
    settings = _settings(tmp_path)  # no lockfile here yet: recovered from the label
    repo = f"{registry}/gmxbench/gromacs"
    started = time.monotonic()
    digest = share.push(engine, settings, stable_image.tag, repo)
    print(f"\nshare push: {time.monotonic() - started:.1f} s")
    assert digest.startswith(f"{repo}@sha256:")
    lock = load_lockfile(lockfile_path(tmp_path, stable_image.tag))
    assert lock.registry_digest == digest and lock.record.id == stable_image.id
    vehicle = f"{repo}:{stable_image.build}"
    assert engine_mod.image(engine, vehicle) is None  # no stray registry tag here
    assert share.push(engine, settings, stable_image.tag, repo) == digest

    started = time.monotonic()
    pulled = clean_engine.images.pull(digest)
    print(f"pull by digest on a clean engine: {time.monotonic() - started:.1f} s")
    assert pulled.id == stable_image.id
    assert pulled.labels == engine.images.get(stable_image.id).labels


def test_push_to_a_registry_that_does_not_answer(
    engine: Any, tiny_image: tuple[ImageRecord, str], tmp_path: Path
) -> None:
    record, _ = tiny_image
    repo = f"127.0.0.1:{_free_port()}/gmxbench/gromacs"
    settings = _settings(tmp_path)
    with pytest.raises(UserError, match=r"failed: .*connection refused.*docker login"):
        share.push(engine, settings, record.tag, repo)
    assert engine_mod.image(engine, f"{repo}:{record.build}") is None
    assert not lockfile_path(tmp_path, record.tag).exists()
