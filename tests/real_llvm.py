"""A real llvm-project for the tests: Debian's `llvm-toolchain-22` source as a git repository.

Two commits: the release as Debian ships it, and a one-file AMDGPU backend edit that
changes generated code (the load/store vectorizer off by default). The tarball comes
from Debian's mirror through apt (a private deb-src list for sid; apt checks its sha256
against the signed index, and the fixture records it). The repository is cached in
`~/.cache/gmxbench/real-llvm/` between sessions: 2.4 GB, about 3 minutes to make.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "llvm-toolchain-22"
SOURCES_LIST = "deb-src http://deb.debian.org/debian sid main\n"
#: The second commit's edit: one line of one AMDGPU file, a default that changes code.
EDITED = "llvm/lib/Target/AMDGPU/AMDGPUTargetMachine.cpp"
_OPTION = '  "amdgpu-load-store-vectorizer",\n  cl::desc("Enable load store vectorizer"),\n'
EDIT_FROM = _OPTION + "  cl::init(true),"
EDIT_TO = _OPTION + "  cl::init(false),"
EDIT_MESSAGE = "AMDGPU: load/store vectorizer off by default"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "gmxbench tests", "GIT_AUTHOR_EMAIL": "tests@gmxbench.invalid",
    "GIT_COMMITTER_NAME": "gmxbench tests", "GIT_COMMITTER_EMAIL": "tests@gmxbench.invalid",
    "GIT_AUTHOR_DATE": "2026-11-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2026-11-01T00:00:00+0000",
}  # fmt: skip


@dataclass(frozen=True)
class RealLlvm:
    path: Path  # the git checkout, at the second commit
    release: str  # the first commit: Debian's source as it is
    edited: str  # the second: the one-file AMDGPU edit
    version: str  # the Debian upstream version, e.g. 22.1.8
    tarball_sha256: str  # as the signed Sources index states it, checked by apt


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gmxbench" / "real-llvm"


def real_llvm(root: Path | None = None) -> RealLlvm:
    """The cached repository, made on first use (download, unpack, two commits)."""
    root = root or cache_root()
    record = root / "real-llvm.json"
    if record.exists():
        found = RealLlvm(**{**json.loads(record.read_text()), "path": root / "llvm-project"})
        if (found.path / ".git").is_dir():
            return found
    root.mkdir(parents=True, exist_ok=True)
    tarball, version, sha256 = _download(root)
    work = root / "llvm-project.partial"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    with tarfile.open(tarball) as tar:
        tar.extractall(work, filter="data")
    (inner,) = list(work.iterdir())  # llvm-toolchain-22_22.1.8/
    release = _commit(inner, f"LLVM {version} ({PACKAGE} orig.tar.xz, sha256 {sha256[:16]})")
    source = inner / EDITED
    text = source.read_text()
    assert text.count(EDIT_FROM) == 1, f"{EDITED} no longer has the line the edit changes"
    source.write_text(text.replace(EDIT_FROM, EDIT_TO))
    edited = _commit(inner, EDIT_MESSAGE)
    final = root / "llvm-project"
    shutil.rmtree(final, ignore_errors=True)
    inner.rename(final)
    shutil.rmtree(work)
    tarball.unlink()
    found = RealLlvm(final, release, edited, version, sha256)
    record.write_text(json.dumps({k: str(v) for k, v in found.__dict__.items() if k != "path"}))
    return found


def _download(root: Path) -> tuple[Path, str, str]:
    """The orig tarball of the newest `llvm-toolchain-22` in sid, checked by apt."""
    apt = root / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(SOURCES_LIST)
    options = [
        "-o", f"Dir::Etc::sourcelist={apt / 'sources.list'}", "-o", "Dir::Etc::sourceparts=-",
        "-o", f"Dir::State::Lists={apt / 'lists'}", "-o", "Acquire::Check-Valid-Until=false",
        "-o", "APT::Sandbox::User=root",
    ]  # fmt: skip
    subprocess.run(["apt-get", *options, "update"], check=True, capture_output=True)
    uris = subprocess.run(
        ["apt-get", *options, "--print-uris", "source", "--tar-only", PACKAGE],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    found = re.search(r"'\S+' (\S+_(\S+)\.orig\.tar\.\w+) \d+ SHA256:([0-9a-f]{64})", uris)
    assert found, f"apt lists no orig tarball of {PACKAGE}:\n{uris}"
    name, version, sha256 = found[1], found[2].split("_")[-1], found[3]
    subprocess.run(
        ["apt-get", *options, "source", "--tar-only", "--download-only", PACKAGE],
        check=True, capture_output=True, cwd=root,
    )  # fmt: skip
    return root / name, version, sha256


def _commit(tree: Path, message: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    if not (tree / ".git").exists():
        subprocess.run(["git", "init", "--quiet", "-b", "main", str(tree)], check=True, env=env)
    subprocess.run(["git", "add", "--all"], cwd=tree, check=True, env=env)
    subprocess.run(["git", "commit", "--quiet", "-m", message], cwd=tree, check=True, env=env)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, check=True, env=env,
                          capture_output=True, text=True)  # fmt: skip
    return head.stdout.strip()
