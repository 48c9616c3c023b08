"""The post-build check of a GROMACS image: `gmx --version` and the compiler, read in the
image and compared with what was asked, before the image gets labels, a lockfile or a tag.

What it reads (the version, the compiler it found, the source's digest, the packages and
what the compile cache did) is also what the lockfile records.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator import engine
from orchestrator.core.errors import UserError
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.catalog import probe
from orchestrator.platforms import active
from orchestrator.platforms.base import KEPT, BuildFacts, CompileCacheStats, Compiler, Flavor, Probe

#: Where an image keeps the source's digest.
SHA_FILE = "/src/gromacs.tar.gz.sha256"

#: The compiler's version is its first line (gcc, clang, hipcc), or nvcc's `Cuda compilation
#: tools, release 13.0, V13.0.88` (its first line names only the driver).
VERIFY_SCRIPT = r"""gmx --version 2>&1
echo '@@compiler'; {compiler} --version 2>&1 | grep -m1 ', release ' \
  || {compiler} --version 2>&1 | head -n1
echo '@@path'; readlink -f "$(command -v {compiler})" 2>/dev/null || echo {compiler}
echo '@@reported'
readlink -f "$(gmx --version 2>/dev/null | sed -n 's/^C++ compiler: *\([^ ]*\).*/\1/p')"
echo '@@sha'; cat {sha_file} 2>/dev/null
echo '@@cmake'; grep -h '^CMAKE_[A-Z]*_COMPILER:' {prefix}/CMakeCache.txt 2>/dev/null
echo '@@packages'; dpkg-query -W -f='${{Package}}=${{Version}}\n' 2>/dev/null
echo '@@cache'; cat {kept}/compile-cache.txt 2>/dev/null
"""


def parse_version_info(text: str) -> dict[str, str]:
    """`gmx --version`'s `Key: value` lines as a dict."""
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _pairs(text: str, sep: str) -> dict[str, str]:
    split = (line.split(sep, 1) for line in text.splitlines() if sep in line)
    return {key.strip(): value.strip() for key, value in split}


def parse_facts(out: str) -> BuildFacts:
    """What `VERIFY_SCRIPT` printed, section by section."""
    sections = dict(
        [*part.split("\n", 1), ""][:2] for part in ("@@version\n" + out).split("@@")[1:]
    )
    cmake = {
        name.split(":", 1)[0]: value
        for name, value in _pairs(sections.get("cmake", ""), "=").items()
    }
    return BuildFacts(
        version_info=parse_version_info(sections.get("version", "")),
        compiler_version=sections.get("compiler", "").strip(),
        compiler_path=sections.get("path", "").strip(),
        reported_compiler=sections.get("reported", "").strip(),
        cmake_compilers=cmake,
        source_sha256=sections.get("sha", "").strip() or None,
        packages=_pairs(sections.get("packages", ""), "="),
        compile_cache=CompileCacheStats.parse(sections.get("cache", "")),
    )


def check_build(
    client: Client,
    image_id: str,
    settings: Settings,
    flavor: Flavor,
    compiler: Compiler,
    prefix: str,
) -> BuildFacts:
    """The build's facts when it is what was asked; else remove it and raise (nothing tagged)."""
    facts, problems = build_facts(
        lambda command: probe(client, image_id, command), settings, flavor, compiler, prefix
    )
    if problems:
        engine.remove_image(client, image_id)
        raise refused(flavor, compiler, settings, problems, "Nothing was tagged.")
    return facts


def build_facts(
    run: Probe, settings: Settings, flavor: Flavor, compiler: Compiler, prefix: str,
    *, kept: str = KEPT, sha_file: str = SHA_FILE,
) -> tuple[BuildFacts, list[str]]:  # fmt: skip
    """What a finished build reports (`run` runs a command where it is installed: in its
    image, or on this host for a native build) and why it is not what was asked."""
    platform = active(settings)
    tool = platform.build.compiler_under_test(compiler)
    script = VERIFY_SCRIPT.format(compiler=tool, prefix=prefix, kept=kept, sha_file=sha_file)
    _, out = run(["sh", "-c", script])
    facts = parse_facts(out)
    info = facts.version_info
    problems = []
    if "GROMACS version" not in info:
        problems.append(f"`gmx --version` did not run: {out.strip()[:300]}")
    else:
        checks: list[tuple[str, Callable[[str], bool], str]] = [
            ("Precision", lambda v: v.startswith("mixed"), "mixed (GMX_DOUBLE=OFF)"),
            ("SIMD instructions", lambda v: v == settings.simd, settings.simd),
            ("OpenMP support", lambda v: v.startswith("enabled"), "enabled"),
            (
                "GPU support",
                lambda v: v.startswith(platform.build.gpu_support),
                platform.build.gpu_support,
            ),
        ]
        for name, ok, wanted in checks:
            if not ok(info.get(name, "")):
                problems.append(f"{name} is {info.get(name, 'missing')!r}, asked for {wanted}")
        problems += platform.build.compiler_problems(facts, compiler)
    return facts, problems


def refused(
    flavor: Flavor, compiler: Compiler, settings: Settings, problems: list[str], after: str
) -> UserError:
    """The one-paragraph error of a build that is not what was asked."""
    tool = active(settings).build.compiler_under_test(compiler)
    hint = ""
    if any(p.startswith("OpenMP") for p in problems) and "clang" in tool:
        hint = " A clang build needs libomp-<N>-dev in the toolchain image for OpenMP."
    return UserError(
        f"The {flavor} GROMACS build finished but is not what was asked: "
        + "; ".join(problems)
        + f". {after}{hint}"
    )
