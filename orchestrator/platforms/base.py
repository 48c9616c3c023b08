"""The platform interface: everything that differs between building and running for a
ROCm GPU and for the CPU, behind one small class (ReFrame keeps its container
platforms behind an interface the same way).

A platform answers two sets of questions. Building: which base image and GROMACS
source by default, the builder template's values, the stable compiler and build name,
the CMake flags, and what a finished build must report. Running: which engine options
a container needs, how the profiler wraps mdrun, what to check before a run, where the
per-category breakdown comes from, and what to record about the host's devices.
Everything else is shared; adding a platform is adding one module like `cpu.py` and
its templates (`<name>-base`, `gromacs-stable-<name>`, `gromacs-dev-<name>`).
"""

from __future__ import annotations

import os
import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.core.engine import EngineKind
from orchestrator.core.errors import UserError
from orchestrator.core.settings import GromacsSource, Settings
from orchestrator.parsers.breakdown import KernelBreakdown
from orchestrator.parsers.mdlog import MdLog
from orchestrator.parsers.rocprof_compute import CounterSummary
from orchestrator.parsers.rocprof_sys import SystemTrace

#: A GROMACS image is the reference (`stable`) or one built with a compiler under test.
Flavor = Literal["stable", "dev"]
#: trace: the kernel trace (rocprofv3; md.log's cycle accounting on the CPU); counters:
#: hardware counters per kernel (rocprof-compute); systrace: the whole application over time
#: (rocprof-sys: CPU threads, HIP API, copies), for Perfetto.
ProfileMode = Literal["none", "trace", "counters", "systrace"]
#: Runs a command in the builder image: (exit code, output).
Probe = Callable[[list[str]], tuple[int, str]]

#: Fixed paths inside every GROMACS build, so rebuilds embed identical strings; and
#: mapped away in `__FILE__` and debug info, so the binaries do not depend on them at all.
SOURCE_DIR = "/src/gromacs"
BUILD_DIR = "/build/gromacs"
PREFIX_MAP = f"-ffile-prefix-map={SOURCE_DIR}=. -ffile-prefix-map={BUILD_DIR}=build"

#: Where `orchestrator base` puts the base images it makes with debootstrap.
DEBOOTSTRAP_REPO = "gmxbench-base/debian"

#: Host CPU flags each GMX_SIMD level needs (x86 from /proc/cpuinfo).
SIMD_CPU_FLAGS: dict[str, set[str]] = {
    "None": set(),
    "SSE2": {"sse2"},
    "SSE4.1": {"sse4_1"},
    "AVX_128_FMA": {"avx", "fma4"},
    "AVX_256": {"avx"},
    "AVX2_128": {"avx2", "fma"},
    "AVX2_256": {"avx2", "fma"},
    "AVX_512": {"avx512f"},
}


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
    #: sha256 over every file of an LLVM toolchain's prefix: the compile cache's key for
    #: its compilers, whose binaries stay the same when only libLLVM.so changes.
    content_sha256: str | None = None
    #: An LLVM the user built, imported (`build toolchain --from-build`): the tree's path
    #: and when, since no source the tool holds can make it again; and where its commit
    #: was read (clang's `--version`, or the checkout beside the tree).
    imported_from: str | None = None
    imported_at: str | None = None
    llvm_commit_from: str | None = None


class CompileCacheStats(BaseModel):
    """What the compile cache (ccache) did during one GROMACS build, by its own counters."""

    disabled: bool = False
    hits: int = 0
    misses: int = 0
    uncacheable: int = 0

    @classmethod
    def parse(cls, text: str) -> CompileCacheStats | None:
        """`ccache --show-log-stats -v` (or our `disabled` line); None when nothing ran."""
        if text.strip() == "disabled":
            return cls(disabled=True)
        counts: dict[str, int] = {}
        for line in text.splitlines():
            match = re.match(r"^\s*(Hits|Misses|Uncacheable calls):\s+(\d+)", line)
            if match and match.group(1) not in counts:
                counts[match.group(1)] = int(match.group(2))
        if not counts:
            return None
        return cls(
            hits=counts.get("Hits", 0),
            misses=counts.get("Misses", 0),
            uncacheable=counts.get("Uncacheable calls", 0),
        )

    def summary(self) -> str:
        if self.disabled:
            return "bypassed (every unit compiled)"
        return f"{self.hits} hits, {self.misses} misses (compiled), {self.uncacheable} uncacheable"


class BuildFacts(BaseModel):
    """What a finished GROMACS image reports about itself, read before anything is tagged."""

    version_info: dict[str, str] = Field(description="`gmx --version`'s `Key: value` lines")
    compiler_version: str = Field(description="first line of the compiler's --version")
    compiler_path: str = Field(description="the compiler under test, symlinks resolved")
    reported_compiler: str = Field(description="the C++ compiler `gmx --version` names, resolved")
    cmake_compilers: dict[str, str] = Field(description="CMAKE_*_COMPILER of the kept CMakeCache")
    source_sha256: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    compile_cache: CompileCacheStats | None = None


class DeviceInfo(BaseModel):
    """The host's accelerators as a run records them (none on the CPU platform)."""

    gpu_model: str | None = None
    gpu_driver: str | None = None
    gpu_perf_level: str | None = None
    #: The GPU's target (gfx1201): which of a several-target build's code ran.
    gpu_target: str | None = None
    warnings: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class KernelCompiler:
    """How the kernel benchmarks (`images.kernels`) compile with a build's own compiler."""

    api: Literal["openmp", "hip"]
    compiler: str
    flags: list[str]
    libs: list[str]
    #: The source of `bandwidth` for this platform (`runs/kernels/`).
    source: str
    #: Vector widths (floats) the build's SIMD level allows, for `tune` on a CPU.
    vector_widths: list[int] = field(default_factory=lambda: [4])


class ProfilerOptions(BaseModel):
    """What a run asks of its profiler beyond the mode (a recipe's `[profiler]` table, then
    the command line): rocprof-sys's mode and `ROCPROFSYS_*` settings, and the arguments
    that narrow rocprof-compute's counter passes (`--set`, `-k`, `-b`)."""

    model_config = ConfigDict(extra="forbid")

    systrace_mode: Literal["sample", "instrument"] = "sample"
    systrace_env: dict[str, str] = Field(default_factory=dict)
    counters_args: list[str] = Field(default_factory=list)

    @field_validator("systrace_env")
    @classmethod
    def _rocprofsys(cls, value: dict[str, str]) -> dict[str, str]:
        wrong = [name for name in value if not re.fullmatch(r"ROCPROFSYS_[A-Z0-9_]+", name)]
        if wrong:
            raise ValueError(
                f"{', '.join(wrong)}: rocprof-sys settings are ROCPROFSYS_* variables "
                "(`rocprof-sys-avail --all` lists them)"
            )
        return value

    def merged(self, other: ProfilerOptions | None) -> ProfilerOptions:
        """These options with what `other` sets put over them (environments merged)."""
        if other is None:
            return self
        return ProfilerOptions(
            systrace_mode=other.systrace_mode if "systrace_mode" in other.model_fields_set
            else self.systrace_mode,
            systrace_env=self.systrace_env | other.systrace_env,
            counters_args=other.counters_args or self.counters_args,
        )  # fmt: skip


class ProfileOutcome(BaseModel):
    """What a run's profiler did, as its record keeps it: `skipped` is the profiler
    declining (an unsupported GPU) while the timing run still counts; `failed` is the
    profiler or its analysis breaking; `files` are what it wrote, relative to the run."""

    mode: ProfileMode
    status: Literal["ok", "skipped", "failed"]
    message: str | None = None
    files: list[str] = Field(default_factory=list)
    #: What the tools found, kept in files of their own beside the record (`counters.json`,
    #: `systrace.json`), not in it.
    counters: CounterSummary | None = Field(None, exclude=True)
    trace: SystemTrace | None = Field(None, exclude=True)


#: Every run container's first security option: no setuid or file-capability binary in
#: an image gives the run more than it started with.
CONFINED_SECURITY_OPT = "no-new-privileges"


@dataclass
class ContainerOptions:
    """The engine options a platform adds to every run container, least privilege first:
    all capabilities dropped, `no-new-privileges`, the engine's seccomp profile, and (by
    `confined`) the invoking user's uid and gid and a pids limit."""

    devices: list[str] = field(default_factory=list)
    group_add: list[str] = field(default_factory=list)
    security_opt: list[str] = field(default_factory=lambda: [CONFINED_SECURITY_OPT])
    cap_drop: list[str] = field(default_factory=lambda: ["ALL"])
    cap_add: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    user: str | None = None
    pids_limit: int | None = None

    def confined(self, user: str, pids_limit: int) -> ContainerOptions:
        """These options as `user` (`uid:gid`), with at most `pids_limit` processes and
        threads; a user other than root gets HOME=/tmp, since the images have no home
        for an arbitrary uid (Docker would give it `/`, which it cannot write)."""
        self.user, self.pids_limit = user, pids_limit
        if user.split(":")[0] != "0":
            self.environment = {"HOME": "/tmp", **self.environment}
        return self

    def engine_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.user is not None:
            out["user"] = self.user
        if self.devices:
            out["devices"] = self.devices
        if self.group_add:
            out["group_add"] = self.group_add
        out["security_opt"] = self.security_opt
        out["cap_drop"] = self.cap_drop
        if self.cap_add:
            out["cap_add"] = self.cap_add
        if self.pids_limit is not None:
            out["pids_limit"] = self.pids_limit
        return out


class Platform(ABC):
    """One platform's answers; instances hold no settings, methods take what they need."""

    name: ClassVar[str]
    default_base: ClassVar[str]
    default_gromacs: ClassVar[GromacsSource]
    #: What `gmx --version` says after "GPU support:" for a build of this platform.
    gpu_support: ClassVar[str]
    #: Whether a run selects a device (`--device`) and records it.
    has_devices: ClassVar[bool] = False
    #: The CMake languages of a GROMACS build (each gets the compile cache as launcher).
    languages: ClassVar[tuple[str, ...]] = ("C", "CXX")
    #: Those a dev build compiles with the compiler under test (the others: the builder's).
    tested_languages: ClassVar[tuple[str, ...]] = ("C", "CXX")
    #: Where the compiler of example dev renders comes from: an LLVM commit (the main
    #: use) or a distribution package.
    example_toolchain: ClassVar[Literal["llvm", "package"]] = "llvm"

    # Building ------------------------------------------------------------------------

    @abstractmethod
    def present(self) -> bool:
        """True when this host can run this platform's images (`ORCH_PLATFORM=auto`)."""

    def base_image(self, settings: Settings) -> str:
        return settings.base_image or self.default_base

    def gromacs_source(self, settings: Settings) -> GromacsSource:
        return settings.gromacs or self.default_gromacs

    def builder_template(self, settings: Settings) -> str:
        """The builder's template: `<name>-base`, unless a setting picks another stack."""
        return f"{self.name}-base"

    def builder_templates(self) -> dict[str, dict[str, Any]]:
        """Every builder template of this platform, with the settings that select it."""
        return {f"{self.name}-base": {}}

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
        """The exact CMake arguments; `common_cmake_flags` has the shared ones."""

    @abstractmethod
    def compiler_problems(self, facts: BuildFacts, compiler: Compiler) -> list[str]:
        """Why the finished build was not made with `compiler` (empty when it was)."""

    @abstractmethod
    def recorded_compiler(self, facts: BuildFacts, compiler: Compiler) -> str:
        """The compiler path an image record names."""

    @abstractmethod
    def codegen_probe(
        self, mode: Literal["fingerprint", "asm"], prefix: str, stack: str | None,
        name: str | Sequence[str] | None = None, unit: str | None = None,
        arch: str | None = None, rocm_version: str | None = None,
    ) -> list[str]:  # fmt: skip
        """The command that fingerprints a finished image of this platform (or prints one
        functions' normalised code): `codegen.model.probe_argv` with this platform's
        tools and where its builds keep their code; `arch` picks one target's code of a
        several-target build (asm)."""

    @abstractmethod
    def kernel_compiler(self, settings: Settings, labels: Mapping[str, str]) -> KernelCompiler:
        """How the kernel benchmarks compile in an image with these labels (a GROMACS or
        toolchain image; names without the `gmxbench.` prefix): its compiler under test,
        with the flags its GROMACS build used."""

    # Running -------------------------------------------------------------------------

    def container_options(
        self, device: int, profile: ProfileMode = "none", engine: EngineKind | None = None
    ) -> ContainerOptions:
        """What a run container needs for this platform's devices and `profile`'s tool, on
        this engine (rootless Podman passes the user's own groups, not numeric ids)."""
        return ContainerOptions()

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

    def default_profile(self, stack: str | None) -> ProfileMode:
        """What `bench` profiles by default on an image of this platform (and stack)."""
        return "trace"

    def preflight(
        self,
        simd: str | None,
        gpu_arch: str | None,
        options: ContainerOptions,
        *,
        profile: ProfileMode = "none",
        stack: str | None = None,
        image: str | None = None,
    ) -> list[str]:
        """Problems that would make a run fail or lie, found before any container starts.

        `gpu_arch` is the image's `gpu_arch` label (its GPU targets, comma-joined);
        `stack` is the image's build stack where a platform has several (ROCm: amd,
        debian); `image` names the image in what is said.
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

    @abstractmethod
    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> KernelBreakdown | None:
        """Time per category of a finished run; None when this run cannot tell."""

    def profile_breakdown(self, run_dir: Path) -> KernelBreakdown | None:
        """The breakdown of whatever this platform's profiler left in `run_dir`, if anything."""
        return None

    def devices(self, sys_root: Path) -> DeviceInfo:
        return DeviceInfo()


def common_cmake_flags(settings: Settings, prefix: str) -> list[str]:
    """The CMake arguments every platform's GROMACS build shares (the field report's recipe)."""
    return [
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


def host_cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    match = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return set(match.group(1).split()) if match else set()
