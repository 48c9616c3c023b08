"""Importing a real LLVM that is not the tool's own: Debian's clang 21, its prefix
/usr/lib/llvm-21 copied out of the sid builder of the Debian ROCm stack; and a build tree
as a developer has one, made by CMake and ninja from a checkout (the mini llvm-project,
`tests/mini_llvm.py`: LLVM's CMake, RUNPATH and library links, seconds to build).

On the ROCm platform (the same sid system) it becomes a toolchain image that compiles
the HIP bandwidth kernel for gfx1201 (and, with `-m full_compile`, GROMACS 2026.3's HIP
units in a real dev build from the compile cache the stable build filled), and `rebuild`
refuses it at once. On the
CPU platform, whose builder is Debian bookworm (glibc 2.36), the same LLVM is refused:
made whole with its libraries it needs sid's glibc 2.38 (a real mismatch, found before
any image is made); as the package installs it, its libraries are outside the prefix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator import engine as engine_api
from orchestrator.core.errors import UserError
from orchestrator.core.events import Event, Message
from orchestrator.images import builder, microbench
from orchestrator.images.gromacs import build_gromacs
from orchestrator.images.llvm_tree import collect, content_sha256
from orchestrator.images.provenance import load_lockfile
from orchestrator.images.toolchain import compiler_of
from orchestrator.images.toolchain_llvm import BUILD_LABEL, ensure_environment
from orchestrator.parsers.elf import dotted, newest, read_elf
from orchestrator.store.layout import lockfile_path
from orchestrator.workflows.build import CompilerSpec, toolchain_for

pytestmark = [pytest.mark.engine]

REPO = Path(__file__).resolve().parent.parent
PREFIX = "/usr/lib/llvm-21"
LIBRARIES = "/usr/lib/x86_64-linux-gnu"


def _copy_out(engine: Any, image: str, path: str, into: Path) -> None:
    """`docker cp` of `path` from `image` into the folder `into`, links kept as they are."""
    container = engine.containers.create(image, command=["true"])
    try:
        stream, _ = container.get_archive(path)
        with tempfile.TemporaryFile() as tmp:
            for chunk in stream:
                tmp.write(chunk)
            tmp.seek(0)
            with tarfile.open(fileobj=tmp) as tar:
                tar.extractall(into, filter="tar")
    finally:
        container.remove(force=True)


@pytest.fixture(scope="module")
def sid_llvm(
    engine: Any, rocm_settings: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """Debian sid's /usr/lib/llvm-21 as the package installs it (201 MB): its
    lib/libclang-cpp.so.21.1 links to ../../x86_64-linux-gnu/, out of the prefix."""
    sid = builder.ensure_builder(engine, rocm_settings)
    folder = tmp_path_factory.mktemp("sid-llvm")
    _copy_out(engine, sid.tag, PREFIX, folder)
    yield folder / "llvm-21"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def sid_llvm_whole(
    engine: Any, rocm_settings: Any, sid_llvm: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The same prefix made whole, as one carries an LLVM to another machine: its two
    libraries (libclang-cpp, libLLVM: 200 MB) copied into its lib/."""
    sid = builder.ensure_builder(engine, rocm_settings)
    folder = tmp_path_factory.mktemp("sid-llvm-whole")
    whole = folder / "llvm-21"
    shutil.copytree(sid_llvm, whole, symlinks=True)
    (whole / "lib" / "libclang-cpp.so.21.1").unlink()
    for name in ("libclang-cpp.so.21.1", "libLLVM.so.21.1"):
        _copy_out(engine, sid.tag, f"{LIBRARIES}/{name}", whole / "lib")
    yield whole
    shutil.rmtree(folder, ignore_errors=True)


def _toolchain_tags(engine: Any) -> set[str]:
    return {t for image in engine.images.list("gmxbench-toolchain") for t in image.tags}


def test_sid_llvm_on_bookworm_is_refused_before_any_image(
    engine: Any, cpu_settings: Any, sid_llvm_whole: Path
) -> None:
    """A real glibc mismatch: sid's libLLVM needs a newer glibc than bookworm's 2.36. The
    ELF needs name it, with both systems, before anything is copied into an image."""
    needed = newest(
        (read_elf(sid_llvm_whole / "lib" / "libLLVM.so.21.1") or pytest.fail("no ELF")).versions[
            "libc.so.6"
        ],
        "GLIBC_",
    )
    assert needed is not None and needed > (2, 36)
    tags = _toolchain_tags(engine)
    started = time.monotonic()
    with pytest.raises(UserError) as caught:
        toolchain_for(engine, cpu_settings, CompilerSpec("tree", str(sid_llvm_whole)))
    seconds = time.monotonic() - started
    message = caught.value.message
    print(f"\nrefused in {seconds:.1f} s: {message}")
    assert "\n" not in message
    assert message.startswith(
        f"The LLVM install prefix {sid_llvm_whole} was built for a newer system than the "
        "builder image gmxbench-builder:cpu-"
    )
    assert "(Debian GNU/Linux 12 (bookworm), glibc 2.36, libstdc++ up to GLIBCXX_3.4.30)" in message
    assert f"its lib/libLLVM.so.21.1 needs glibc {dotted(needed)} (GLIBC_{dotted(needed)})" in (
        message
    )
    assert "nothing was imported" in message and "--llvm <commit>" in message
    assert "in a container of the builder" in message
    assert _toolchain_tags(engine) == tags


def test_sid_prefix_as_installed_is_refused_saying_what_it_lacks(
    engine: Any, cpu_settings: Any, sid_llvm: Path
) -> None:
    """As the package installs it, the prefix holds no libLLVM: in the bookworm builder
    its clang does not start. The image made for the check is gone afterwards."""
    digest = content_sha256(collect(sid_llvm, device=False).files)
    made = f"gmxbench-toolchain:cpu-llvm-imported-{digest[:8]}"
    with pytest.raises(UserError) as caught:
        toolchain_for(engine, cpu_settings, CompilerSpec("tree", str(sid_llvm)))
    message = caught.value.message
    assert "\n" not in message
    assert message.startswith(
        f"The LLVM install prefix {sid_llvm} does not run in the builder image "
        "gmxbench-builder:cpu-"
    )
    assert "`bin/clang --version` stops with `bin/clang: error while loading shared " in message
    assert "libclang-cpp.so.21.1: cannot open shared object file" in message
    assert "libLLVM.so.21.1, libclang-cpp.so.21.1, which neither the tree nor" in message
    assert "lib/libclang-cpp.so.21.1 → ../../x86_64-linux-gnu/libclang-cpp.so.21.1" in message
    assert "`--package clang-<N>`" in message and "nothing was tagged" in message
    assert not engine.images.list(filters={"label": f"{BUILD_LABEL}={made}"})


def _said(events: list[Event]) -> list[str]:
    return [e.text for e in events if type(e) is Message]


@dataclass
class Imported:
    """Debian's clang imported as a toolchain image, and what the import said."""

    tag: str
    compiler: Any
    prefix: str


@pytest.fixture(scope="module")
def imported(engine: Any, rocm_settings: Any, rocm_stable: Any, sid_llvm: Path) -> Imported:
    """`--toolchain <folder>` (what `bench` and `build` pass on) on Debian's clang."""
    events: list[Event] = []
    started = time.monotonic()
    tag = toolchain_for(
        engine, rocm_settings, CompilerSpec("toolchain", str(sid_llvm)), emit=events.append
    )
    print(f"\nimport: {time.monotonic() - started:.1f} s; " + "; ".join(_said(events)))
    assert tag is not None
    compiler = compiler_of(engine, tag)
    return Imported(tag, compiler, compiler.cxx.rsplit("/bin/", 1)[0])


def _rebuild_refuses(rocm_settings: Any, target: str, said: str, imported_from: str,
                     imported_at: str) -> None:  # fmt: skip
    """`rebuild <target>` refuses at once, in one line, saying where the LLVM came from."""
    env = {
        **os.environ, "ORCH_PLATFORM": "rocm", "ORCH_ROCM_STACK": "debian",
        "ORCH_RESULTS_DIR": str(rocm_settings.results_dir),
    }  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "rebuild", target],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    seconds = time.monotonic() - started
    message = proc.stderr.strip()
    print(f"rebuild {target}: {seconds:.1f} s: {message}")
    assert proc.returncode == 1 and seconds < 30, proc.stderr
    assert message.startswith(f"error: {target} {said} {imported_from} at {imported_at}")
    assert "`rebuild` cannot make its compiler again" in message and "Traceback" not in message
    assert "recorded no LLVM commit" in message and len(message.splitlines()) == 1


def test_imported_debian_llvm_compiles_hip_and_rebuild_refuses_it(
    engine: Any, rocm_settings: Any, sid_llvm: Path, imported: Imported
) -> None:
    """The import is Debian's clang at a content-named prefix; a second import is the same
    image; it compiles the HIP bandwidth kernel for gfx1201 (a microbenchmark image: the same
    toolchain path a GROMACS dev build takes, in seconds, not minutes); `rebuild` of the
    toolchain refuses at once, building nothing."""
    tag, compiler, prefix = imported.tag, imported.compiler, imported.prefix
    digest = compiler.content_sha256 or ""
    assert tag == f"gmxbench-toolchain:rocm-llvm-21.1.8-imported-{digest[:8]}"
    # this session's folder, or an earlier session's: the same files are the same image
    imported_from = compiler.imported_from or ""
    assert imported_from.endswith("/llvm-21") and compiler.imported_at
    assert compiler.llvm_commit is None and compiler.llvm_commit_from is None  # Debian's says none
    assert compiler.version and compiler.version.startswith("Debian clang version 21.1.8")
    assert prefix == f"/opt/llvm-imported-{digest[:12]}"
    # the digest the LLVM toolchain's build script writes, taken again over the image's prefix
    script = (
        f"cd {prefix} && cat .content-sha256 && find . -type f ! -name .content-sha256 "
        "-print0 | sort -z | xargs -0 sha256sum | sha256sum"
    )
    code, out = engine_api.run_capture(engine, tag, ["sh", "-c", script])
    assert code == 0 and out.split()[:2] == [digest, digest], out

    again: list[Event] = []
    started = time.monotonic()
    folder = CompilerSpec("toolchain", str(sid_llvm))
    assert toolchain_for(engine, rocm_settings, folder, emit=again.append) == tag
    assert time.monotonic() - started < 60
    assert any(text.endswith("): reusing it") for text in _said(again)), _said(again)

    image = microbench.ensure(engine, rocm_settings, tag, "bandwidth")
    assert image.compiler.api == "hip" and image.compiler.compiler == f"{prefix}/bin/clang++"
    assert "--offload-arch=gfx1201" in image.compiler.flags
    unbundle = (  # the device code is there, for gfx1201, as the stable image's is
        "set -e; cd /tmp; cp /opt/gmxbench/kernels/bin/bandwidth .; "
        "/usr/lib/llvm-21/bin/llvm-objdump --offloading bandwidth > /dev/null; ls bandwidth.*"
    )
    code, out = engine_api.run_capture(engine, image.id, ["sh", "-c", unbundle])
    assert code == 0 and "gfx1201" in out, out
    _rebuild_refuses(rocm_settings, tag, "is an LLVM toolchain imported from", imported_from,
                     compiler.imported_at)  # fmt: skip


@pytest.mark.full_compile
def test_imported_debian_llvm_builds_gromacs_and_rebuild_refuses_it(
    engine: Any, rocm_settings: Any, imported: Imported
) -> None:
    """A GROMACS dev build compiles its HIP units with the imported clang; `rebuild` of
    that build refuses at once. One more GROMACS build (~3 min from the compile cache):
    CI's dev builds already cover the toolchain-image path, so this runs on request."""
    compiler, prefix = imported.compiler, imported.prefix
    record = build_gromacs(engine, rocm_settings, "dev", toolchain_tag=imported.tag)
    assert record.compiler == f"{prefix}/bin/clang++" and record.toolchain == imported.tag
    assert record.imported_from == compiler.imported_from
    assert record.imported_at == compiler.imported_at
    lock = load_lockfile(lockfile_path(rocm_settings.results_dir, record.tag))
    assert lock.record.imported_from == compiler.imported_from
    assert lock.gmx_version_info["GPU support"] == "HIP"
    print(f"dev build: {lock.build_seconds} s, compile cache {lock.compile_cache}")
    cache = f"/opt/gromacs/{record.build}/CMakeCache.txt"
    code, line = engine_api.run_capture(engine, record.tag, ["grep", "^CMAKE_HIP_COMPILER:", cache])
    assert code == 0 and line.strip().endswith(f"={prefix}/bin/clang++"), line
    _rebuild_refuses(rocm_settings, record.tag, "was built with an LLVM imported from",
                     compiler.imported_from or "", compiler.imported_at)  # fmt: skip
    assert engine_api.image(engine, f"gmxbench-rebuild:{record.build}") is None


def _cmake_build(engine: Any, image: str, checkout: Path, *options: str) -> None:
    """Configure and build the mini llvm-project as a developer does, in `checkout`/build
    (mounted at its own path, so CMakeCache.txt names the checkout as it is here)."""
    script = (
        "set -e; cmake -S llvm -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "
        "'-DLLVM_ENABLE_PROJECTS=clang;lld' '-DLLVM_TARGETS_TO_BUILD=AMDGPU;X86' "
        f"-DLLVM_LINK_LLVM_DYLIB=ON -DLLVM_USE_LINKER=lld {' '.join(options)} >/dev/null; "
        "ninja -C build clang lld llvm-objdump llvm-readobj llvm-readelf clang-offload-bundler "
        "clang-resource-headers >/dev/null"
    )
    out = engine.containers.run(
        image, ["bash", "-c", script], remove=True, network_disabled=True,
        user=f"{os.getuid()}:{os.getgid()}", working_dir=str(checkout),
        volumes={str(checkout): {"bind": str(checkout), "mode": "rw"}},
        environment={"HOME": "/tmp"}, stderr=True,
    )  # fmt: skip
    assert (checkout / "build" / "bin" / "clang").exists(), out


def test_a_build_tree_is_imported_with_its_commit(
    engine: Any, cpu_settings: Any, tmp_path: Path
) -> None:
    """`--from-build <checkout>/build`: its tools and the shared libraries their RUNPATH
    ($ORIGIN/../lib) names are taken, and load from the prefix in the image; the commit
    is the one clang names, or with LLVM_APPEND_VC_REV=OFF the checkout's HEAD."""
    from mini_llvm import make_mini_llvm

    repo = make_mini_llvm(tmp_path / "llvm-project", message="a developer's build tree")
    environment = ensure_environment(engine, cpu_settings)
    _cmake_build(engine, environment.tag, repo.path)
    made: list[str] = []
    try:
        tag = toolchain_for(engine, cpu_settings, CompilerSpec("tree", str(repo.path / "build")))
        assert tag is not None
        made.append(tag)
        compiler = compiler_of(engine, tag)
        digest = compiler.content_sha256 or ""
        assert tag == f"gmxbench-toolchain:cpu-llvm-{repo.head()[:8]}-imported-{digest[:8]}"
        assert compiler.llvm_commit == repo.head()[:8] and not compiler.llvm_dirty
        assert compiler.llvm_commit_from == "clang --version"
        assert compiler.imported_from == str(repo.path / "build")
        assert compiler.version and repo.head() in compiler.version
        prefix = compiler.cxx.rsplit("/bin/", 1)[0]
        code, out = engine_api.run_capture(engine, tag, ["ldd", f"{prefix}/bin/clang"])
        assert code == 0 and f"libclang-cpp.so.23.0git => {prefix}/bin/../lib/" in out, out
        code, out = engine_api.run_capture(engine, tag, ["ls", f"{prefix}/lib"])
        assert out.split() == ["clang", "libLLVM.so.23.0git", "libclang-cpp.so.23.0git"], out

        _cmake_build(engine, environment.tag, repo.path, "-DLLVM_APPEND_VC_REV=OFF")
        tag = toolchain_for(engine, cpu_settings, CompilerSpec("tree", str(repo.path / "build")))
        assert tag is not None
        made.append(tag)
        compiler = compiler_of(engine, tag)
        assert compiler.version == "clang version 23.0.0git"  # names no commit
        assert compiler.llvm_commit == repo.head()[:8]
        assert compiler.llvm_commit_from == (
            f"HEAD of the checkout {repo.path} (the tree may have been built earlier)"
        )
    finally:
        for tag in made:  # this session's own: the tree's path is in its clang
            engine_api.remove_image(engine, tag)
