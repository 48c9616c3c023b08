"""An LLVM the user already built, as found on disk: what of it the loop uses.

A build tree (`~/llvm-project/build`: CMakeCache.txt, bin/clang) or an install prefix
(bin/clang, lib/). Taken from it: the compilers and the tools the loop runs (`TOOLS`),
the shared libraries those name that the tree holds (libLLVM, libclang-cpp, or every
library of a BUILD_SHARED_LIBS tree), and clang's resource directory (lib/clang/<N>:
headers, device libraries). Nothing outside the tree is ever read: a link that leads
out of it is refused for a tool and left out for a library or a resource file.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from orchestrator.core.errors import UsageError, UserError
from orchestrator.images.gitsource import git
from orchestrator.parsers.elf import ElfFacts, read_elf

#: What every import needs: the compilers, and lld (clang links device code with it).
REQUIRED = ("clang", "clang++", "ld.lld")
#: Needed where the platform compiles device code: HIP objects are bundled by the
#: bundler, which writes them with llvm-objcopy (found beside it, as clang finds ld.lld).
DEVICE_REQUIRED = ("clang-offload-bundler", "llvm-objcopy")
#: Taken when the tree has them (the codegen tools of COMPONENTS, the newer offload
#: driver), as are the device tools where the platform does not need them.
OPTIONAL = (
    "llvm-objdump", "llvm-readobj", "llvm-readelf", "clang-offload-packager",
    "clang-linker-wrapper",
)  # fmt: skip
_HOPS = 40


@dataclass
class LlvmTree:
    """What an import copies, by path in the prefix: `files` (their sources), `links`
    (relative targets inside the prefix), `left_out` (links leading out of the tree,
    shown as `path → target`) and the ELF needs of every binary and library taken."""

    root: Path
    kind: Literal["build tree", "install prefix"]
    files: dict[str, Path] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    elf: dict[str, ElfFacts] = field(default_factory=dict)

    def holds(self, soname: str) -> str | None:
        """The prefix path of the library `soname` the tree holds, if it does."""
        for rel in (*self.files, *self.links):
            if rel.rsplit("/", 1)[-1] == soname and not rel.startswith("bin/"):
                return rel
        return None


def validate(path: str) -> Path:
    """The tree's absolute path, or a one-paragraph `UsageError` before anything slow."""
    given = Path(path).expanduser()
    if not given.exists():
        raise UsageError(
            f"--from-build {path}: no such directory. Give the LLVM build tree (the folder "
            "with CMakeCache.txt and bin/clang, e.g. ~/llvm-project/build) or an install "
            "prefix (bin/clang, lib/)."
        )
    if not given.is_dir():
        raise UsageError(
            f"--from-build {path} is a file, not a directory. Give the LLVM build tree or "
            "install prefix that holds bin/clang, not the binary itself."
        )
    root = given.resolve()
    clang = root / "bin" / "clang"
    if not os.path.lexists(clang):
        lacks = "CMakeCache.txt and " if not (root / "CMakeCache.txt").exists() else ""
        raise UsageError(
            f"--from-build {path}: {root} has no {lacks}bin/clang, so it is no LLVM build "
            "tree or install prefix with clang. Give the folder ninja built clang in "
            "(`ninja -C <it> clang lld`) or installed it to (`ninja install` prefix)."
        )
    return root


def collect(root: Path, *, device: bool) -> LlvmTree:
    """The files an import takes from the tree at `root` (see the module's words)."""
    kind: Literal["build tree", "install prefix"] = (
        "build tree" if (root / "CMakeCache.txt").is_file() else "install prefix"
    )
    tree = LlvmTree(root, kind)
    required = REQUIRED + (DEVICE_REQUIRED if device else ())
    missing = [name for name in required if not os.path.lexists(root / "bin" / name)]
    if missing:
        bundles = ", and HIP objects are bundled by clang-offload-bundler with llvm-objcopy"
        targets = " ".join(["clang", "lld", *(DEVICE_REQUIRED if device else ())])
        raise UserError(
            f"The LLVM {kind} {root} lacks {', '.join('bin/' + m for m in missing)}: the "
            f"loop compiles with clang and clang++ and links device code with ld.lld"
            f"{bundles if device else ''}. Build them there (LLVM_ENABLE_PROJECTS=clang;lld, "
            f"then `ninja {targets}`) and import again."
        )
    present = [n for n in (*DEVICE_REQUIRED, *OPTIONAL) if os.path.lexists(root / "bin" / n)]
    for name in dict.fromkeys([*required, *present]):
        _take(tree, f"bin/{name}", tool=True)
    clang = tree.elf.get(_final(tree, "bin/clang"))
    if clang is None:
        raise UserError(
            f"{root}/bin/clang is not an ELF executable this tool can run (a script, or "
            "another machine's binary). Give the tree whose bin/clang is clang itself."
        )
    _libraries(tree)
    resources = sorted(p for p in (root / "lib" / "clang").glob("*/include") if p.is_dir())
    if not resources:
        raise UserError(
            f"The LLVM {kind} {root} has no clang resource headers (lib/clang/<N>/include): "
            "without them clang cannot compile anything that includes a system header. "
            "Build them there (`ninja clang-resource-headers`) and import again."
        )
    for version in sorted({p.parent for p in resources}):
        _walk(tree, version)
    return tree


def _inside(root: Path, path: str) -> bool:
    return os.path.commonpath([str(root), path]) == str(root)


def _take(tree: LlvmTree, rel: str, *, tool: bool) -> bool:
    """Take `rel` and, for a link, what it leads to inside the tree; False when a link
    leads out of it (refused for a tool, left out otherwise)."""
    path, links = str(tree.root / rel), {}
    for _ in range(_HOPS):
        if not os.path.islink(path):
            break
        target = os.readlink(path)
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if not _inside(tree.root, resolved):
            return _outside(tree, f"{os.path.relpath(path, tree.root)} → {target}", tool)
        links[os.path.relpath(path, tree.root)] = os.path.relpath(resolved, os.path.dirname(path))
        path = resolved
    else:
        raise UserError(f"{tree.root / rel} is a loop of links; fix the tree and import again.")
    real = os.path.realpath(path)  # a folder on the way may be a link too
    if not _inside(tree.root, real):
        return _outside(tree, f"{os.path.relpath(path, tree.root)} → {real}", tool)
    if not os.path.isfile(path):
        if tool:
            raise UserError(f"{tree.root / rel} leads to {path}, which is not a file.")
        return False
    tree.links |= links
    here = os.path.relpath(path, tree.root)
    if here not in tree.files:
        tree.files[here] = Path(path)
        facts = read_elf(Path(path))
        if facts is not None:
            tree.elf[here] = facts
    return True


def _outside(tree: LlvmTree, shown: str, tool: bool) -> bool:
    if tool:
        raise UserError(
            f"The LLVM {tree.kind} {tree.root} links {shown}, out of the tree. An import "
            "takes only what the tree holds, so it cannot take this tool: give the tree "
            "that built it."
        )
    tree.left_out.append(shown)
    return False


def _final(tree: LlvmTree, rel: str) -> str:
    """Where the links from `rel` end, as a prefix path."""
    for _ in range(_HOPS):
        if rel not in tree.links:
            return rel
        rel = os.path.normpath(os.path.join(os.path.dirname(rel), tree.links[rel]))
    return rel


def _libraries(tree: LlvmTree) -> None:
    """The shared libraries the taken binaries name that the tree holds, and theirs."""
    queue = deque(tree.elf)
    while queue:
        rel = queue.popleft()
        facts = tree.elf[rel]
        for soname in facts.needed:
            for folder in _search(tree, rel, facts):
                candidate = f"{folder}/{soname}"
                if not os.path.lexists(tree.root / candidate):
                    continue
                before = set(tree.elf)
                _take(tree, candidate, tool=False)
                queue.extend(set(tree.elf) - before)
                break


def _search(tree: LlvmTree, rel: str, facts: ElfFacts) -> list[str]:
    """Folders of the tree where the loader would look for a library of `rel`: its
    `$ORIGIN`-relative RUNPATH inside the tree, then lib/ (an install's own libraries)."""
    found = []
    for entry in facts.runpath:
        match = re.match(r"^\$(?:ORIGIN|\{ORIGIN\})(/.*)?$", entry)
        if match:
            path = os.path.normpath(
                os.path.join(str(tree.root / rel), "..", "." + (match[1] or ""))
            )
            if _inside(tree.root, path):
                found.append(os.path.relpath(path, tree.root))
    return [*dict.fromkeys([*found, "lib"])]


def _walk(tree: LlvmTree, folder: Path) -> None:
    for top, dirs, names in os.walk(folder):
        for name in sorted(names) + sorted(d for d in dirs if os.path.islink(Path(top) / d)):
            _take(tree, os.path.relpath(Path(top) / name, tree.root), tool=False)


def content_sha256(files: dict[str, Path]) -> str:
    """sha256 over the files as they will lie in the prefix: the same digest as the LLVM
    toolchain's `CONTENT_FILE` (`find . -type f -print0 | sort -z | xargs -0 sha256sum |
    sha256sum` in the prefix), so the compile cache keys both kinds alike."""
    listing = hashlib.sha256()
    for rel in sorted(files, key=lambda r: ("./" + r).encode()):
        digest = hashlib.sha256()
        with files[rel].open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        listing.update(f"{digest.hexdigest()}  ./{rel}\n".encode())
    return listing.hexdigest()


@dataclass(frozen=True)
class ClangVersion:
    """What clang's `--version` first line says: `clang version 21.1.8 (https://github.com/
    llvm/llvm-project 2078da43…)`, or a vendor's `Debian clang version 21.1.8 (14)`."""

    version: str | None
    repository: str | None
    commit: str | None
    dirty: bool = False


def parse_clang_version(line: str) -> ClangVersion:
    match = re.search(r"clang version (\S+)(?:\s*\(([^()]*)\))?", line)
    if match is None:
        return ClangVersion(None, None, None)
    repository = commit = None
    dirty = False
    for word in (match[2] or "").split():
        hexed = re.fullmatch(r"([0-9a-f]{7,40})(-dirty)?", word)
        if hexed and commit is None:
            commit, dirty = hexed[1], bool(hexed[2])
        elif ("/" in word or ":" in word) and repository is None:
            repository = word
    return ClangVersion(match[1], repository, commit, dirty)


@dataclass(frozen=True)
class TreeCommit:
    """The LLVM commit of an import and where it was read (`clang --version`, or the
    checkout beside a build tree, whose HEAD may be newer than what was built)."""

    commit: str | None
    dirty: bool
    read_from: str | None


def find_commit(tree: LlvmTree, version_line: str) -> TreeCommit:
    """The commit clang names; else, for a build tree, its source checkout's HEAD."""
    said = parse_clang_version(version_line)
    if said.commit:
        return TreeCommit(said.commit, said.dirty, "clang --version")
    if tree.kind != "build tree":
        return TreeCommit(None, False, None)
    for source in (_cmake_source(tree.root), tree.root.parent):
        if source is None or not source.is_dir():
            continue
        head = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], source, check=False)
        if head.returncode != 0:
            continue
        status = git(["status", "--porcelain", "--untracked-files=no"], source, check=False)
        top = git(["rev-parse", "--show-toplevel"], source, check=False).stdout.decode().strip()
        return TreeCommit(
            head.stdout.decode().strip(), bool(status.stdout.strip()),
            f"HEAD of the checkout {top or source} (the tree may have been built earlier)",
        )  # fmt: skip
    return TreeCommit(None, False, None)


def _cmake_source(root: Path) -> Path | None:
    """The source folder the build tree was configured from (CMAKE_HOME_DIRECTORY)."""
    try:
        text = (root / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.+)$", text, re.MULTILINE)
    return Path(match[1].strip()) if match else None
