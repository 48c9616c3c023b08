"""Benchmark inputs: download once, verify the sha256, unpack safely into the cache.

Layout under `cache_dir`:

    inputs/<sha256[:12]>-<filename>            the verified archive, as published
    inputs/<sha256[:12]>-<filename>.verified   "<sha256> <size>": written after verification
    systems/<input_key>/                       the unpacked system (`.unpacked` inside)

Everything is written to a temporary name in the same directory and renamed into place
when complete, so an interrupted download, a wrong checksum or a corrupt archive leaves
nothing half-written behind. `--inputs-dir DIR` (air-gapped sites) takes the archives by
file name from DIR instead of the network; they are checked and copied into the cache.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit

import requests
import urllib3.exceptions

from orchestrator.core.errors import UserError, is_no_space, no_space
from orchestrator.core.events import Emit, Transfer, ignore
from orchestrator.core.files import atomic_writer, new_mode, write_atomic
from orchestrator.runs.recipe import InputSpec, ResolvedSystem

CHUNK = 1 << 20
TIMEOUT = (15.0, 60.0)  # connect, between bytes
UNPACKED = ".unpacked"
#: Temporary files of a killed process are removed after this long without a write.
STALE_PART, STALE_UNPACK = 15 * 60.0, 24 * 3600.0
#: Writes an input into the open file and returns the sha256 of what it wrote.
Filler = Callable[[IO[bytes]], str]
CORRUPT = (zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError)


def fetch_inputs(
    system: ResolvedSystem,
    cache_dir: Path,
    inputs_dir: Path | None = None,
    emit: Emit = ignore,
) -> Path | None:
    """Download (or take from `inputs_dir`), verify and unpack a system's inputs.

    Returns the unpacked directory, or None for a generated system (no inputs).
    A second call finds everything in the cache and touches no network.
    """
    if not system.inputs:
        return None
    archives = [
        obtain_archive(spec, cache_dir / "inputs", inputs_dir, emit) for spec in system.inputs
    ]
    return _unpack(system, archives, cache_dir / "systems")


def obtain_archive(
    spec: InputSpec, store: Path, inputs_dir: Path | None = None, emit: Emit = ignore
) -> Path:
    """The verified archive `store/<sha256[:12]>-<filename>`, fetched if not there yet."""
    store.mkdir(parents=True, exist_ok=True)
    target = store / spec.cache_name
    marker = _marker(target)
    if _verified(target, marker, spec.sha256):
        return target
    _sweep(store, f".{target.name}.*.part", STALE_PART)
    if inputs_dir is not None:
        source = _find_local(spec, inputs_dir.expanduser())
        _store(spec, target, lambda out: _copy(source, out, spec, emit), str(source))
    elif spec.url.startswith("file://"):
        source = Path(unquote(urlsplit(spec.url).path))
        if not source.is_file():
            raise UserError(f"Input {spec.filename}: {source} (from {spec.url}) does not exist.")
        _store(spec, target, lambda out: _copy(source, out, spec, emit), spec.url)
    else:
        _store(spec, target, lambda out: _download(spec, out, emit), spec.url)
    write_atomic(marker, f"{spec.sha256} {target.stat().st_size}\n")
    return target


def _sweep(folder: Path, pattern: str, age: float) -> None:
    """Remove what a killed process left (temporary names untouched for `age` seconds)."""
    for stale in folder.glob(pattern):
        try:
            if time.time() - stale.stat().st_mtime <= age:
                continue
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink()
        except OSError:
            pass


def _marker(archive: Path) -> Path:
    return archive.with_name(archive.name + ".verified")


def _verified(target: Path, marker: Path, sha256: str) -> bool:
    try:
        recorded = marker.read_text().split()
        return recorded == [sha256, str(target.stat().st_size)]
    except (OSError, ValueError):
        return False


def _find_local(spec: InputSpec, inputs_dir: Path) -> Path:
    for name in (spec.filename, spec.cache_name):
        if (inputs_dir / name).is_file():
            return inputs_dir / name
    raise UserError(
        f"--inputs-dir {inputs_dir} has no {spec.filename} (sha256 {spec.sha256}). "
        f"Download it from {spec.url} on a machine with network access, put it in "
        f"{inputs_dir} under that name, and run again."
    )


def _store(spec: InputSpec, target: Path, fill: Filler, origin: str) -> None:
    """Run `fill` into a temporary file beside `target`; rename it in if the sha256 matches."""
    with atomic_writer(target, suffix=".part", what=f"the input {spec.filename}") as out:
        digest = fill(out)
        if digest != spec.sha256:
            raise UserError(
                f"{spec.filename} from {origin} has sha256 {digest}, but the recipe expects "
                f"{spec.sha256}. The file is damaged or not the published one; nothing was "
                "kept. Fetch it again, or fix the recipe if the publisher changed the file."
            )


def _copy(source: Path, out: IO[bytes], spec: InputSpec, emit: Emit) -> str:
    digest = hashlib.sha256()
    meter = Meter(spec.filename, source.stat().st_size, emit)
    with source.open("rb") as src:
        for chunk in iter(lambda: src.read(CHUNK), b""):
            out.write(chunk)
            digest.update(chunk)
            meter.advance(len(chunk))
    meter.finish()
    return digest.hexdigest()


def _download(spec: InputSpec, out: IO[bytes], emit: Emit) -> str:
    digest = hashlib.sha256()
    done = 0
    total: int | None = None
    hint = (
        f"Check the network (or HTTPS_PROXY), or download {spec.filename} (sha256 "
        f"{spec.sha256}) elsewhere and pass --inputs-dir DIR."
    )
    try:
        with requests.get(
            spec.url, stream=True, timeout=TIMEOUT, headers={"Accept-Encoding": "identity"}
        ) as resp:
            if resp.status_code != 200:
                raise UserError(
                    f"Downloading {spec.filename} from {spec.url} failed: HTTP "
                    f"{resp.status_code} {resp.reason}. {hint}"
                )
            length = resp.headers.get("Content-Length", "")
            total = int(length) if length.isdigit() else None
            meter = Meter(spec.filename, total, emit)
            for chunk in _chunks(resp):
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                meter.advance(len(chunk))
            meter.finish()
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        reason = type(exc).__name__
        if total is not None and done < total:
            reason = f"connection dropped after {done} of {total} bytes ({reason})"
        raise UserError(
            f"Downloading {spec.filename} from {spec.url} failed: {reason}; nothing was "
            f"kept. {hint}"
        ) from None
    if total is not None and done != total:
        raise UserError(
            f"Downloading {spec.filename} from {spec.url} stopped after {done} of {total} "
            f"bytes (truncated); nothing was kept. {hint}"
        )
    return digest.hexdigest()


def _chunks(resp: requests.Response) -> Iterator[bytes]:
    """The body as sent: no transparent gunzip of a `.tar.gz` served with Content-Encoding."""
    yield from resp.raw.stream(CHUNK, decode_content=False)


class Meter:
    """Counts bytes of one transfer and tells `emit` about them, at most every 0.25 s."""

    def __init__(self, label: str, total: int | None, emit: Emit) -> None:
        self.label, self.total, self.emit = label, total or None, emit
        self.done, self.shown = 0, 0.0

    def advance(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if now - self.shown >= 0.25:
            self.shown = now
            self.emit(Transfer(self.label, self.done, self.total))

    def finish(self) -> None:
        self.emit(Transfer(self.label, self.done, self.total, finished=True))


# Unpacking.


def _unpack(system: ResolvedSystem, archives: list[Path], root: Path) -> Path:
    target = root / system.input_key
    stamp = "".join(f"{s.sha256} {s.member or '.'}\n" for s in system.inputs)
    if _unpacked(target, stamp):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep(target.parent, f".{target.name}.*.tmp", STALE_UNPACK)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        tmp.chmod(new_mode(executable=True))  # a folder as mkdir makes it, not mkdtemp's 0700
        for spec, archive in zip(system.inputs, archives, strict=True):
            _extract_checked(spec, archive, tmp)
        _strip_single_top(tmp, system.required_files())
        missing = [rel for rel in system.required_files() if not (tmp / rel).is_file()]
        if missing:
            found = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
            raise UserError(
                f"The inputs of {system.name} ({', '.join(a.name for a in archives)}) have "
                f"no {', '.join(missing)}; they contain {', '.join(found[:12]) or 'no files'}"
                f"{' ...' if len(found) > 12 else ''}. Fix the paths in "
                f"{system.source or f'recipes/{system.recipe}.toml'}."
            )
        (tmp / UNPACKED).write_text(stamp)
        if target.exists() and not _unpacked(target, stamp):
            shutil.rmtree(target)  # unpacked from another version of the recipe
        try:
            os.rename(tmp, target)
        except OSError:
            if not _unpacked(target, stamp):  # not a concurrent unpack of the same inputs
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if is_no_space(exc):
            raise no_space(target, f"the unpacked inputs of {system.name}") from None
        raise
    return target


def _unpacked(target: Path, stamp: str) -> bool:
    try:
        return (target / UNPACKED).read_text() == stamp
    except OSError:
        return False


def _extract_checked(spec: InputSpec, archive: Path, dest: Path) -> None:
    """Extract; a corrupt or unsafe archive is dropped from the cache (it cannot be used)."""
    try:
        count = (
            _extract_zip(archive, dest, spec)
            if spec.kind == "zip"
            else _extract_tar(archive, dest, spec)
        )
        if spec.gunzip:
            _gunzip_all(dest)
    except (*CORRUPT, _Unsafe) as exc:
        archive.unlink(missing_ok=True)
        _marker(archive).unlink(missing_ok=True)
        if isinstance(exc, _Unsafe):
            problem = f"is unsafe to unpack ({exc})"
        else:
            problem = f"cannot be unpacked as {spec.kind} ({type(exc).__name__}: {exc})"
        raise UserError(
            f"{spec.filename} has the expected sha256 but {problem}; it was removed from the "
            "cache. The recipe's url/sha256 point at a broken file: fix the recipe."
        ) from None
    if spec.member and count == 0:
        raise UserError(
            f"{spec.filename} has no directory {spec.member!r}. Fix `member` in the recipe."
        )


class _Unsafe(Exception):
    pass


def _relative(name: str, member: str | None) -> str | None:
    """The path below `member` of archive entry `name`, None when outside it; unsafe → error."""
    name = name.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    if name.startswith("/") or re.match(r"[A-Za-z]:/", name):
        raise _Unsafe(f"absolute path {name!r} in the archive")
    if ".." in name.split("/"):
        raise _Unsafe(f"path {name!r} leaves the unpack directory")
    if member:
        prefix = member.strip("/") + "/"
        if not name.startswith(prefix):
            return None
        name = name[len(prefix) :]
    return name.strip("/") or None


def _destination(dest: Path, rel: str) -> Path:
    out = dest / rel
    if not out.resolve().is_relative_to(dest.resolve()):
        raise _Unsafe(f"path {rel!r} leaves the unpack directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _extract_zip(archive: Path, dest: Path, spec: InputSpec) -> int:
    count = 0
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            rel = _relative(info.filename, spec.member)
            mode = info.external_attr >> 16
            if rel is None or info.is_dir() or stat.S_ISLNK(mode):
                continue
            with zf.open(info) as src, _destination(dest, rel).open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
            count += 1
    return count


def _extract_tar(archive: Path, dest: Path, spec: InputSpec) -> int:
    count = 0
    with tarfile.open(archive, "r:gz") as tf:
        for info in tf:
            rel = _relative(info.name, spec.member)
            if rel is None or not info.isfile():  # directories, links, devices
                continue
            src = tf.extractfile(info)
            if src is None:
                continue
            with src, _destination(dest, rel).open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
            count += 1
    return count


def _gunzip_all(root: Path) -> None:
    """`conf.gro.gz` → `conf.gro` (kept compressed if the plain file exists too)."""
    for packed in sorted(root.rglob("*.gz")):
        plain = packed.with_suffix("")
        if packed.name.endswith(".tar.gz") or plain.exists():
            continue
        with gzip.open(packed, "rb") as src, plain.open("wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
        packed.unlink()


def _strip_single_top(root: Path, required: list[str]) -> None:
    """An archive that wraps everything in one directory: move its contents up."""
    entries = list(root.iterdir())
    if not required or all((root / rel).is_file() for rel in required):
        return
    if len(entries) != 1 or not entries[0].is_dir():
        return
    inner = entries[0].rename(root / ".strip.tmp")
    for child in inner.iterdir():
        child.rename(root / child.name)
    inner.rmdir()
