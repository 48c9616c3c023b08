"""How AMD's TheRock 7.12 ships ROCm, as the amd stack's builder template installs it.

Every name here comes from TheRock's repository at tag `therock-7.12` (the recorded
facts, with their provenance, are tests/data/therock-7.12/facts.json; a test checks the
rendered template against them, so a name changed here without evidence fails it):

- Debian package names (`build_tools/packaging/linux/packaging_utils.py`
  `update_package_name`): the package.json name with `-devel` made `-dev`, then
  `<major>.<minor>`, then for a GPU-family package `-<family>` lower-cased and cut at
  its first `-` (gfx120X-all -> gfx120x).
- The GPU family of each target: RELEASES.md's table of released families.
- The prefix: `/opt/rocm/core-<major>.<minor>` (build_package.py); the post-install
  links only `/opt/rocm/core`, `/opt/rocm/core-<major>` and a few `/usr/bin` tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.core.errors import UsageError

#: GPU target -> TheRock family, as RELEASES.md (therock-7.12) lists the released ones.
FAMILIES: dict[str, str] = {
    "gfx942": "gfx94X-dcgpu",
    "gfx950": "gfx950-dcgpu",
    "gfx1100": "gfx110X-all",
    "gfx1101": "gfx110X-all",
    "gfx1102": "gfx110X-all",
    "gfx1103": "gfx110X-all",
    "gfx1151": "gfx1151",
    "gfx1200": "gfx120X-all",
    "gfx1201": "gfx120X-all",
}

#: The packages (package.json names) GROMACS' HIP build and the profilers need, none
#: of them per GPU family: amdclang++ and hipcc (amdrocm-llvm, its -devel adds the
#: `bin/amdclang++` link), HIP with hiprtc.h and CMake's hip-lang (amdrocm-runtime-devel),
#: rocprofv3 (amdrocm-profiler-base), rocprof-compute and rocprof-sys (amdrocm-profiler).
GENERIC_PACKAGES = (
    "amdrocm-llvm-devel",
    "amdrocm-runtime-devel",
    "amdrocm-profiler-base",
    "amdrocm-profiler",
)
#: Per GPU family: hipFFT/rocFFT (amdrocm-fft-devel), rocPRIM (amdrocm-ccl-devel).
FAMILY_PACKAGES = ("amdrocm-fft-devel", "amdrocm-ccl-devel")


@dataclass(frozen=True)
class Need:
    """A file the recipes use below the ROCm root, and the package.json package that
    ships it (named in the check that fails when it is missing)."""

    path: str
    test: str  # `-x`, `-f` or `-d`
    package: str
    why: str
    per_family: bool = False


NEEDS = (
    Need("bin/amdclang++", "-x", "amdrocm-llvm-devel", "the stable HIP compiler"),
    Need("bin/hipcc", "-x", "amdrocm-llvm", "GROMACS checks HIP flags with it"),
    Need("bin/hipconfig", "-x", "amdrocm-llvm", "reports the HIP version"),
    Need("bin/rocprofv3", "-x", "amdrocm-profiler-base", "the kernel profiler"),
    Need("bin/rocprof-compute", "-x", "amdrocm-profiler", "--profile=counters"),
    Need("bin/rocprof-sys-sample", "-x", "amdrocm-profiler", "--profile=systrace"),
    Need("include/hip/hiprtc.h", "-f", "amdrocm-runtime-devel", "VkFFT compiles with hiprtc"),
    Need(
        "lib/cmake/hip-lang/hip-lang-config.cmake",
        "-f",
        "amdrocm-runtime-devel",
        "CMake's HIP language",
    ),
    Need(
        "lib/cmake/rocprim/rocprim-config.cmake",
        "-f",
        "amdrocm-ccl-devel",
        "rocPRIM",
        per_family=True,
    ),
    Need(
        "lib/cmake/hipfft/hipfft-config.cmake", "-f", "amdrocm-fft-devel", "hipFFT", per_family=True
    ),
    Need("lib/llvm/bin/ld.lld", "-x", "amdrocm-llvm", "LLVM toolchains link with it"),
    Need("lib/llvm/amdgcn/bitcode", "-d", "amdrocm-llvm", "the device libraries dev builds link"),
)
#: Where the installed release names itself (rocm-core, in amdrocm-base).
VERSION_FILE = ".info/version"


def major_minor(version: str) -> str:
    """`7.12` of `7.12` or `7.12.0`: what package names and the prefix carry."""
    return ".".join(version.split(".")[:2])


def package_suffix(family: str) -> str:
    """The family as package names carry it: gfx120X-all -> gfx120x."""
    return family.lower().split("-", 1)[0]


def deb_name(package: str, version: str, family: str | None = None) -> str:
    """The Debian name of a package.json package: amdrocm-fft-devel, 7.12, gfx120X-all
    -> amdrocm-fft-dev7.12-gfx120x."""
    name = package.removesuffix("-devel") + "-dev" if package.endswith("-devel") else package
    name += major_minor(version)
    return f"{name}-{package_suffix(family)}" if family else name


def families(targets: Sequence[str]) -> list[str]:
    """The TheRock families a target list needs, in the targets' order, each once; a
    target no released family holds is refused before anything is built."""
    unknown = [t for t in targets if t not in FAMILIES]
    if unknown:
        known = ", ".join(f"{t} ({f})" for t, f in FAMILIES.items())
        raise UsageError(
            f"GPU target {', '.join(unknown)} is in no GPU family TheRock 7.12 releases "
            f"packages for (RELEASES.md lists {known}). Choose targets from those "
            "(ORCH_GPU_ARCH), or build with ORCH_ROCM_STACK=debian, whose clang compiles "
            "for any target"
        )
    return list(dict.fromkeys(FAMILIES[t] for t in targets))


def packages(targets: Sequence[str], version: str) -> list[str]:
    """The Debian packages to install for these targets: the generic ones, then each
    family's."""
    names = [deb_name(p, version) for p in GENERIC_PACKAGES]
    for family in families(targets):
        names += [deb_name(p, version, family) for p in FAMILY_PACKAGES]
    return names


def needs(targets: Sequence[str], version: str) -> list[dict[str, str]]:
    """The post-install checks: path, test, the Debian package that ships it (the first
    family's for a per-family file), and why the recipes need it."""
    first = families(targets)[0]
    return [
        {
            "path": n.path,
            "test": n.test,
            "package": deb_name(n.package, version, first if n.per_family else None),
            "why": n.why,
        }
        for n in NEEDS
    ]


def tarball_family(targets: Sequence[str]) -> str:
    """The one family a release tarball holds; a target list of several is refused."""
    found = families(targets)
    if len(found) > 1:
        raise UsageError(
            f"a TheRock release tarball holds one GPU family, but the targets "
            f"{','.join(targets)} need {', '.join(found)}. Build one image per family "
            "(ORCH_GPU_ARCH), or install from AMD's apt repository (leave ORCH_ROCM_SOURCE "
            "unset)"
        )
    return found[0]
