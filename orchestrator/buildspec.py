"""What goes into a GROMACS build: compiler, source, CMake flags, names and template context.

Stable and dev builds share everything here but the compiler; keeping the flag lists in
one place makes that property easy to check (and to label on the image).
"""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel

from orchestrator.errors import UsageError
from orchestrator.settings import GromacsSource, Settings

Kind = Literal["stable", "dev"]

#: What hipcc injects; going through clang directly puts these on us (field report).
HIP_DEV_FLAGS = (
    "-fPIC -fno-gpu-rdc -ffast-math -munsafe-fp-atomics -fdenormal-fp-math=ieee "
    "-fcuda-flush-denormals-to-zero -fno-slp-vectorize -Wno-unused-command-line-argument "
    "-Wno-pass-failed"
)

#: Fixed paths inside every build, so rebuilds embed identical strings; and mapped
#: away in `__FILE__` and debug info, so the binaries do not depend on them at all.
SOURCE_DIR = "/src/gromacs"
BUILD_DIR = "/build/gromacs"
PREFIX_MAP = f"-ffile-prefix-map={SOURCE_DIR}=. -ffile-prefix-map={BUILD_DIR}=build"


class Compiler(BaseModel):
    """The compiler of a build; `name` is its short id in tags (gcc12, clang16, llvm-d7fead0f)."""

    name: str
    cc: str
    cxx: str
    hip: str | None = None
    version: str | None = None
    toolchain_image: str | None = None
    toolchain_id: str | None = None
    llvm_commit: str | None = None
    llvm_dirty: bool = False
    package: str | None = None


class SourceSpec(BaseModel):
    """GROMACS source pinned as far as it can be before the build (sha256 is known after)."""

    kind: Literal["git", "deb-src", "tarball"]
    url: str
    ref: str
    package: str | None = None
    commit: str | None = None
    sha256: str | None = None

    @classmethod
    def from_setting(cls, source: GromacsSource) -> SourceSpec:
        if source.url.startswith("git+"):
            return cls(kind="git", url=source.url.removeprefix("git+"), ref=source.ref)
        if source.url.startswith("deb-src:"):
            package = source.url.removeprefix("deb-src:")
            return cls(kind="deb-src", url=source.url, ref=source.ref, package=package)
        return cls(kind="tarball", url=source.url, ref=source.ref)

    @property
    def revision(self) -> str | None:
        """The most exact identity known: a git commit, else the tarball's sha256."""
        if self.commit:
            return self.commit
        return f"sha256:{self.sha256}" if self.sha256 else None


def package_compiler(package: str) -> tuple[list[str], Compiler]:
    """Debian/Ubuntu packages and compiler for `clang-N` or `gcc-N`."""
    match = re.fullmatch(r"(clang|gcc)-(\d+)", package)
    if not match:
        raise UsageError(
            f"--package {package!r} is not a compiler package this tool knows. "
            f"Use clang-<N> (e.g. clang-16) or gcc-<N> (e.g. gcc-12)."
        )
    family, major = match.groups()
    if family == "clang":
        return [f"clang-{major}", f"libomp-{major}-dev"], Compiler(
            name=f"clang{major}", cc=f"clang-{major}", cxx=f"clang++-{major}", package=package
        )
    return [f"gcc-{major}", f"g++-{major}"], Compiler(
        name=f"gcc{major}", cc=f"gcc-{major}", cxx=f"g++-{major}", package=package
    )


def dev_build_name(compiler: Compiler, when: datetime | None = None) -> str:
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%d-%H%M")
    return f"dev-{compiler.name}-{stamp}"


def stable_build_name(settings: Settings, compiler: Compiler) -> str:
    if settings.active_platform == "rocm":
        return f"stable-rocm{settings.rocm_version}"
    return f"stable-cpu-{compiler.name}"


def prefix_for(build_name: str) -> str:
    return f"/opt/gromacs/{build_name}"


def cmake_flags(settings: Settings, kind: Kind, compiler: Compiler, prefix: str) -> list[str]:
    """The exact CMake arguments: the field report's recipe, per platform and kind."""
    common_tail = [
        f"-DCMAKE_C_FLAGS={PREFIX_MAP}",
        f"-DCMAKE_CXX_FLAGS={PREFIX_MAP}",
        "-DGMX_MPI=OFF",
        "-DGMX_OPENMP=ON",
        "-DGMX_BUILD_OWN_FFTW=OFF",
        f"-DCMAKE_INSTALL_PREFIX={prefix}",
        "-DGMX_DOUBLE=OFF",
        f"-DGMX_SIMD={settings.simd}",
        "-DGMX_USE_RDTSCP=ON",
    ]
    if settings.active_platform == "cpu":
        return [
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_C_COMPILER={compiler.cc}",
            f"-DCMAKE_CXX_COMPILER={compiler.cxx}",
            "-DGMX_GPU=OFF",
            *common_tail,
            "-DBUILD_TESTING=OFF",
            "-DGMXAPI=OFF",
            "-DGMX_INSTALL_NBLIB_API=OFF",
        ]
    rocm, arch = settings.rocm_path, settings.target_arch
    flags = [
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DGMX_GPU=HIP",
        f"-DCMAKE_HIP_COMPILER={compiler.hip}",
        f"-DCMAKE_HIP_COMPILER_ROCM_ROOT={rocm}",
    ]
    if kind == "dev":  # stable keeps the vendor's HIP defaults: no CMAKE_HIP_FLAGS at all
        hip_flags = (
            f"--rocm-path={rocm} --offload-arch={arch} {HIP_DEV_FLAGS} "
            f"--rocm-device-lib-path={rocm}/lib/llvm/amdgcn/bitcode {PREFIX_MAP}"
        )
        flags.append(f"-DCMAKE_HIP_FLAGS={hip_flags}")
    flags += [f"-DGMX_HIP_TARGET_ARCH={arch}"]
    if kind == "dev":
        flags += [f"-DCMAKE_HIP_ARCHITECTURES={arch}", f"-DGPU_TARGETS={arch}"]
    flags += [f"-DCMAKE_PREFIX_PATH={rocm}", *common_tail]
    if kind == "dev":
        flags.append(f"-DHIPCC_HAS_TARGET_ARCH_{arch}=TRUE")
    return flags


def shell_words(flags: list[str]) -> list[str]:
    """Quote flags for a RUN line, keeping `-G Ninja` together on one line."""
    words: list[str] = []
    for flag in flags:
        if words and words[-1] == "-G":
            words[-1] = f"-G {shlex.quote(flag)}"
        else:
            words.append(shlex.quote(flag))
    return words


def gromacs_context(
    settings: Settings,
    *,
    kind: Kind,
    builder_image: str,
    compiler_image: str,
    compiler: Compiler,
    source: SourceSpec,
    build_name: str,
    source_date_epoch: int,
) -> dict[str, Any]:
    """Template variables of `gromacs-<kind>-<platform>`; also stored in the lockfile."""
    prefix = prefix_for(build_name)
    flags = cmake_flags(settings, kind, compiler, prefix)
    return {
        "builder_image": builder_image,
        "compiler_image": compiler_image,
        "source": source.model_dump(),
        "source_date_epoch": source_date_epoch,
        "build_name": build_name,
        "prefix": prefix,
        "cmake_flags": shell_words(flags),
        "raw_cmake_flags": flags,
        "cc": compiler.cc,
        "cxx": compiler.cxx,
        "hip_compiler": compiler.hip or "",
        "rocm_path": settings.rocm_path,
        "rocm_version": settings.rocm_version,
        "gpu_arch": settings.target_arch,
    }
