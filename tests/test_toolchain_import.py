"""Importing an LLVM the user built (`build toolchain --from-build`), without an engine:
reading clang's `--version`, checking the path, choosing the tree's files, their digest,
its commit, the ELF needs, and the paragraphs the import and `rebuild` say.

The trees here are made of this machine's own ELF files (a real binary and the real
library it links), so the ELF reading and the library search meet real files; the
engine tests (test_toolchain_import_e2e.py) import Debian's clang for real.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.settings import load_settings
from orchestrator.images.llvm_tree import (
    collect,
    content_sha256,
    find_commit,
    parse_clang_version,
    validate,
)
from orchestrator.images.provenance import ImageRecord, Lockfile, save_lockfile
from orchestrator.images.toolchain_check import BuilderSystem, refuse_other_system
from orchestrator.images.toolchain_import import (
    cannot_rebuild,
    commit_label,
    is_tree_path,
    write_archive,
)
from orchestrator.images.toolchain_llvm import CONTENT_FILE
from orchestrator.parsers.elf import newest, read_elf
from orchestrator.workflows.build import BUILD_COMPILER, CompilerSpec, toolchain_for
from orchestrator.workflows.rebuild import rebuild

REPO = Path(__file__).resolve().parent.parent
COMMIT = "2078da43e25a4623cab2d0d60decddf709aaea28"


@pytest.mark.parametrize(
    ("line", "version", "repository", "commit", "dirty"),
    [
        (f"clang version 21.1.8 (https://github.com/llvm/llvm-project {COMMIT})",
         "21.1.8", "https://github.com/llvm/llvm-project", COMMIT, False),
        ("Debian clang version 21.1.8 (14)", "21.1.8", None, None, False),
        ("clang version 22.0.0git", "22.0.0git", None, None, False),
        ("clang version 22.0.0git (/home/dev/llvm-project d7fead0f-dirty)",
         "22.0.0git", "/home/dev/llvm-project", "d7fead0f", True),
        ("AMD clang version 19.0.0git (https://github.com/RadeonOpenCompute/llvm-project "
         "roc-6.3.0 24455 f9ab5a0b4e57a8bc3b6f7a0c4b0e1c2d3e4f5a6b)",
         "19.0.0git", "https://github.com/RadeonOpenCompute/llvm-project",
         "f9ab5a0b4e57a8bc3b6f7a0c4b0e1c2d3e4f5a6b", False),
        ("gcc (Debian 12.2.0-14) 12.2.0", None, None, None, False),
    ],
)  # fmt: skip
def test_clang_version_lines(
    line: str, version: str | None, repository: str | None, commit: str | None, dirty: bool
) -> None:
    said = parse_clang_version(line)
    assert (said.version, said.repository, said.commit, said.dirty) == (
        version, repository, commit, dirty,
    )  # fmt: skip


def test_tag_names_the_commit_else_the_version() -> None:
    assert commit_label(COMMIT, False, "") == "2078da43"
    assert commit_label(COMMIT, True, "") == "2078da43-dirty"
    assert commit_label(None, False, "Debian clang version 21.1.8 (14)") == "21.1.8"
    assert commit_label(None, False, "clang version 22.0.0+git~x") == "22.0.0_git_x"
    assert commit_label(None, False, "") == "unknown"


def test_a_path_is_told_from_an_image() -> None:
    assert is_tree_path("/usr/lib/llvm-21") and is_tree_path("~/llvm-project/build")
    assert is_tree_path("./build") and is_tree_path("..") and is_tree_path(str(REPO))
    assert not is_tree_path("gmxbench-toolchain:cpu-clang-16")
    assert not is_tree_path("registry.example/team/toolchain:llvm-1")


def test_wrong_paths_are_one_paragraph_at_once(tmp_path: Path) -> None:
    afile = tmp_path / "clang"
    afile.write_text("")
    (tmp_path / "empty").mkdir()
    cases = [
        (str(tmp_path / "gone"), "no such directory"),
        (str(afile), "is a file, not a directory"),
        (str(tmp_path / "empty"), "has no CMakeCache.txt and bin/clang"),
    ]
    for path, said in cases:
        started = time.monotonic()
        with pytest.raises(UsageError) as caught:
            validate(path)
        assert time.monotonic() - started < 1
        message = caught.value.message
        assert said in message and path in message and "\n" not in message, message


def _linked_binary() -> tuple[Path, str, Path]:
    """A binary of this machine that links a library besides libc, that library's
    soname, and its file: the real shape of clang and libLLVM."""
    folders = [Path("/lib/x86_64-linux-gnu"), Path("/usr/lib/x86_64-linux-gnu"),
               Path("/lib64"), Path("/usr/lib64"), Path("/lib"), Path("/usr/lib")]  # fmt: skip
    for candidate in ("/bin/ls", "/usr/bin/git", "/usr/bin/ssh", sys.executable):
        binary = Path(candidate).resolve()
        facts = read_elf(binary) if binary.is_file() else None
        for soname in facts.needed if facts else ():
            if soname.startswith(("libc.so", "libm.so", "ld-linux")):
                continue
            for folder in folders:
                if (folder / soname).is_file():
                    return binary, soname, (folder / soname).resolve()
    raise AssertionError("no binary here links a library besides libc")


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, str]:
    """An install prefix in LLVM's shape: clang-21 with clang and clang++ linking to it,
    ld.lld to lld, the library clang links in lib/, clang's resource headers."""
    binary, soname, library = _linked_binary()
    root = tmp_path / "llvm"
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "clang" / "21" / "include").mkdir(parents=True)
    shutil.copy2(binary, root / "bin" / "clang-21")
    shutil.copy2(binary, root / "bin" / "lld")
    shutil.copy2(library, root / "lib" / soname)
    (root / "bin" / "clang").symlink_to("clang-21")
    (root / "bin" / "clang++").symlink_to("clang")
    (root / "bin" / "ld.lld").symlink_to(root / "bin" / "lld")  # absolute, inside
    (root / "lib" / "clang" / "21" / "include" / "stddef.h").write_text("/* stddef */\n")
    (root / "lib" / "clang" / "21" / "include" / "outside.h").symlink_to("/etc/hostname")
    (root / "lib" / "unused.so").write_bytes(b"not taken: no binary links it")
    return root, soname


def test_the_tree_gives_tools_their_libraries_and_headers(tree: tuple[Path, str]) -> None:
    root, soname = tree
    found = collect(validate(str(root)), device=False)
    assert found.kind == "install prefix"
    assert set(found.files) == {
        "bin/clang-21", "bin/lld", f"lib/{soname}", "lib/clang/21/include/stddef.h",
    }  # fmt: skip
    assert found.links == {"bin/clang": "clang-21", "bin/clang++": "clang", "bin/ld.lld": "lld"}
    assert found.left_out == ["lib/clang/21/include/outside.h → /etc/hostname"]
    assert found.holds(soname) == f"lib/{soname}"
    assert "libc.so.6" in found.elf["bin/clang-21"].needed


def test_a_tool_leading_out_of_the_tree_is_refused(tree: tuple[Path, str]) -> None:
    root, _ = tree
    (root / "bin" / "ld.lld").unlink()
    (root / "bin" / "ld.lld").symlink_to(shutil.which("true") or "/bin/true")
    with pytest.raises(UserError, match=r"links bin/ld\.lld → .*out of the tree"):
        collect(root, device=False)


def test_a_library_leading_out_of_the_tree_is_left_out(tree: tuple[Path, str]) -> None:
    root, soname = tree
    real = root / "lib" / soname
    real.rename(root.parent / soname)
    real.symlink_to(f"../../{soname}")
    found = collect(root, device=False)
    assert f"lib/{soname}" not in found.files and f"lib/{soname}" not in found.links
    assert found.left_out[0] == f"lib/{soname} → ../../{soname}"


def test_missing_tools_are_named(tree: tuple[Path, str]) -> None:
    root, _ = tree
    with pytest.raises(UserError, match=r"lacks bin/clang-offload-bundler, bin/llvm-objcopy"):
        collect(root, device=True)
    (root / "lib" / "clang" / "21" / "include" / "stddef.h").unlink()
    (root / "lib" / "clang" / "21" / "include" / "outside.h").unlink()
    (root / "lib" / "clang" / "21" / "include").rmdir()
    with pytest.raises(UserError, match=r"no clang resource headers"):
        collect(root, device=False)


def test_digest_and_archive_are_the_llvm_toolchains(tree: tuple[Path, str], tmp_path: Path) -> None:
    """The digest is the one `toolchain-llvm.sh.j2` writes for a built LLVM (the same
    shell pipeline over the prefix the archive unpacks to), modes and links kept."""
    root, _ = tree
    found = collect(root, device=False)
    digest = content_sha256(found.files)
    archive = tmp_path / "llvm.tar"
    write_archive(found, "/opt/llvm-imported-x", digest, archive)
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        tar.extractall(tmp_path / "out", filter="tar")
    prefix = tmp_path / "out" / "opt" / "llvm-imported-x"
    assert (prefix / CONTENT_FILE).read_text() == digest + "\n"
    assert members["opt/llvm-imported-x/bin/clang-21"].mode == 0o755
    assert members["opt/llvm-imported-x/lib/clang/21/include/stddef.h"].mode == 0o644
    assert members["opt/llvm-imported-x/bin/clang++"].linkname == "clang"
    assert all(m.mtime == 0 and m.uid == 0 for m in members.values())
    (prefix / CONTENT_FILE).unlink()  # the build script hashes before writing it
    shell = subprocess.run(
        "find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1",
        shell=True, cwd=prefix, capture_output=True, text=True, check=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert shell.stdout.strip() == digest
    assert (prefix / "bin" / "clang").resolve() == (prefix / "bin" / "clang-21")


def _git(*args: str, cwd: Path) -> str:
    who = {f"GIT_{role}_{what}": value for role in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", "t"), ("EMAIL", "t@t.invalid"))}  # fmt: skip
    env = {**who, "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_commit_from_clang_else_the_checkout_beside_the_build_tree(
    tree: tuple[Path, str], tmp_path: Path
) -> None:
    root, _ = tree
    found = collect(root, device=False)
    said = find_commit(found, f"clang version 21.1.8 (https://x/llvm-project {COMMIT})")
    assert (said.commit, said.read_from) == (COMMIT, "clang --version")
    assert find_commit(found, "Debian clang version 21.1.8 (14)").commit is None  # a prefix

    checkout = tmp_path / "llvm-project"
    (checkout / "llvm").mkdir(parents=True)
    (checkout / "llvm" / "CMakeLists.txt").write_text("project(LLVM)\n")
    _git("init", "-q", cwd=checkout)
    _git("add", ".", cwd=checkout)
    _git("commit", "-qm", "one", cwd=checkout)
    head = _git("rev-parse", "HEAD", cwd=checkout)
    build = tmp_path / "elsewhere" / "build"  # not inside the checkout: CMakeCache says where
    shutil.copytree(root, build, symlinks=True)
    (build / "bin" / "ld.lld").unlink()  # the fixture's absolute link names the first tree
    (build / "bin" / "ld.lld").symlink_to("lld")
    (build / "CMakeCache.txt").write_text(
        f"CMAKE_BUILD_TYPE:STRING=Release\nCMAKE_HOME_DIRECTORY:INTERNAL={checkout}/llvm\n"
    )
    in_build = collect(build, device=False)
    assert in_build.kind == "build tree"
    said = find_commit(in_build, "clang version 22.0.0git")
    assert said.commit == head and not said.dirty
    assert said.read_from and said.read_from.startswith(f"HEAD of the checkout {checkout}")
    (checkout / "llvm" / "CMakeLists.txt").write_text("project(LLVM CXX)\n")
    assert find_commit(in_build, "clang version 22.0.0git").dirty


def test_elf_needs_are_read_as_readelf_reads_them(tree: tuple[Path, str]) -> None:
    root, soname = tree
    facts = read_elf(root / "bin" / "clang-21")
    assert facts is not None and soname in facts.needed
    assert newest(facts.versions["libc.so.6"], "GLIBC_") is not None
    assert read_elf(root / "lib" / "clang" / "21" / "include" / "stddef.h") is None
    readelf = shutil.which("readelf")
    if readelf:  # binutils, where the machine has them: the same libraries and versions
        out = subprocess.run([readelf, "-d", "-V", str(root / "bin" / "clang-21")],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert [line.split("[")[1].rstrip("]") for line in out.splitlines()
                if "(NEEDED)" in line] == list(facts.needed)  # fmt: skip
        for names in facts.versions.values():
            assert all(f"Name: {name}" in out for name in names)


def test_a_newer_systems_tree_is_refused_naming_both(tree: tuple[Path, str]) -> None:
    root, _ = tree
    found = collect(root, device=False)
    glibc = newest(found.elf["bin/clang-21"].versions["libc.so.6"], "GLIBC_")
    assert glibc is not None
    older = BuilderSystem("gmxbench-builder:cpu-abc", "Debian GNU/Linux 9 (stretch)",
                          (glibc[0], glibc[1] - 1), (3, 4, 22))  # fmt: skip
    with pytest.raises(UserError) as caught:
        refuse_other_system(found, older)
    message = caught.value.message
    assert "\n" not in message
    assert f"{root} was built for a newer system than the builder image " in message
    assert "gmxbench-builder:cpu-abc (Debian GNU/Linux 9 (stretch), glibc" in message
    assert f"needs glibc {glibc[0]}.{glibc[1]} (GLIBC_{glibc[0]}.{glibc[1]})" in message
    assert "nothing was imported" in message and "--llvm <commit>" in message
    same = BuilderSystem("b", "this machine", (99,), (99,))
    refuse_other_system(found, same)  # no complaint


def _imported_lock(**record: Any) -> Lockfile:
    fields = {"tag": "gromacs:dev-llvm-2078da43-imported-a330b929-20261127-2100",
              "id": "sha256:" + "1" * 64, "kind": "gromacs", "llvm_commit": "2078da43",
              "imported_from": "/home/dev/llvm-project/build",
              "imported_at": "2026-11-27T21:00:00Z", "llvm_commit_from": "clang --version",
              **record}  # fmt: skip
    return Lockfile(
        record=ImageRecord(**fields), template="gromacs-dev-rocm",
        context={"prefix": "/opt/gromacs/x"}, dockerfile_sha256="0" * 64, dockerfile="FROM x\n",
    )  # fmt: skip


def test_rebuild_refuses_an_imported_compiler_before_anything(tmp_path: Path) -> None:
    """From the lockfile alone: no engine is asked, nothing is built."""
    settings = load_settings(platform="cpu", results_dir=tmp_path)
    path = save_lockfile(tmp_path, _imported_lock())
    started = time.monotonic()
    with pytest.raises(UserError) as caught:
        rebuild(None, settings, str(path))  # type: ignore[arg-type]  # no engine is needed
    assert time.monotonic() - started < 1
    message = caught.value.message
    assert message.startswith(
        "gromacs:dev-llvm-2078da43-imported-a330b929-20261127-2100 was built with an LLVM "
        "imported from /home/dev/llvm-project/build at 2026-11-27T21:00:00Z"
    )
    assert "`rebuild` cannot make its compiler again" in message and "\n" not in message
    assert "`nox -s build -- dev --llvm 2078da43`" in message


def test_the_refusal_without_a_commit_says_so() -> None:
    lock = _imported_lock(kind="toolchain", tag="gmxbench-toolchain:rocm-llvm-21.1.8-imported-a",
                          llvm_commit=None, llvm_commit_from=None)  # fmt: skip
    message = cannot_rebuild(lock.record)
    assert message.startswith("gmxbench-toolchain:rocm-llvm-21.1.8-imported-a is an LLVM "
                              "toolchain imported from /home/dev/llvm-project/build")  # fmt: skip
    assert "recorded no LLVM commit" in message and "--llvm <commit>" in message


def test_one_compiler_source_at_a_time() -> None:
    settings = load_settings(platform="cpu")
    with pytest.raises(UsageError, match="one compiler at most \\(got --llvm and --from-build"):
        BUILD_COMPILER.value({"llvm": "d7fead0f", "from_build": "/x"})
    with pytest.raises(UsageError, match="no such directory"):  # a path, checked as one
        toolchain_for(None, settings, CompilerSpec("toolchain", "/no/such/llvm/build"))  # type: ignore[arg-type]


def test_build_says_a_wrong_path_before_asking_the_engine(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "ORCH_PLATFORM": "cpu", "ORCH_RESULTS_DIR": str(tmp_path),
           "DOCKER_HOST": "unix:///nonexistent.sock"}  # fmt: skip  # no engine answers
    gone = tmp_path / "llvm-project" / "build"
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "toolchain", "--from-build", str(gone)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"error: --from-build {gone}: no such directory. Give the LLVM build tree (the folder "
        "with CMakeCache.txt and bin/clang, e.g. ~/llvm-project/build) or an install prefix "
        "(bin/clang, lib/)."
    )
