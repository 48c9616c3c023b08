"""A small llvm-project stand-in: a real git repository that the LLVM toolchain template builds.

Laid out like llvm-project (`llvm/CMakeLists.txt` is the top-level CMake project, `clang/`
and `lld/` are added through `LLVM_ENABLE_PROJECTS`), it compiles from C++ sources what
the template's `LLVM_DISTRIBUTION_COMPONENTS` name (clang with its clang++ symlink,
clang-resource-headers, clang-offload-bundler, lld with ld.lld, llvm-objdump,
llvm-readobj, llvm-readelf, and with `LLVM_LINK_LLVM_DYLIB` the libLLVM.so and
libclang-cpp.so the tools link), with LLVM's `distribution` and
`install-distribution[-stripped]` targets. A bare `clang --version` prints what real
clang prints (`CLANG_VC_REPOSITORY`/`CLANG_VC_REVISION`, or `LLVM_FORCE_VC_REVISION`);
everything else runs the distribution clang (and ld.lld, llvm-objdump, ...) found at
configure time, with the flags of `clang/lib/Driver/ExtraFlags.cpp` added: the knob that
stands for a compiler change. Sources: `tests/data/mini_llvm/` (see its README).

Commits use a fixed author, committer and dates, so a commit's hash depends only on its
content, message and parents.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SOURCES = Path(__file__).resolve().parent / "data" / "mini_llvm"
EXTRA_FLAGS = "clang/lib/Driver/ExtraFlags.cpp"
#: CLANG_VERSION_STRING: LLVMVersion.cmake's major.minor.patch and suffix.
CLANG_VERSION = "23.0.0git"
#: `ld.lld --version` (LLD_VERSION is the version without its suffix; no revision unless
#: LLVM's own VCSRevision.h names a repository and a revision, as in LLVM).
LLD_VERSION_LINE = "LLD 23.0.0 (compatible with GNU linkers)"
#: What `install-distribution` puts in the prefix with the template's components and
#: LLVM_LINK_LLVM_DYLIB=ON: files, and symlinks with their targets.
DISTRIBUTION_FILES = (
    "bin/clang", "bin/clang-offload-bundler", "bin/lld", "bin/llvm-objdump",
    "bin/llvm-readobj", "lib/clang/23/include/stdnoreturn.h", "lib/libLLVM.so.23.0git",
    "lib/libclang-cpp.so.23.0git",
)  # fmt: skip
DISTRIBUTION_SYMLINKS = {
    "bin/clang++": "clang", "bin/ld.lld": "lld", "bin/llvm-readelf": "llvm-readobj",
    "lib/libLLVM.so": "libLLVM.so.23.0git", "lib/libLLVM-23git.so": "libLLVM.so.23.0git",
    "lib/libclang-cpp.so": "libclang-cpp.so.23.0git",
}  # fmt: skip
INITIAL_MESSAGE = "Mini llvm-project: a clang driver that forwards to the distribution clang"
_EPOCH = 1767225600  # 2026-01-01T00:00:00Z; commit n is dated n minutes later

_EXTRA_FLAGS_CPP = """\
//===- ExtraFlags.cpp - What this compiler adds to a compilation -*- C++ -*-===//
//
// The stand-in for a backend change (written by tests/mini_llvm.py): host flags go to
// every host compilation, device flags to the device side of HIP/CUDA compilations
// (only those whose input path contains one of the device units, when any is named).
//
//===----------------------------------------------------------------------===//

#include "clang/Driver/ExtraFlags.h"

namespace clang {{
namespace driver {{

const std::vector<std::string> &extraHostFlags() {{
  static const std::vector<std::string> Flags = {{{host}}};
  return Flags;
}}

const std::vector<std::string> &extraDeviceFlags() {{
  static const std::vector<std::string> Flags = {{{device}}};
  return Flags;
}}

const std::vector<std::string> &extraDeviceUnits() {{
  static const std::vector<std::string> Units = {{{units}}};
  return Units;
}}

const std::vector<std::string> &extraCommonDeviceFlags() {{
  static const std::vector<std::string> Flags = {{{common}}};
  return Flags;
}}

}} // namespace driver
}} // namespace clang
"""


def version_line(revision: str, repository: str | None = None) -> str:
    """The first line of `clang --version`, as real clang words it.

    With `repository`: built with CLANG_VC_REPOSITORY=repository and
    CLANG_VC_REVISION=revision (the template's line), `clang version 23.0.0git
    (<repository> <revision>)`. Without: built with LLVM_FORCE_VC_REVISION=revision,
    `clang version 23.0.0git (<revision>)`.
    """
    if repository:
        return f"clang version {CLANG_VERSION} ({repository} {revision})"
    return f"clang version {CLANG_VERSION} ({revision})"


def tool_version_line(tool: str, revision: str, repository: str | None = None) -> str:
    """`<tool> --version` of clang's tools (clang-offload-bundler), as `version_line`."""
    return version_line(revision, repository).replace("clang version", f"{tool} version", 1)


def extra_flags_source(
    host_flags: Sequence[str] = (), device_flags: Sequence[str] = (),
    device_units: Sequence[str] = (), common_device_flags: Sequence[str] = (),
) -> str:  # fmt: skip
    """ExtraFlags.cpp adding these flags (each one command-line argument); with
    `device_units`, device flags only to compilations of inputs whose path contains one;
    `common_device_flags` to every device compilation, after its own flags."""
    return _EXTRA_FLAGS_CPP.format(
        host=_literals(host_flags), device=_literals(device_flags),
        units=_literals(device_units), common=_literals(common_device_flags),
    )  # fmt: skip


def _literals(flags: Sequence[str]) -> str:
    if isinstance(flags, str):
        raise TypeError(f"flags must be a sequence of arguments, not the string {flags!r}")
    for flag in flags:
        if not flag or any(c in flag for c in "\0\n\r"):
            raise ValueError(f"not a single command-line argument: {flag!r}")
    quoted = ('"' + flag.replace("\\", "\\\\").replace('"', '\\"') + '"' for flag in flags)
    return ", ".join(quoted)


@dataclass
class MiniLlvm:
    """The repository at `path`; `commit` and `edit` change the extra flags."""

    path: Path

    def git(self, *args: str) -> str:
        """Run git in the repository with the fixed identity and dates; its stdout."""
        count = self._commit_count()
        date = f"@{_EPOCH + 60 * count} +0000"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Mini LLVM",
            "GIT_AUTHOR_EMAIL": "mini-llvm@example.invalid",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": "Mini LLVM",
            "GIT_COMMITTER_EMAIL": "mini-llvm@example.invalid",
            "GIT_COMMITTER_DATE": date,
            "GIT_CONFIG_GLOBAL": os.devnull,  # no signing, hooks or templates of the user's
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
        result = subprocess.run(
            ["git", "-C", str(self.path), *args], env=env, capture_output=True, text=True
        )
        if result.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout.strip()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def commit(
        self, message: str, host_flags: Sequence[str] = (), device_flags: Sequence[str] = (),
        device_units: Sequence[str] = (), common_device_flags: Sequence[str] = (),
    ) -> str:  # fmt: skip
        """Rewrite ExtraFlags.cpp with these flags, commit it; the new commit's full hash."""
        self.edit(host_flags, device_flags, device_units, common_device_flags)
        self.git("add", "-A")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.head()

    def edit(
        self, host_flags: Sequence[str] = (), device_flags: Sequence[str] = (),
        device_units: Sequence[str] = (), common_device_flags: Sequence[str] = (),
    ) -> None:  # fmt: skip
        """Rewrite ExtraFlags.cpp and leave it uncommitted: a dirty working tree."""
        source = extra_flags_source(host_flags, device_flags, device_units, common_device_flags)
        (self.path / EXTRA_FLAGS).write_text(source)

    def _commit_count(self) -> int:
        if not (self.path / ".git").exists():
            return 0
        result = subprocess.run(
            ["git", "-C", str(self.path), "rev-list", "--count", "--all"],
            capture_output=True,
            text=True,
        )
        return int(result.stdout.strip() or 0) if result.returncode == 0 else 0


def make_mini_llvm(path: Path, message: str = INITIAL_MESSAGE) -> MiniLlvm:
    """A new repository at `path` (created; must not exist or be empty), one commit, no flags.

    Give another `message` for a repository whose hashes differ from every other one's
    (tests that must build, not reuse, a toolchain).
    """
    path.mkdir(parents=True, exist_ok=True)
    if any(path.iterdir()):
        raise FileExistsError(f"{path} is not empty")
    for source in sorted(SOURCES.rglob("*")):
        if source.is_file() and "__pycache__" not in source.parts:
            target = path / source.relative_to(SOURCES)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    repo = MiniLlvm(path)
    repo.git("init", "--quiet", "--initial-branch=main")
    repo.commit(message)
    return repo
