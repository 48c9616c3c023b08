"""The roles a platform plays, each a small interface, and the `Platform` that holds them
(ReFrame splits a system's scheduler from its launcher the same way).

Building (`BuildRole`): which base image and GROMACS source by default, the builder
template's values, the stable compiler and build name, the CMake flags, and what a
finished build must report. Running (`RunRole`): whether the host has the platform,
which engine options a container needs, what to check before a run, what to record
about the host's devices. Profiling (`ProfilerRole`): how the profiler wraps mdrun, what
it left, where the per-category breakdown comes from. Codegen (`CodegenRole`): how a
finished image's code is read, how microbenchmarks compile in it. A platform with
variants (ROCm's stacks) is told an image's `variant`, as the image records it, where
the answer depends on it. Adding a platform is one folder like `cpu/` and one line in
`platforms/__init__.py` (docs/platforms.md, "Adding a platform").
"""

from __future__ import annotations

import os
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from orchestrator.core.errors import UserError
from orchestrator.core.settings import GromacsSource, Settings
from orchestrator.engine import EngineKind
from orchestrator.parsers.breakdown import Breakdown
from orchestrator.parsers.mdlog import MdLog
from orchestrator.platforms.base import (
    KEPT,
    SIMD_CPU_FLAGS,
    BuildFacts,
    Compiler,
    ContainerOptions,
    DeviceInfo,
    Flavor,
    MicrobenchCompiler,
    Probe,
    ProfileMode,
    ProfileOutcome,
    ProfilerOptions,
    host_cpu_flags,
)


class BuildRole(ABC):
    """How a platform's GROMACS images are built; instances hold no settings."""

    default_base: ClassVar[str]
    default_gromacs: ClassVar[GromacsSource]
    #: What `gmx --version` says after "GPU support:" for a build of this platform.
    gpu_support: ClassVar[str]
    #: The CMake languages of a GROMACS build (each gets the compile cache as launcher).
    languages: ClassVar[tuple[str, ...]] = ("C", "CXX")
    #: Those a dev build compiles with the compiler under test (the others: the builder's).
    tested_languages: ClassVar[tuple[str, ...]] = ("C", "CXX")
    #: Where the compiler of example dev renders comes from: an LLVM commit (the main
    #: use) or a distribution package.
    example_toolchain: ClassVar[Literal["llvm", "package"]] = "llvm"
    #: How this platform's GPU targets begin (`gfx`, `sm_`); None: no GPU targets.
    target_prefix: ClassVar[str | None] = None

    def base_image(self, settings: Settings) -> str:
        return settings.base_image or self.default_base

    def gromacs_source(self, settings: Settings) -> GromacsSource:
        return settings.gromacs or self.default_gromacs

    def builder_template(self, settings: Settings) -> str:
        """The builder's template: the only one, unless a setting picks another variant."""
        return next(iter(self.builder_templates()))

    @abstractmethod
    def builder_templates(self) -> dict[str, dict[str, Any]]:
        """Every builder template of this platform (`<name>-base` first), with the
        settings that select it."""

    @abstractmethod
    def builder_context(self, settings: Settings) -> dict[str, Any]:
        """Template values of the builder template (always `base_image`)."""

    def gromacs_values(self, settings: Settings) -> dict[str, Any]:
        """Template values of this platform's GROMACS templates beyond the shared ones."""
        return {}

    def record_values(self, settings: Settings) -> dict[str, Any]:
        """Image record fields only this platform pins in every image (the ROCm version)."""
        return {}

    def gpu_target(self, settings: Settings) -> str | None:
        """The GPU targets GROMACS is compiled for, comma-joined; None without a GPU."""
        return None

    def build_suffix(self, settings: Settings) -> str:
        """What a GROMACS build's name carries beyond its compiler (ROCm: its GPU targets
        when they are not the default); empty where nothing does."""
        return ""

    def device_smoke(self, settings: Settings) -> dict[str, str]:
        """What an LLVM toolchain's device smoke compile needs (`gpu_arch`, `rocm_path`,
        `device_libs`, `code_object_flag`); empty: no device code, no smoke compile."""
        return {}

    @abstractmethod
    def stable_compiler(self, settings: Settings, probe: Probe) -> Compiler:
        """The reference compiler, the one the stable image is built with."""

    @abstractmethod
    def stable_build_name(self, settings: Settings, compiler: Compiler) -> str: ...

    @abstractmethod
    def compiler_under_test(self, compiler: Compiler) -> str:
        """The compiler of `compiler` that this platform's kernels go through."""

    @abstractmethod
    def cmake_flags(
        self, settings: Settings, flavor: Flavor, compiler: Compiler, prefix: str
    ) -> list[str]:
        """The exact CMake arguments; `base.common_cmake_flags` has the shared ones."""

    @abstractmethod
    def compiler_problems(self, facts: BuildFacts, compiler: Compiler) -> list[str]:
        """Why the finished build was not made with `compiler` (empty when it was)."""

    @abstractmethod
    def recorded_compiler(self, facts: BuildFacts, compiler: Compiler) -> str:
        """The compiler path an image record names."""


class RunRole(ABC):
    """What a run of this platform's images needs of the host and its containers."""

    #: Whether a run selects a device (`--device`) and records it.
    has_devices: ClassVar[bool] = False

    @abstractmethod
    def present(self) -> bool:
        """True when this host can run this platform's images (`ORCH_PLATFORM=auto`)."""

    def container_options(
        self, device: int, profile: ProfileMode = "none", engine: EngineKind | None = None
    ) -> ContainerOptions:
        """What a run container needs for this platform's devices and `profile`'s tool, on
        this engine (rootless Podman passes the user's own groups, not numeric ids)."""
        return ContainerOptions()

    def native_options(self, device: int, profile: ProfileMode = "none") -> ContainerOptions:
        """What a run on the host itself needs (the native executor, no container): the
        environment that selects `device`, and what is missing. The container's own
        (device nodes, groups) where the host is the same: ROCm's nodes and variables."""
        return self.container_options(device, profile)

    def preflight(
        self,
        simd: str | None,
        gpu_arch: str | None,
        options: ContainerOptions,
        *,
        profile: ProfileMode = "none",
        variant: str | None = None,
        image: str | None = None,
    ) -> list[str]:
        """Problems that would make a run fail or lie, found before any container starts.

        `gpu_arch` is the image's `gpu_arch` label (its GPU targets, comma-joined);
        `variant` is the image's build variant where a platform has several (ROCm's
        stacks: amd, debian); `image` names the image in what is said.
        """
        problems = list(options.problems)
        missing = SIMD_CPU_FLAGS.get(simd or "None", set()) - host_cpu_flags()
        if simd and missing and os.uname().machine == "x86_64":
            problems.append(
                f"the image was built for GMX_SIMD={simd} but this CPU lacks "
                f"{', '.join(sorted(missing))}; "
                f"rebuild with ORCH_SIMD set to a level this host supports (e.g. AVX_256 or SSE4.1)"
            )
        return problems

    def devices(self, sys_root: Path) -> DeviceInfo:
        return DeviceInfo()


class ProfilerRole(ABC):
    """How a run is profiled, and what its profiler (or md.log) says per category."""

    def default_profile(self, variant: str | None) -> ProfileMode:
        """What `bench` profiles by default on an image of this platform (and variant)."""
        return "trace"

    def launch(
        self, mdrun: list[str], profile: ProfileMode, workdir: str,
        options: ProfilerOptions | None = None,
    ) -> str:  # fmt: skip
        """The end of run.sh: POSIX shell that runs mdrun, under the profiler where one is
        asked for, the profiler writing below `workdir` (the run dir in the container)."""
        if profile in ("counters", "systrace"):
            raise UserError(
                f"--profile={profile} needs AMD's profilers and a GPU (ORCH_PLATFORM=rocm with "
                "the amd ROCm stack); on the CPU platform --profile=trace records md.log's cycle "
                "accounting."
            )
        return "exec " + shlex.join(mdrun) + "\n"

    def profile_outcome(self, run_dir: Path, profile: ProfileMode) -> ProfileOutcome | None:
        """What the profiler of a finished run left (parsed and saved beside the run by
        `save`), or None for a mode whose output is the breakdown itself."""
        return None

    @abstractmethod
    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> Breakdown | None:
        """Time per category of a finished run; None when this run cannot tell."""

    def profile_breakdown(self, run_dir: Path) -> Breakdown | None:
        """The breakdown of whatever this platform's profiler left in `run_dir`, if anything."""
        return None


class CodegenRole(ABC):
    """How the code of a finished image is read, and how microbenchmarks compile in one."""

    #: Whether microbenchmark images (`kernel-*`) are built for this platform.
    has_microbenchmarks: ClassVar[bool] = True

    @abstractmethod
    def codegen_probe(
        self, mode: Literal["codegen", "asm"], prefix: str, variant: str | None,
        name: str | Sequence[str] | None = None, unit: str | None = None,
        arch: str | None = None, release: str | None = None, kept: str = KEPT,
    ) -> list[str]:  # fmt: skip
        """The command that fingerprints a finished image of this platform (or prints one
        functions' normalised code): `codegen.model.probe_argv` with this platform's
        tools and where its builds keep their code; `arch` picks one target's code of a
        several-target build (asm); `release` is the platform release the image pins
        (its `rocm_version`), where its tools' paths carry it; `kept` is where the build
        kept its device code (`base.KEPT` in an image, `<prefix>/gmxbench` natively)."""

    @abstractmethod
    def microbench_compiler(
        self, settings: Settings, labels: Mapping[str, str]
    ) -> MicrobenchCompiler:
        """How the microbenchmarks compile in an image with these labels (a GROMACS or
        toolchain image; names without the `gmxbench.` prefix): its compiler under test,
        with the flags its GROMACS build used."""


class Platform:
    """One platform: its name (in settings, labels and template names) and its roles."""

    def __init__(
        self, name: str, build: BuildRole, run: RunRole, profiler: ProfilerRole,
        codegen: CodegenRole,
    ) -> None:  # fmt: skip
        self.name = name
        self.build = build
        self.run = run
        self.profiler = profiler
        self.codegen = codegen
