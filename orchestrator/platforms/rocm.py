"""The ROCm platform: HIP GROMACS for one AMD GPU target, kernels traced by rocprofv3.

Two stacks build it (`ORCH_ROCM_STACK`): AMD's ROCm 7.12 as TheRock ships it (the
default: installed below /opt/rocm/core-7.12 from AMD's repository or a release tarball,
amdclang++, rocprofv3; `therock.py`) or Debian's own ROCm packages (hipcc over Debian's
clang, HIP, rocPRIM, rocFFT; no profiler), which any machine that reaches Debian's mirror
can build, CI included. Stable builds use the stack's compiler; dev builds send HIP
straight through the clang under test with the flags hipcc would inject, and the stable
compiler's AMDGPU code-object version (`code_object_flag`). Runs get /dev/kfd
and the selected GPU's render node, the groups owning them, and seccomp off.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from orchestrator.codegen.model import probe_argv
from orchestrator.core.engine import KEEP_GROUPS, EngineKind
from orchestrator.core.settings import (
    GROMACS_2026_RELEASE,
    GromacsSource,
    Settings,
    split_targets,
)
from orchestrator.parsers.breakdown import KernelBreakdown
from orchestrator.parsers.mdlog import MdLog
from orchestrator.parsers.rocprof import find_rocprof_files, parse_rocprof
from orchestrator.platforms import therock
from orchestrator.platforms.base import (
    CONFINED_SECURITY_OPT,
    DEBOOTSTRAP_REPO,
    PREFIX_MAP,
    BuildFacts,
    Compiler,
    ContainerOptions,
    DeviceInfo,
    Flavor,
    KernelCompiler,
    Platform,
    Probe,
    ProfileMode,
    ProfileOutcome,
    ProfilerOptions,
    common_cmake_flags,
)
from orchestrator.platforms.rocm_profilers import (
    COUNTERS_DIR,
    ROCM_BIN,
    SYSTRACE_CAPS,
    SYSTRACE_DIR,
    counters_outcome,
    counters_script,
    systrace_outcome,
    systrace_problems,
    systrace_script,
)

#: What hipcc injects; going through clang directly puts these on us (field report).
HIP_DEV_FLAGS = (
    "-fPIC -fno-gpu-rdc -ffast-math -munsafe-fp-atomics -fdenormal-fp-math=ieee "
    "-fcuda-flush-denormals-to-zero -fno-slp-vectorize -Wno-unused-command-line-argument "
    "-Wno-pass-failed"
)
DEFAULT_ARCH = "gfx1201"
#: Where the kernel trace goes, inside the run directory.
TRACE_DIR = "rocprof"
#: GPU performance levels that count as pinned for benchmarking.
PINNED_LEVELS = ("high", "profile_peak", "profile_standard")
#: The LLVM major Debian's hipcc (7.0.2) drives; its builder template checks it.
DEBIAN_LLVM = "21"
#: Where a GROMACS build keeps each HIP object's GPU code objects (`_gromacs-build.j2`).
CODEOBJECTS = "/opt/gmxbench/codeobjects"
#: The AMDGPU code-object version Debian's clang 21 (the Debian stack's stable compiler,
#: which hipcc drives) emits when not told. Measured once, on 2026-11-25, in
#: gmxbench-builder:rocm-a5154d50209b (Debian clang 21.1.8): a one-kernel HIP file
#: compiled with `/usr/lib/llvm-21/bin/clang++ -x hip --rocm-path=/usr
#: --rocm-device-lib-path=/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode --offload-arch=gfx1201
#: --cuda-device-only --no-gpu-bundle-output -O3 -c` has byte 8 of its ELF header
#: (EI_ABIVERSION) = 4, ELFABIVERSION_AMDGPU_HSA_V6; `-mcode-object-version=4/5/6` give 2/3/4.
#: The stable image's own code objects (/opt/gmxbench/codeobjects) read 4 as well.
DEBIAN_CODE_OBJECT_VERSION = 6
#: The same for AMD's stack (amdclang++ of ROCm 7.12): the builder image measures it
#: (rocm-base.Dockerfile.j2 compiles a one-kernel HIP file with amdclang++ and reads its
#: EI_ABIVERSION into /opt/gmxbench/stable-code-object-version) and refuses to build when
#: it is not this, unless ORCH_CODE_OBJECT_VERSION chooses the dev side's by hand. 7.12's
#: own LLVM (ROCm/llvm-project at c849bc16b0e4, TheRock 7.12's compiler/amd-llvm) could
#: not be read from here, so the value is checked, not cited.
AMD_CODE_OBJECT_VERSION = 6


@dataclass(frozen=True)
class RocmStack:
    """Where a ROCm build's base, HIP runtime and stable compiler come from, and where
    each lives in the image (AMD's single ROCm root, or Debian's FHS layout)."""

    name: Literal["amd", "debian"]
    default_base: str
    builder_template: str
    default_gromacs: GromacsSource
    #: CMake's HIP ROCm root and `--rocm-path`; None where CMake finds HIP by itself.
    cmake_rocm_root: bool
    #: Whether stable builds keep the vendor's HIP defaults (AMD) or take the same HIP
    #: flags as dev builds (Debian: clang driven as hipcc drives it, so stable and dev
    #: differ only in the compiler).
    stable_hip_flags: bool
    has_profilers: bool
    #: The code-object version the stable compiler emits by default (dev builds follow it).
    stable_code_object_version: int

    def rocm_path(self, settings: Settings) -> str:
        if self.name == "debian":
            return "/usr"
        return f"/opt/rocm/core-{therock.major_minor(settings.rocm_version)}"

    def llvm_bin(self, settings: Settings) -> str:
        """The stack's LLVM tools (clang, llvm-objdump, llvm-readelf)."""
        if self.name == "debian":
            return f"/usr/lib/llvm-{DEBIAN_LLVM}/bin"
        return f"{self.rocm_path(settings)}/lib/llvm/bin"

    def llvm_bin_of_image(self, rocm_version: str | None = None) -> str:
        """The LLVM tools inside an image of this stack, below the ROCm root of the
        release the image pins (its `rocm_version` label; the default release when the
        image has none): TheRock 7.12 makes no /opt/rocm/lib link to rely on."""
        if self.name == "debian":
            return f"/usr/lib/llvm-{DEBIAN_LLVM}/bin"
        version = rocm_version or Settings.model_fields["rocm_version"].default
        return f"/opt/rocm/core-{therock.major_minor(version)}/lib/llvm/bin"

    def device_libs(self, settings: Settings) -> str:
        if settings.rocm_device_libs:
            return settings.rocm_device_libs
        if self.name == "debian":
            return f"/usr/lib/llvm-{DEBIAN_LLVM}/lib/clang/{DEBIAN_LLVM}/amdgcn/bitcode"
        return f"{self.rocm_path(settings)}/lib/llvm/amdgcn/bitcode"

    def stable_hip(self, settings: Settings) -> str:
        if self.name == "debian":
            return f"{self.llvm_bin(settings)}/clang++"
        return f"{self.rocm_path(settings)}/bin/amdclang++"

    def stable_name(self, settings: Settings) -> str:
        if self.name == "debian":
            return f"rocm-debian-clang{DEBIAN_LLVM}"
        return f"rocm{settings.rocm_version}"


STACKS: dict[str, RocmStack] = {
    "amd": RocmStack(
        name="amd",
        default_base="ubuntu:24.04",
        builder_template="rocm-base",
        default_gromacs=GROMACS_2026_RELEASE,
        cmake_rocm_root=True,
        stable_hip_flags=False,
        has_profilers=True,
        stable_code_object_version=AMD_CODE_OBJECT_VERSION,
    ),
    "debian": RocmStack(
        name="debian",
        default_base=f"{DEBOOTSTRAP_REPO}:sid",
        builder_template="rocm-debian-base",
        default_gromacs=GROMACS_2026_RELEASE,
        cmake_rocm_root=False,
        stable_hip_flags=True,
        has_profilers=False,
        stable_code_object_version=DEBIAN_CODE_OBJECT_VERSION,
    ),
}


def therock_context(settings: Settings, targets: Sequence[str]) -> dict[str, Any]:
    """What the amd stack's builder template installs, from where, and checks: TheRock's
    packages for every GPU family the targets need (or the one family of a tarball)."""
    version = settings.rocm_version
    if settings.rocm_source == "tarball":
        found = [therock.tarball_family(targets)]
    else:
        found = therock.families(targets)
    return {
        "rocm_version": therock.major_minor(version),
        "rocm_path": STACKS["amd"].rocm_path(settings),
        "source": settings.rocm_source,
        "apt": settings.rocm_apt.model_dump(),
        "tarball": settings.rocm_tarball.model_dump() if settings.rocm_tarball else None,
        "families": found,
        "packages": therock.packages(targets, version),
        "needs": therock.needs(targets, version),
        "version_file": therock.VERSION_FILE,
        "gpu_arch": targets[0],
        "code_object_version": code_object_version(settings),
        "code_object_checked": settings.code_object_version is None,
    }


def stack(settings: Settings) -> RocmStack:
    return STACKS[settings.rocm_stack]


def code_object_version(settings: Settings) -> int:
    """The code-object version of dev builds: the setting, else the stable compiler's
    default, so that a dev build and the stable build share the kernels' ABI (a bisect
    across LLVM's change of default would otherwise see every kernel change)."""
    return settings.code_object_version or stack(settings).stable_code_object_version


def code_object_flag(settings: Settings) -> str:
    """The dev compiler's flag for :func:`code_object_version`: `-mcode-object-version=6`."""
    return f"-mcode-object-version={code_object_version(settings)}"


def detect_gpu_arch(sys_root: Path = Path("/")) -> str | None:
    """The first GPU's gfx target from the KFD topology below `sys_root` (no ROCm tools
    needed): `gfx_target_version 120001` in a node's properties is gfx1201."""
    nodes = sys_root / "sys/class/kfd/kfd/topology/nodes"
    if not nodes.is_dir():
        return None
    for props in sorted(nodes.glob("*/properties")):
        text = props.read_text(errors="replace")
        match = re.search(r"^gfx_target_version\s+(\d+)", text, re.MULTILINE)
        if match and int(match.group(1)):
            version = int(match.group(1))
            major, minor, step = version // 10000, (version // 100) % 100, version % 100
            return f"gfx{major}{minor:x}{step:x}"
    return None


def rocm_path(settings: Settings) -> str:
    """Where ROCm lives in the images: AMD's reference layout, or /usr on Debian."""
    return stack(settings).rocm_path(settings)


def gpu_archs(settings: Settings) -> list[str]:
    """The GPU targets a build compiles every HIP unit for, the primary one first: the
    setting (`ORCH_GPU_ARCH=gfx1201,gfx942`), else the host's first GPU, else gfx1201."""
    if settings.gpu_arch:
        return split_targets(settings.gpu_arch)
    return [detect_gpu_arch() or DEFAULT_ARCH]


def gpu_arch(settings: Settings) -> str:
    """The primary GPU target: the first of :func:`gpu_archs`."""
    return gpu_archs(settings)[0]


def offload_flags(targets: Sequence[str]) -> list[str]:
    """clang's `--offload-arch=` once per target: one build, a code object for each."""
    return [f"--offload-arch={target}" for target in targets]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


class RocmPlatform(Platform):
    """/dev/kfd plus the selected GPU's render node, their owning groups, seccomp off."""

    name = "rocm"
    default_base = STACKS["amd"].default_base
    default_gromacs: ClassVar[GromacsSource] = STACKS["amd"].default_gromacs
    gpu_support = "HIP"
    has_devices = True
    languages = ("C", "CXX", "HIP")
    tested_languages = ("HIP",)

    def __init__(self, dev_root: Path = Path("/dev"), sys_root: Path = Path("/")) -> None:
        self.dev_root = dev_root
        #: Where /sys is read from (the GPU's target in the KFD topology): a test's tree.
        self.sys_root = sys_root

    def present(self) -> bool:
        return (self.dev_root / "kfd").exists()

    # Building ------------------------------------------------------------------------

    def base_image(self, settings: Settings) -> str:
        return settings.base_image or stack(settings).default_base

    def gromacs_source(self, settings: Settings) -> GromacsSource:
        return settings.gromacs or stack(settings).default_gromacs

    def builder_template(self, settings: Settings) -> str:
        return stack(settings).builder_template

    def builder_templates(self) -> dict[str, dict[str, Any]]:
        return {s.builder_template: {"rocm_stack": s.name} for s in STACKS.values()}

    def builder_context(self, settings: Settings) -> dict[str, Any]:
        context = {
            "base_image": self.base_image(settings),
            "rocm_version": settings.rocm_version,
            "rocm_path": rocm_path(settings),
        }
        if settings.rocm_stack == "debian":
            own = settings.model_copy(update={"rocm_device_libs": None})  # the stack's, checked
            context |= {"llvm": DEBIAN_LLVM, "device_libs": stack(own).device_libs(own)}
            return context
        return context | therock_context(settings, gpu_archs(settings))

    def gromacs_values(self, settings: Settings) -> dict[str, Any]:
        return {
            "rocm_path": rocm_path(settings),
            "rocm_version": settings.rocm_version,
            "rocm_stack": settings.rocm_stack,
            "gpu_arch": ",".join(gpu_archs(settings)),
            "llvm_bin": stack(settings).llvm_bin(settings),
        }

    def record_values(self, settings: Settings) -> dict[str, Any]:
        if settings.rocm_stack == "debian":
            return {"rocm_stack": "debian"}
        return {"rocm_version": settings.rocm_version, "rocm_stack": "amd"}

    def gpu_target(self, settings: Settings) -> str | None:
        """Every target, comma-joined (`gfx1201,gfx942`): the image's `gpu_arch` label."""
        return ",".join(gpu_archs(settings))

    def device_smoke(self, settings: Settings) -> dict[str, str]:
        """The primary target only: the smoke compile proves the toolchain's clang links
        the stack's device libraries, which no target changes, and its context is the
        toolchain environment's, so a target list of GROMACS builds must not make an
        LLVM toolchain of its own."""
        return {
            "gpu_arch": gpu_arch(settings),
            "rocm_path": rocm_path(settings),
            "device_libs": stack(settings).device_libs(settings),
            "code_object_flag": code_object_flag(settings),
        }

    def stable_compiler(self, settings: Settings, probe: Probe) -> Compiler:
        """The stack's HIP compiler at its fixed path; nothing to ask the image."""
        return Compiler(
            name=stack(settings).stable_name(settings),
            cc="cc",
            cxx="c++",
            hip=stack(settings).stable_hip(settings),
        )

    def stable_build_name(self, settings: Settings, compiler: Compiler) -> str:
        return f"stable-{stack(settings).stable_name(settings)}{self.build_suffix(settings)}"

    def build_suffix(self, settings: Settings) -> str:
        """`-gfx1201_gfx942` (the targets, primary first) unless the build is for the
        default gfx1201 alone, whose names stay as they always were."""
        targets = gpu_archs(settings)
        return "" if targets == [DEFAULT_ARCH] else "-" + "_".join(targets)

    def compiler_under_test(self, compiler: Compiler) -> str:
        return compiler.hip or compiler.cxx

    def cmake_flags(
        self, settings: Settings, flavor: Flavor, compiler: Compiler, prefix: str
    ) -> list[str]:
        """One build whose HIP units are compiled for every target (`gpu_archs`): GROMACS
        reads GMX_HIP_TARGET_ARCH comma-separated (cmake/gmxManageHipccConfig.cmake, which
        also expands it unquoted in an `if`, where a `;` list would split); the CMake
        variables are CMake lists (`;`), quoted for the RUN line by `shell_words`."""
        rocm, targets, used = rocm_path(settings), gpu_archs(settings), stack(settings)
        cmake_list = ";".join(targets)
        flags = [
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DGMX_GPU=HIP",
            f"-DCMAKE_HIP_COMPILER={compiler.hip}",
        ]
        if used.cmake_rocm_root:
            flags.append(f"-DCMAKE_HIP_COMPILER_ROCM_ROOT={rocm}")
        explicit = flavor == "dev" or used.stable_hip_flags
        if explicit:  # AMD's stable keeps the vendor's HIP defaults: no CMAKE_HIP_FLAGS
            # dev: the stable compiler's code-object version (or the setting's), whatever
            # the default of the LLVM commit under test
            version = f" {code_object_flag(settings)}" if flavor == "dev" else ""
            hip_flags = (
                f"--rocm-path={rocm} {' '.join(offload_flags(targets))} {HIP_DEV_FLAGS} "
                f"--rocm-device-lib-path={used.device_libs(settings)}{version} {PREFIX_MAP}"
            )
            flags.append(f"-DCMAKE_HIP_FLAGS={hip_flags}")
        flags += [f"-DGMX_HIP_TARGET_ARCH={','.join(targets)}"]
        if explicit:
            flags += [f"-DCMAKE_HIP_ARCHITECTURES={cmake_list}", f"-DGPU_TARGETS={cmake_list}"]
        if used.cmake_rocm_root:
            flags.append(f"-DCMAKE_PREFIX_PATH={rocm}")
        flags += common_cmake_flags(settings, prefix)
        if not used.cmake_rocm_root:  # as the CPU build: no tests, no API libraries, and
            # no Colvars (45 slow units no benchmark system uses)
            flags += [
                "-DBUILD_TESTING=OFF", "-DGMXAPI=OFF", "-DGMX_INSTALL_NBLIB_API=OFF",
                "-DGMX_USE_COLVARS=NONE",
            ]  # fmt: skip
        if explicit:  # GROMACS's own check of each target runs hipcc; the answer is known
            flags += [f"-DHIPCC_HAS_TARGET_ARCH_{target}=TRUE" for target in targets]
        return flags

    def kernel_compiler(self, settings: Settings, labels: Mapping[str, str]) -> KernelCompiler:
        """The build's HIP compiler, driven as its GROMACS build drove it, for each of its
        GPU targets (the image's `gpu_arch` label: `gfx1201,gfx942`)."""
        used = STACKS.get(labels.get("rocm_stack") or "", stack(settings))
        targets = split_targets(labels.get("gpu_arch")) or gpu_archs(settings)
        return KernelCompiler(
            api="hip",
            compiler=labels.get("compiler") or used.stable_hip(settings),
            flags=[
                "-x",
                "hip",
                f"--rocm-path={used.rocm_path(settings)}",
                *offload_flags(targets),
                f"--rocm-device-lib-path={used.device_libs(settings)}",
                "-O3",
            ],
            libs=["-lamdhip64"] if used.name == "debian" else ["--hip-link"],
            source="bandwidth_gpu.cu",
        )

    def compiler_problems(self, facts: BuildFacts, compiler: Compiler) -> list[str]:
        hip = facts.cmake_compilers.get("CMAKE_HIP_COMPILER", "")
        if hip != compiler.hip:
            return [f"CMAKE_HIP_COMPILER is {hip!r}, asked for {compiler.hip}"]
        return []

    def recorded_compiler(self, facts: BuildFacts, compiler: Compiler) -> str:
        return self.compiler_under_test(compiler)

    def codegen_probe(
        self, mode: Literal["fingerprint", "asm"], prefix: str, stack: str | None,
        name: str | Sequence[str] | None = None, unit: str | None = None,
        arch: str | None = None, rocm_version: str | None = None,
    ) -> list[str]:  # fmt: skip
        """The GPU code objects the build kept, read by the stack's own LLVM tools."""
        tools = STACKS[stack or "amd"].llvm_bin_of_image(rocm_version)
        if mode == "asm":
            return probe_argv("asm", CODEOBJECTS, objdump=f"{tools}/llvm-objdump", name=name,
                              unit=unit, arch=arch)  # fmt: skip
        return probe_argv(
            "gpu", CODEOBJECTS, objdump=f"{tools}/llvm-objdump",
            readelf=f"{tools}/llvm-readelf", cxxfilt=f"{tools}/llvm-cxxfilt",
        )  # fmt: skip

    # Running -------------------------------------------------------------------------

    def container_options(
        self, device: int, profile: ProfileMode = "none", engine: EngineKind | None = None
    ) -> ContainerOptions:
        # seccomp off: Docker's profile refuses the NUMA memory-policy calls (mbind,
        # set_mempolicy) without CAP_SYS_NICE, which is dropped; ROCr places host memory
        # near the GPU with them (AMD's container docs ask for it; docs/platforms.md).
        opts = ContainerOptions(security_opt=[CONFINED_SECURITY_OPT, "seccomp=unconfined"])
        nodes = [self.dev_root / "kfd", self.dev_root / "dri" / f"renderD{128 + device}"]
        keep_groups = engine is not None and engine.name == "podman" and engine.rootless
        if keep_groups:  # rootless Podman: numeric host gids mean nothing in the user
            opts.group_add.append(KEEP_GROUPS)  # namespace; crun passes the user's own
        for node in nodes:
            host = f"/dev/{node.relative_to(self.dev_root)}"
            opts.devices.append(f"{host}:{host}:rwm")
            try:
                gid = str(node.stat().st_gid)
            except FileNotFoundError:
                opts.problems.append(
                    f"GPU device node {host} does not exist: is the amdgpu driver loaded and "
                    f"is GPU {device} present? (`ls /dev/dri`; pick another with --device; "
                    f"on a machine without a GPU, --cpu-only runs this build on the CPU)"
                )
                continue
            if not keep_groups and gid not in opts.group_add:
                opts.group_add.append(gid)
        visible = str(device)
        opts.environment = {"HIP_VISIBLE_DEVICES": visible, "ROCR_VISIBLE_DEVICES": visible}
        if profile == "systrace":
            opts.cap_add = list(SYSTRACE_CAPS)
        return opts

    def launch(
        self, mdrun: list[str], profile: ProfileMode, workdir: str,
        options: ProfilerOptions | None = None,
    ) -> str:  # fmt: skip
        """mdrun, or mdrun under a profiler of the image's ROCm ($ROCM_PATH/bin)."""
        options = options or ProfilerOptions()
        if profile == "trace":  # rocpd: upstream's default and maintained format since 7.0
            trace = ["--kernel-trace", "--output-format", "rocpd",
                     "-d", f"{workdir}/{TRACE_DIR}", "--", *mdrun]  # fmt: skip
            return f'exec {ROCM_BIN}/rocprofv3" {shlex.join(trace)}\n'
        if profile == "counters":
            return counters_script(mdrun, workdir, options.counters_args)
        if profile == "systrace":
            return systrace_script(mdrun, workdir, options)
        return "exec " + shlex.join(mdrun) + "\n"

    def profile_outcome(self, run_dir: Path, profile: ProfileMode) -> ProfileOutcome | None:
        if profile == "counters":
            return counters_outcome(run_dir / COUNTERS_DIR)
        if profile == "systrace":
            return systrace_outcome(run_dir / SYSTRACE_DIR)
        return None

    def default_profile(self, stack: str | None) -> ProfileMode:
        """The kernel trace, where the image's stack ships rocprofv3."""
        return "trace" if STACKS[stack or "amd"].has_profilers else "none"

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
        problems = super().preflight(simd, gpu_arch, options)
        if profile != "none" and stack in STACKS and not STACKS[stack].has_profilers:
            problems.append(
                f"--profile={profile} needs AMD's profilers (rocprofv3, rocprof-compute, "
                f"rocprof-sys), which the {stack} ROCm stack does not ship; run without "
                "--profile, or build with ORCH_ROCM_STACK=amd"
            )
        elif profile == "systrace":
            problems += systrace_problems()
        problem = self.target_problem(gpu_arch, image)
        if problem:
            problems.append(problem)
        return problems

    def target_problem(self, gpu_arch: str | None, image: str | None) -> str | None:
        """Why the host's GPU cannot run the image's code: its target (the KFD topology
        below `sys_root`) is not among the image's targets (`gpu_arch`, comma-joined)."""
        host = detect_gpu_arch(self.sys_root)
        targets = split_targets(gpu_arch)
        if not host or not targets or host in targets:
            return None
        held = ",".join(targets)
        with_host = f"{held},{host}"
        return (
            f"the image {image or 'to run'} holds GPU code for {held} only, but this "
            f"host's GPU is {host}, which it cannot run; rebuild it with that target added "
            f"(ORCH_GPU_ARCH={with_host}, or --gpu-arch {with_host} on build or bench), "
            "or run this build on the CPU with --cpu-only"
        )

    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> KernelBreakdown | None:
        """GPU kernels are only known from a trace."""
        return parse_rocprof(run_dir / TRACE_DIR) if profile == "trace" else None

    def profile_breakdown(self, run_dir: Path) -> KernelBreakdown | None:
        traces = run_dir / TRACE_DIR
        if traces.is_dir() and find_rocprof_files(traces):
            return parse_rocprof(traces)
        return None

    def devices(self, sys_root: Path) -> DeviceInfo:
        info = DeviceInfo()
        for card in sorted((sys_root / "sys/class/drm").glob("card[0-9]*/device")):
            if _read(card / "vendor") != "0x1002":
                continue
            info.gpu_model = _read(card / "product_name") or _read(card / "device")
            info.gpu_perf_level = _read(card / "power_dpm_force_performance_level")
            driver = card / "driver" / "module" / "version"
            info.gpu_driver = _read(driver) or _read(sys_root / "sys/module/amdgpu/version")
            break
        info.gpu_target = detect_gpu_arch(sys_root)
        if info.gpu_perf_level not in PINNED_LEVELS:
            info.warnings.append(
                f"GPU performance level is {info.gpu_perf_level or 'unknown'}, not pinned: run "
                f"`sudo rocm-smi --setperflevel high` before benchmarking"
            )
        return info
