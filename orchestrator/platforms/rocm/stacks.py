"""The two ROCm stacks (`ORCH_ROCM_STACK`) as data: where each one's base, HIP runtime,
LLVM tools and stable compiler come from and live in the image, and what its builds
do differently. Everything the ROCm roles ask of a stack is a value here, so a third
stack is one more entry in `STACKS` and its builder template.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orchestrator.core.settings import GROMACS_2026_RELEASE, GromacsSource, Settings
from orchestrator.platforms.base import DEBOOTSTRAP_REPO
from orchestrator.platforms.rocm import therock

#: The LLVM major Debian's hipcc (7.0.2) drives; its builder template checks it.
DEBIAN_LLVM = "21"
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
    each lives in the image (AMD's single ROCm root, or Debian's FHS layout).

    The paths are patterns: `{version}` is the ROCm release's major.minor, `{release}`
    the release as set, `{root}` the ROCm root and `{llvm}` the LLVM tools' folder.
    """

    name: str
    default_base: str
    builder_template: str
    default_gromacs: GromacsSource
    #: Where the builder's packages come from: TheRock's (per GPU family, `therock.py`)
    #: or the distribution's (whose clang major the builder template checks: `llvm_major`).
    packages: Literal["therock", "distribution"]
    llvm_major: str | None
    #: The ROCm root (`--rocm-path`), the LLVM tools (clang, llvm-objdump, llvm-readelf),
    #: the device libraries dev builds link, and the stable HIP compiler.
    root: str
    llvm: str
    bitcode: str
    hip: str
    #: The stable compiler's name in tags (`rocm7.12`, `rocm-debian-clang21`).
    compiler_name: str
    #: Whether images pin the ROCm release (their `rocm_version` label).
    pins_release: bool
    #: CMake's HIP ROCm root and `--rocm-path`; False where CMake finds HIP by itself.
    cmake_rocm_root: bool
    #: Whether stable builds keep the vendor's HIP defaults (AMD) or take the same HIP
    #: flags as dev builds (Debian: clang driven as hipcc drives it, so stable and dev
    #: differ only in the compiler).
    stable_hip_flags: bool
    #: CMake flags beyond the shared ones (Debian's, as the CPU build: no tests, no API
    #: libraries, and no Colvars, 45 slow units no benchmark system uses).
    extra_cmake_flags: tuple[str, ...]
    #: What a microbenchmark links to get HIP's runtime.
    microbench_libs: tuple[str, ...]
    has_profilers: bool
    #: The code-object version the stable compiler emits by default (dev builds follow it).
    stable_code_object_version: int

    def _expand(self, pattern: str, release: str) -> str:
        version = therock.major_minor(release)
        root = self.root.format(version=version)
        llvm = self.llvm.format(root=root)
        return pattern.format(version=version, release=release, root=root, llvm=llvm)

    def rocm_path(self, settings: Settings) -> str:
        return self._expand(self.root, settings.rocm_version)

    def llvm_bin(self, settings: Settings) -> str:
        """The stack's LLVM tools (clang, llvm-objdump, llvm-readelf)."""
        return self._expand(self.llvm, settings.rocm_version)

    def llvm_bin_of_image(self, rocm_version: str | None = None) -> str:
        """The LLVM tools inside an image of this stack, below the ROCm root of the
        release the image pins (its `rocm_version` label; the default release when the
        image has none): TheRock 7.12 makes no /opt/rocm/lib link to rely on."""
        version = rocm_version or Settings.model_fields["rocm_version"].default
        return self._expand(self.llvm, version)

    def device_libs(self, settings: Settings) -> str:
        return settings.rocm_device_libs or self._expand(self.bitcode, settings.rocm_version)

    def stable_hip(self, settings: Settings) -> str:
        return self._expand(self.hip, settings.rocm_version)

    def stable_name(self, settings: Settings) -> str:
        return self._expand(self.compiler_name, settings.rocm_version)


STACKS: dict[str, RocmStack] = {
    "amd": RocmStack(
        name="amd",
        default_base="ubuntu:24.04",
        builder_template="rocm-base",
        default_gromacs=GROMACS_2026_RELEASE,
        packages="therock",
        llvm_major=None,
        root="/opt/rocm/core-{version}",
        llvm="{root}/lib/llvm/bin",
        bitcode="{root}/lib/llvm/amdgcn/bitcode",
        hip="{root}/bin/amdclang++",
        compiler_name="rocm{release}",
        pins_release=True,
        cmake_rocm_root=True,
        stable_hip_flags=False,
        extra_cmake_flags=(),
        microbench_libs=("--hip-link",),
        has_profilers=True,
        stable_code_object_version=AMD_CODE_OBJECT_VERSION,
    ),
    "debian": RocmStack(
        name="debian",
        default_base=f"{DEBOOTSTRAP_REPO}:sid",
        builder_template="rocm-debian-base",
        default_gromacs=GROMACS_2026_RELEASE,
        packages="distribution",
        llvm_major=DEBIAN_LLVM,
        root="/usr",
        llvm=f"/usr/lib/llvm-{DEBIAN_LLVM}/bin",
        bitcode=f"/usr/lib/llvm-{DEBIAN_LLVM}/lib/clang/{DEBIAN_LLVM}/amdgcn/bitcode",
        hip="{llvm}/clang++",
        compiler_name=f"rocm-debian-clang{DEBIAN_LLVM}",
        pins_release=False,
        cmake_rocm_root=False,
        stable_hip_flags=True,
        extra_cmake_flags=(
            "-DBUILD_TESTING=OFF",
            "-DGMXAPI=OFF",
            "-DGMX_INSTALL_NBLIB_API=OFF",
            "-DGMX_USE_COLVARS=NONE",
        ),
        microbench_libs=("-lamdhip64",),
        has_profilers=False,
        stable_code_object_version=DEBIAN_CODE_OBJECT_VERSION,
    ),
}


def stack(settings: Settings) -> RocmStack:
    return STACKS[settings.rocm_stack]


def of_image(variant: str | None) -> RocmStack:
    """The stack an image records (its `rocm_stack` label); amd for an image from before
    the Debian stack existed, which records none."""
    return STACKS[variant or "amd"]


def rocm_path(settings: Settings) -> str:
    """Where ROCm lives in the images: AMD's reference layout, or /usr on Debian."""
    return stack(settings).rocm_path(settings)


def code_object_version(settings: Settings) -> int:
    """The code-object version of dev builds: the setting, else the stable compiler's
    default, so that a dev build and the stable build share the kernels' ABI (a bisect
    across LLVM's change of default would otherwise see every kernel change)."""
    return settings.code_object_version or stack(settings).stable_code_object_version


def code_object_flag(settings: Settings) -> str:
    """The dev compiler's flag for :func:`code_object_version`: `-mcode-object-version=6`."""
    return f"-mcode-object-version={code_object_version(settings)}"
