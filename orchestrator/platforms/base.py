"""What every platform shares: the records of a build (compiler, facts, compile cache),
what a run needs of a container and records of its profiler, the host's devices, and
the CMake flags every GROMACS build takes. The roles a platform plays are in `roles.py`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.core.settings import Settings
from orchestrator.parsers.instructions import InstructionCounts
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
#: Where a build keeps what its checks and codegen read (compile-cache counters, device
#: code): in an image; a native build keeps them in `<prefix>/gmxbench`.
KEPT = "/opt/gmxbench"

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
    #: nvcc where the build found it (the stable CUDA compiler: /usr/bin in the image,
    #: the toolkit's bin folder on a native host).
    cuda: str | None = None
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
class MicrobenchCompiler:
    """How the microbenchmarks (`images.microbench`) compile with a build's own compiler."""

    api: Literal["openmp", "hip"]
    compiler: str
    flags: list[str]
    libs: list[str]
    #: The source of `bandwidth` for this platform (`payloads/microbench/`).
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
    #: `systrace.json`, `instructions.json`), not in it.
    counters: CounterSummary | None = Field(None, exclude=True)
    trace: SystemTrace | None = Field(None, exclude=True)
    instructions: InstructionCounts | None = Field(None, exclude=True)


#: Every run container's first security option: no setuid or file-capability binary in
#: an image gives the run more than it started with.
CONFINED_SECURITY_OPT = "no-new-privileges"


@dataclass
class ContainerOptions:
    """The engine options a platform adds to every run container, least privilege first:
    all capabilities dropped, `no-new-privileges`, the engine's seccomp profile, and (by
    `confined`) the invoking user's uid and gid and a pids limit."""

    devices: list[str] = field(default_factory=list)
    #: GPUs the engine's device driver passes (docker-py's `DeviceRequest`s, dicts: what
    #: `docker run --gpus` sends; NVIDIA's container toolkit serves them).
    device_requests: list[dict[str, Any]] = field(default_factory=list)
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
        if self.device_requests:
            out["device_requests"] = self.device_requests
        if self.group_add:
            out["group_add"] = self.group_add
        out["security_opt"] = self.security_opt
        out["cap_drop"] = self.cap_drop
        if self.cap_add:
            out["cap_add"] = self.cap_add
        if self.pids_limit is not None:
            out["pids_limit"] = self.pids_limit
        return out


def common_cmake_flags(settings: Settings, prefix: str, cxx_extra: str | None = None) -> list[str]:
    """The CMake arguments every platform's GROMACS build shares (the field report's
    recipe); `cxx_extra` joins the C++ flags (the CPU platform's `device_flags`)."""
    return [
        f"-DCMAKE_C_FLAGS={PREFIX_MAP}",
        f"-DCMAKE_CXX_FLAGS={PREFIX_MAP}" + (f" {cxx_extra}" if cxx_extra else ""),
        "-DGMX_MPI=OFF",
        "-DGMX_OPENMP=ON",
        "-DGMX_BUILD_OWN_FFTW=OFF",
        f"-DCMAKE_INSTALL_PREFIX={prefix}",
        "-DGMX_DOUBLE=OFF",
        f"-DGMX_SIMD={settings.simd}",
        "-DGMX_USE_RDTSCP=ON",
    ]


#: What the name of a build with `device_flags` carries before their digest.
FLAGS = "-flags-"


def flags_suffix(settings: Settings) -> str:
    """What a build's name carries for `device_flags` (`-flags-1a2b3c4d`, their digest):
    builds that differ only in a compiler option get names of their own."""
    if not settings.device_flags:
        return ""
    return FLAGS + hashlib.sha256(settings.device_flags.encode()).hexdigest()[:8]


def host_cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    match = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return set(match.group(1).split()) if match else set()
