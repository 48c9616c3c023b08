"""The CPU platform: GROMACS without GPU; md.log's cycle accounting is the breakdown.

It is a product feature (x86 backend work, CPU-only sites) and the path on which
whole runs happen on a machine without a GPU. Its roles are small enough to share one
module: no devices, no profiler, the C++ compiler the one under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from orchestrator.codegen.model import probe_argv
from orchestrator.core.errors import UserError
from orchestrator.core.settings import GromacsSource, Settings
from orchestrator.parsers.breakdown import Breakdown
from orchestrator.parsers.mdlog import MdLog, cycle_breakdown
from orchestrator.platforms.base import (
    DEBOOTSTRAP_REPO,
    KEPT,
    BuildFacts,
    Compiler,
    Flavor,
    MicrobenchCompiler,
    Probe,
    ProfileMode,
    common_cmake_flags,
)
from orchestrator.platforms.roles import BuildRole, CodegenRole, Platform, ProfilerRole, RunRole

#: The compiler flags of each GMX_SIMD level, as GROMACS's own CMake adds them.
SIMD_FLAGS: dict[str, list[str]] = {
    "None": [],
    "SSE2": ["-msse2"],
    "SSE4.1": ["-msse4.1"],
    "AVX_128_FMA": ["-mavx", "-mfma4"],
    "AVX_256": ["-mavx"],
    "AVX2_128": ["-mavx2", "-mfma"],
    "AVX2_256": ["-mavx2", "-mfma"],
    "AVX_512": ["-mavx512f", "-mavx2", "-mfma"],
}


class CpuBuild(BuildRole):
    """GROMACS without GPU; the compiler under test is the C++ compiler."""

    default_base = f"{DEBOOTSTRAP_REPO}:bookworm"
    #: Debian's source package: `apt-get source gromacs` yields the upstream tarball.
    default_gromacs: ClassVar[GromacsSource] = GromacsSource(url="deb-src:gromacs", ref="2022.5")
    gpu_support = "disabled"
    example_toolchain = "package"

    def builder_templates(self) -> dict[str, dict[str, Any]]:
        return {"cpu-base": {}}

    def builder_context(self, settings: Settings) -> dict[str, Any]:
        return {"base_image": self.base_image(settings)}

    def stable_compiler(self, settings: Settings, probe: Probe) -> Compiler:
        """The distribution's default `c++`, named by family and major version (gcc12)."""
        code, out = probe(["sh", "-c", "c++ -dumpversion && c++ --version | head -n1"])
        if code != 0:
            raise UserError(f"The builder base has no working c++: {out.strip()[:300]}")
        major, version = out.splitlines()[0].split(".")[0], out.splitlines()[1]
        family = "clang" if "clang" in version.lower() else "gcc"
        return Compiler(name=f"{family}{major}", cc="cc", cxx="c++", version=version)

    def stable_build_name(self, settings: Settings, compiler: Compiler) -> str:
        return f"stable-cpu-{compiler.name}"

    def compiler_under_test(self, compiler: Compiler) -> str:
        return compiler.cxx

    def cmake_flags(
        self, settings: Settings, flavor: Flavor, compiler: Compiler, prefix: str
    ) -> list[str]:
        return [
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_C_COMPILER={compiler.cc}",
            f"-DCMAKE_CXX_COMPILER={compiler.cxx}",
            "-DGMX_GPU=OFF",
            *common_cmake_flags(settings, prefix, cxx_extra=settings.device_flags),
            "-DBUILD_TESTING=OFF",
            "-DGMXAPI=OFF",
            "-DGMX_INSTALL_NBLIB_API=OFF",
        ]

    def compiler_problems(self, facts: BuildFacts, compiler: Compiler) -> list[str]:
        if facts.reported_compiler != facts.compiler_path:
            reported = facts.version_info.get("C++ compiler")
            return [f"C++ compiler is {reported!r}, asked for {compiler.cxx}"]
        return []

    def recorded_compiler(self, facts: BuildFacts, compiler: Compiler) -> str:
        return facts.compiler_path or compiler.cxx


class CpuRun(RunRole):
    """No devices: every host has a CPU."""

    def present(self) -> bool:
        return True


class CpuProfiler(ProfilerRole):
    """No profiler: md.log's cycle accounting is the breakdown."""

    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> Breakdown | None:
        return cycle_breakdown(md)


class CpuCodegen(CodegenRole):
    """libgromacs.so read by binutils; microbenchmarks compiled by the build's C++ compiler."""

    def microbench_compiler(
        self, settings: Settings, labels: Mapping[str, str]
    ) -> MicrobenchCompiler:
        """The build's C++ compiler with `-O3`, OpenMP and its GMX_SIMD level's flags."""
        simd = labels.get("simd") or settings.simd
        return MicrobenchCompiler(
            api="openmp",
            compiler=labels.get("compiler") or "c++",
            flags=["-O3", "-std=c++17", "-fopenmp", *SIMD_FLAGS.get(simd, [])],
            libs=[],
            source="bandwidth_cpu.cpp",
            vector_widths=[4, 8] if simd in ("AVX_256", "AVX2_256", "AVX_512") else [4],
        )

    def codegen_probe(
        self, mode: Literal["codegen", "asm"], prefix: str, variant: str | None,
        name: str | Sequence[str] | None = None, unit: str | None = None,
        arch: str | None = None, release: str | None = None, kept: str = KEPT,
    ) -> list[str]:  # fmt: skip
        """GROMACS' hot functions in libgromacs.so, disassembled by binutils."""
        library = f"{prefix}/lib/libgromacs.so"
        if mode == "asm":
            return probe_argv("asm", library, objdump="objdump", nm="nm", name=name)
        return probe_argv("cpu", library, objdump="objdump", nm="nm", cxxfilt="c++filt")


class CpuPlatform(Platform):
    """The CPU platform with its roles."""

    build: CpuBuild
    run: CpuRun
    profiler: CpuProfiler
    codegen: CpuCodegen

    def __init__(self) -> None:
        super().__init__("cpu", CpuBuild(), CpuRun(), CpuProfiler(), CpuCodegen())
