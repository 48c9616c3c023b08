"""How ROCm GROMACS images are built: the stack's builder, its stable compiler, and the
CMake flags of one build for every GPU target.

Stable builds use the stack's compiler; dev builds send HIP straight through the clang
under test with the flags hipcc would inject, and the stable compiler's AMDGPU
code-object version (`code_object_flag`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from orchestrator.core.settings import GromacsSource, Settings
from orchestrator.platforms.base import (
    PREFIX_MAP,
    BuildFacts,
    Compiler,
    Flavor,
    Probe,
    common_cmake_flags,
)
from orchestrator.platforms.rocm import therock
from orchestrator.platforms.rocm.stacks import (
    STACKS,
    code_object_flag,
    code_object_version,
    rocm_path,
    stack,
)
from orchestrator.platforms.rocm.targets import DEFAULT_ARCH, gpu_arch, gpu_archs, offload_flags
from orchestrator.platforms.roles import BuildRole

#: What hipcc injects; going through clang directly puts these on us (field report).
HIP_DEV_FLAGS = (
    "-fPIC -fno-gpu-rdc -ffast-math -munsafe-fp-atomics -fdenormal-fp-math=ieee "
    "-fcuda-flush-denormals-to-zero -fno-slp-vectorize -Wno-unused-command-line-argument "
    "-Wno-pass-failed"
)


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


class RocmBuild(BuildRole):
    """HIP GROMACS for the settings' GPU targets, on the settings' stack."""

    default_base = STACKS["amd"].default_base
    default_gromacs: ClassVar[GromacsSource] = STACKS["amd"].default_gromacs
    gpu_support = "HIP"
    target_prefix = "gfx"
    languages = ("C", "CXX", "HIP")
    tested_languages = ("HIP",)

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
        used = stack(settings)
        if used.packages == "distribution":
            own = settings.model_copy(update={"rocm_device_libs": None})  # the stack's, checked
            return context | {"llvm": used.llvm_major, "device_libs": used.device_libs(own)}
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
        if not stack(settings).pins_release:
            return {"rocm_stack": settings.rocm_stack}
        return {"rocm_version": settings.rocm_version, "rocm_stack": settings.rocm_stack}

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
            extra = f" {settings.device_flags}" if settings.device_flags else ""
            flags.append(f"-DCMAKE_HIP_FLAGS={hip_flags}{extra}")
        elif settings.device_flags:
            flags.append(f"-DCMAKE_HIP_FLAGS={settings.device_flags}")
        flags += [f"-DGMX_HIP_TARGET_ARCH={','.join(targets)}"]
        if explicit:
            flags += [f"-DCMAKE_HIP_ARCHITECTURES={cmake_list}", f"-DGPU_TARGETS={cmake_list}"]
        if used.cmake_rocm_root:
            flags.append(f"-DCMAKE_PREFIX_PATH={rocm}")
        flags += common_cmake_flags(settings, prefix)
        flags += used.extra_cmake_flags
        if explicit:  # GROMACS's own check of each target runs hipcc; the answer is known
            flags += [f"-DHIPCC_HAS_TARGET_ARCH_{target}=TRUE" for target in targets]
        return flags

    def compiler_problems(self, facts: BuildFacts, compiler: Compiler) -> list[str]:
        hip = facts.cmake_compilers.get("CMAKE_HIP_COMPILER", "")
        if hip != compiler.hip:
            return [f"CMAKE_HIP_COMPILER is {hip!r}, asked for {compiler.hip}"]
        return []

    def recorded_compiler(self, facts: BuildFacts, compiler: Compiler) -> str:
        return self.compiler_under_test(compiler)
