"""How CUDA GROMACS images are built: Debian's CUDA toolkit in the builder, nvcc as the
stable compiler, and the clang of the LLVM under test as a dev build's CUDA compiler.

Stable builds go through nvcc (host code by g++-13, the newest GCC CUDA 12.4 accepts);
dev builds take GROMACS's `GMX_CLANG_CUDA` path, where the clang under test compiles
C, C++ and CUDA alike (NVPTX, then the toolkit's ptxas), so every unit is the compiler's.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from orchestrator.core.errors import UserError
from orchestrator.core.settings import GROMACS_2026_RELEASE, GromacsSource, Settings
from orchestrator.platforms.base import (
    BUILD_DIR,
    DEBOOTSTRAP_REPO,
    PREFIX_MAP,
    SOURCE_DIR,
    BuildFacts,
    Compiler,
    Flavor,
    Probe,
    common_cmake_flags,
)
from orchestrator.platforms.cuda.targets import DEFAULT_ARCH, cmake_arch, gpu_archs
from orchestrator.platforms.roles import BuildRole

#: The CUDA release of Debian's nvidia-cuda-toolkit (sid, non-free), which the builder
#: template checks; 12.4.131 when written.
DEBIAN_CUDA = "12.4"
#: nvcc 12.4's host compiler: it refuses GCC newer than 13, and sid's default is 15.
HOST_GCC = "13"
#: Debian's clang, the builder's stand-in CUDA compiler (clang 21 knows CUDA 12.4).
DEBIAN_LLVM = "21"
#: clang's `--cuda-path` on Debian (cuda.h, nvvm/libdevice; clang looks there by itself
#: on Debian too); nvcc, ptxas and cuobjdump are in /usr/bin.
CUDA_PATH = "/usr/lib/cuda"
NVCC = "/usr/bin/nvcc"
#: Stable compilers are named `nvcc<release>`; every other compiler is a dev one.
NVCC_NAME = "nvcc"
#: CMake flags beyond the shared ones, as measured on the lent H100 (FFTs on the CPU by
#: fftpack, no hwloc) and as Debian's ROCm stack builds (no tests, no API libraries, no
#: Colvars: slow units no benchmark system uses).
EXTRA_CMAKE_FLAGS = (
    "-DGMX_FFT_LIBRARY=fftpack",
    "-DGMX_HWLOC=OFF",
    "-DBUILD_TESTING=OFF",
    "-DGMXAPI=OFF",
    "-DGMX_INSTALL_NBLIB_API=OFF",
    "-DGMX_USE_COLVARS=NONE",
)


def _nvcc_path(out: str) -> str:
    """The path `command -v nvcc` printed first (the builder's own when there is none)."""
    first = out.strip().splitlines()[0].strip() if out.strip() else ""
    return first if first.startswith("/") else NVCC


def is_nvcc(compiler: Compiler) -> bool:
    return compiler.name.startswith(NVCC_NAME)


def cuda_compiler(compiler: Compiler) -> str:
    """nvcc for the stable compiler, else the toolchain's clang++ (`GMX_CLANG_CUDA`)."""
    return (compiler.cuda or NVCC) if is_nvcc(compiler) else compiler.cxx


class CudaBuild(BuildRole):
    """CUDA GROMACS for the settings' sm_ targets, on Debian's CUDA toolkit."""

    default_base = f"{DEBOOTSTRAP_REPO}:sid"
    default_gromacs: ClassVar[GromacsSource] = GROMACS_2026_RELEASE
    gpu_support = "CUDA"
    target_prefix = "sm_"
    languages = ("C", "CXX", "CUDA")
    #: A dev build's clang compiles all three (the launchers hash its LLVM's digest).
    tested_languages = ("C", "CXX", "CUDA")

    def builder_templates(self) -> dict[str, dict[str, Any]]:
        return {"cuda-base": {}}

    def builder_context(self, settings: Settings) -> dict[str, Any]:
        return {
            "base_image": self.base_image(settings),
            "cuda_version": DEBIAN_CUDA,
            "cuda_path": CUDA_PATH,
            "host_gcc": HOST_GCC,
            "llvm": DEBIAN_LLVM,
        }

    def gromacs_values(self, settings: Settings) -> dict[str, Any]:
        return {
            "cuda_path": CUDA_PATH,
            "gpu_arch": ",".join(gpu_archs(settings)),
            "cuda_codeobjects": True,
        }

    def record_values(self, settings: Settings) -> dict[str, Any]:
        """Nothing beyond the shared fields: the CUDA release is in the stable compiler's
        name (nvcc12.4) and the builder template pins it."""
        return {}

    def gpu_target(self, settings: Settings) -> str | None:
        """Every target, comma-joined (`sm_90,sm_80`): the image's `gpu_arch` label."""
        return ",".join(gpu_archs(settings))

    def build_suffix(self, settings: Settings) -> str:
        """`-sm_90_sm_80` unless the build is for sm_90 alone."""
        targets = gpu_archs(settings)
        return "" if targets == [DEFAULT_ARCH] else "-" + "_".join(targets)

    def stable_compiler(self, settings: Settings, probe: Probe) -> Compiler:
        """The builder's nvcc (the image's /usr/bin/nvcc, or the first on PATH on a native
        host), named by its release (nvcc12.4), with g++-13 as its host compiler."""
        code, out = probe(["sh", "-c", f"command -v nvcc || echo {NVCC}; nvcc --version"])
        match = re.search(r"release (\d+\.\d+), (V[\d.]+)", out)
        if code != 0 or match is None:
            raise UserError(
                f"The CUDA builder has no working nvcc (on PATH, or {NVCC}): "
                f"{out.strip()[:300]}. Rebuild the builder (its template installs "
                "nvidia-cuda-toolkit), name a base image with CUDA in ORCH_BASE_IMAGE, or on a "
                "native host put the CUDA toolkit's bin folder on PATH."
            )
        return Compiler(
            name=f"{NVCC_NAME}{match.group(1)}",
            cc=f"gcc-{HOST_GCC}",
            cxx=f"g++-{HOST_GCC}",
            cuda=_nvcc_path(out),
            version=f"Cuda compilation tools, release {match.group(1)}, {match.group(2)}",
        )

    def stable_build_name(self, settings: Settings, compiler: Compiler) -> str:
        return f"stable-{compiler.name}{self.build_suffix(settings)}"

    def compiler_under_test(self, compiler: Compiler) -> str:
        return cuda_compiler(compiler)

    def cmake_flags(
        self, settings: Settings, flavor: Flavor, compiler: Compiler, prefix: str
    ) -> list[str]:
        """nvcc, or the clang under test for C, C++ and CUDA (`GMX_CLANG_CUDA=ON`, GROMACS's
        cmake/gmxManageCuda.cmake then makes CMAKE_CUDA_COMPILER the C++ compiler); one
        build for every target (CMAKE_CUDA_ARCHITECTURES, a CMake list: `90;80`)."""
        archs = ";".join(cmake_arch(target) for target in gpu_archs(settings))
        flags = [
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_C_COMPILER={compiler.cc}",
            f"-DCMAKE_CXX_COMPILER={compiler.cxx}",
            "-DGMX_GPU=CUDA",
            f"-DCMAKE_CUDA_COMPILER={cuda_compiler(compiler)}",
        ]
        extra = f" {settings.device_flags}" if settings.device_flags else ""
        if is_nvcc(compiler):
            maps = f"-ffile-prefix-map={SOURCE_DIR}=.,-ffile-prefix-map={BUILD_DIR}=build"
            flags.append(f"-DCMAKE_CUDA_FLAGS=-Xcompiler={maps}{extra}")
        else:
            flags += [
                "-DGMX_CLANG_CUDA=ON",
                f"-DCMAKE_CUDA_FLAGS=--cuda-path={CUDA_PATH} {PREFIX_MAP}{extra}",
            ]
        flags.append(f"-DCMAKE_CUDA_ARCHITECTURES={archs}")
        flags += common_cmake_flags(settings, prefix)
        flags += EXTRA_CMAKE_FLAGS
        return flags

    def compiler_problems(self, facts: BuildFacts, compiler: Compiler) -> list[str]:
        """CMake's CUDA compiler is the one asked for; with clang, its C++ compiler too."""
        wanted = {"CMAKE_CUDA_COMPILER": cuda_compiler(compiler)}
        if not is_nvcc(compiler):
            wanted["CMAKE_CXX_COMPILER"] = compiler.cxx
        problems = []
        for name, path in wanted.items():
            found = facts.cmake_compilers.get(name, "")
            if found != path:
                problems.append(f"{name} is {found!r}, asked for {path}")
        return problems

    def recorded_compiler(self, facts: BuildFacts, compiler: Compiler) -> str:
        return cuda_compiler(compiler)
