"""Whether an imported LLVM runs in the builder image, said in one paragraph if not.

Twice: before an image is made, the symbol versions the tree's binaries and libraries
need (`parsers.elf`) against the builder's glibc and libstdc++; then, in the image made,
its tools run (`--version`), `ldd` says where each library comes from, and on a GPU
platform clang compiles a kernel against the device libraries, as an LLVM toolchain's
build does. The loader names only the first thing missing; the first check names all.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from orchestrator.core.errors import UserError
from orchestrator.engine import Client
from orchestrator.images.catalog import probe
from orchestrator.images.llvm_tree import DEVICE_REQUIRED, REQUIRED, LlvmTree
from orchestrator.parsers.elf import dotted, newest

SYSTEM_SCRIPT = r"""
. /etc/os-release 2>/dev/null; echo "os=${PRETTY_NAME:-unknown}"
echo "glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed 's/^glibc //')"
lib=$(ldconfig -p 2>/dev/null | sed -n 's/^.*libstdc++\.so\.6 (.*) => //p' | head -n 1)
if [ -n "$lib" ]; then
  echo "glibcxx=$(grep -ao 'GLIBCXX_3\.4\.[0-9]*' "$lib" | sort -uV | tail -n 1)"
fi
"""

RUN_SCRIPT = r"""
cd {prefix} || exit 1
for tool in {tools}; do
  out=$(bin/$tool --version 2>&1); code=$?
  echo "@@run $tool $code"; printf '%s\n' "$out" | head -n 4
done
for file in {binaries}; do echo "@@ldd $file"; ldd "$file" 2>&1; done
"""

SMOKE_SCRIPT = r"""
printf '%s\n' '#include <hip/hip_runtime.h>' '__global__ void smoke(float *x) {{' \
  '  x[threadIdx.x] = sinf(x[threadIdx.x]) + expf(x[threadIdx.x]);' '}}' >/tmp/smoke.hip
{prefix}/bin/clang++ -x hip --cuda-device-only -O3 -c /tmp/smoke.hip -o /tmp/smoke.o \
  --offload-arch={gpu_arch} --rocm-path={rocm_path} --rocm-device-lib-path={device_libs} \
  {code_object_flag} 2>&1 | tail -n 12
exit "${{PIPESTATUS[0]}}"
"""


@dataclass(frozen=True)
class BuilderSystem:
    """The builder image's system, as the import's paragraphs name it."""

    image: str
    name: str
    glibc: tuple[int, ...] | None
    glibcxx: tuple[int, ...] | None

    def said(self) -> str:
        parts = [self.name]
        if self.glibc:
            parts.append(f"glibc {dotted(self.glibc)}")
        if self.glibcxx:
            parts.append(f"libstdc++ up to GLIBCXX_{dotted(self.glibcxx)}")
        return f"{self.image} ({', '.join(parts)})"


def builder_system(client: Client, image: str) -> BuilderSystem:
    _, out = probe(client, image, ["sh", "-c", SYSTEM_SCRIPT])
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    glibc = newest([values.get("glibc", "")], "")
    return BuilderSystem(
        image, values.get("os", "unknown"), glibc, newest([values.get("glibcxx", "")], "GLIBCXX_")
    )


@dataclass(frozen=True)
class Need:
    what: str  # `glibc 2.38 (GLIBC_2.38)`
    file: str  # prefix path of the file that needs it
    version: tuple[int, ...]


def needs(tree: LlvmTree) -> tuple[Need | None, Need | None]:
    """The newest glibc and libstdc++ versions the tree's tools and their libraries need
    (not clang's runtime libraries in lib/clang/: programs load those, not the compiler)."""
    glibc: Need | None = None
    glibcxx: Need | None = None
    for rel, facts in sorted(tree.elf.items()):
        if rel.startswith("lib/clang/"):
            continue
        glibc_libs = (v for lib, v in facts.versions.items() if lib != "libstdc++.so.6")
        names = [name for wanted in glibc_libs for name in wanted]
        found = newest(names, "GLIBC_")
        if found and (glibc is None or found > glibc.version):
            glibc = Need(f"glibc {dotted(found)} (GLIBC_{dotted(found)})", rel, found)
        found = newest(facts.versions.get("libstdc++.so.6", ()), "GLIBCXX_")
        if found and (glibcxx is None or found > glibcxx.version):
            glibcxx = Need(f"libstdc++ GLIBCXX_{dotted(found)}", rel, found)
    return glibc, glibcxx


def refuse_other_system(tree: LlvmTree, system: BuilderSystem) -> None:
    """Raise when a file of the tree needs a newer glibc or libstdc++ than the builder has."""
    glibc, glibcxx = needs(tree)
    over = [
        need for need, has in ((glibc, system.glibc), (glibcxx, system.glibcxx))
        if need is not None and has is not None and need.version > has
    ]  # fmt: skip
    if not over:
        return
    said = " and ".join(f"its {need.file} needs {need.what}" for need in over)
    made = tree.elf[over[0].file].comment
    by = f"; {over[0].file} was made by {made[0]}" if made else ""
    raise UserError(
        f"The LLVM {tree.kind} {tree.root} was built for a newer system than the builder "
        f"image {system.said()}: {said}{by}. The compiler must run where GROMACS is built, "
        f"so nothing was imported. {fix(system)}"
    )


def fix(system: BuilderSystem) -> str:
    return (
        f"Build LLVM for the builder's system: on a machine running {system.name}, or in a "
        f"container of the builder (`docker run --rm -it -v ~/llvm-project:/llvm-project "
        f"{system.image} bash`, then cmake and ninja there), and import that tree; or let "
        "this tool build the commit with `--llvm <commit>` (its workspace keeps the build "
        "tree, so later commits cost only what they change)."
    )


@dataclass
class Ran:
    """What the run check saw: clang's `--version` line, and lines worth saying."""

    version_line: str = ""
    notes: list[str] = field(default_factory=list)


def run_check(
    client: Client, image: str, tree: LlvmTree, prefix: str, system: BuilderSystem,
    smoke: dict[str, str],
) -> Ran:  # fmt: skip
    """Run the imported tools in `image`; raise a paragraph when they do not run as the
    tree's own (a loader error, a missing library, another library of the same name)."""
    tools = REQUIRED + (DEVICE_REQUIRED if smoke else ())
    binaries = sorted(rel for rel in tree.elf if rel.startswith("bin/"))
    script = RUN_SCRIPT.format(
        prefix=shlex.quote(prefix), tools=" ".join(tools), binaries=shlex.join(binaries)
    )
    _, out = probe(client, image, ["bash", "-c", script])
    runs, ldd = _sections(out)
    ran = Ran()
    failed = [(tool, lines) for tool, (code, lines) in runs.items() if code != 0]
    missing = sorted({line.split()[0] for lines in ldd.values() for line in lines
                      if line.rstrip().endswith("=> not found")})  # fmt: skip
    versions = sorted({line.strip() for lines in ldd.values() for line in lines
                       if "version `" in line and "not found" in line})  # fmt: skip
    if failed or missing or versions or not runs:
        raise UserError(_not_running(tree, system, failed, missing, versions, out))
    ran.version_line = runs["clang"][1][0] if runs["clang"][1] else ""
    ran.notes += _loaded_elsewhere(client, image, tree, prefix, ldd)
    if smoke:
        ran.notes.append(_smoke(client, image, tree, prefix, smoke))
    return ran


def _sections(out: str) -> tuple[dict[str, tuple[int, list[str]]], dict[str, list[str]]]:
    runs: dict[str, tuple[int, list[str]]] = {}
    ldd: dict[str, list[str]] = {}
    current: list[str] = []
    for line in out.splitlines():
        if line.startswith("@@run "):
            _, tool, code = line.split(" ", 2)
            current = []
            runs[tool] = (int(code) if code.strip().lstrip("-").isdigit() else -1, current)
        elif line.startswith("@@ldd "):
            current = ldd.setdefault(line.removeprefix("@@ldd "), [])
        else:
            current.append(line)
    return runs, ldd


def _not_running(
    tree: LlvmTree, system: BuilderSystem, failed: list[tuple[str, list[str]]],
    missing: list[str], versions: list[str], out: str,
) -> str:  # fmt: skip
    if failed:
        tool, lines = failed[0]
        words = next((line.strip() for line in lines if line.strip()), "no output")
        said = f"`bin/{tool} --version` stops with `{words[:300]}`"
    elif versions:
        said = f"ldd says `{versions[0][:300]}`"
    else:
        said = f"the check printed nothing usable: {out.strip()[:300]}"
    if missing:
        said += (
            f"; its binaries need {', '.join(missing)}, which neither the tree nor the "
            "builder's system holds"
        )
    left = sorted(dict.fromkeys(tree.left_out))
    if left:
        said += (
            f" (the tree's {left[0]} leads out of the tree and is not followed: a "
            "distribution's LLVM keeps its libraries in the system's own folders, and "
            "`--package clang-<N>` installs one in the builder instead)"
        )
    return (
        f"The LLVM {tree.kind} {tree.root} does not run in the builder image "
        f"{system.said()}: {said}. It was built for another system, and the compiler must "
        f"run where GROMACS is built, so nothing was tagged. {fix(system)}"
    )


def _loaded_elsewhere(
    client: Client, image: str, tree: LlvmTree, prefix: str, ldd: dict[str, list[str]]
) -> list[str]:
    """Libraries the tree holds that its binaries load from the builder instead: said
    when the two are the same bytes, refused when not (the compiler would be the tree's
    clang with another LLVM)."""
    elsewhere: dict[str, tuple[str, str]] = {}  # soname → (the builder's path, tree path)
    system: dict[str, str] = {}  # LLVM's own libraries the tree lacks → the builder's path
    for lines in ldd.values():
        for line in lines:
            soname, arrow, rest = line.strip().partition(" => ")
            path = rest.split(" (")[0].strip()
            if not arrow or not path.startswith("/") or path.startswith(prefix + "/"):
                continue
            held = tree.holds(soname)
            if held:
                elsewhere[soname] = (path, held)
            elif re.match(r"lib(LLVM|clang|lld|Polly|MLIR)", soname):
                system[soname] = path
    notes = [
        f"{soname}: the tree does not hold it; its binaries load the builder's {path}"
        for soname, path in sorted(system.items())
    ]
    if not elsewhere:
        return notes
    paths = sorted({path for path, _ in elsewhere.values()})
    _, out = probe(client, image, ["sha256sum", *paths])
    builder_sums = {line.split()[1]: line.split()[0] for line in out.splitlines() if "  " in line}
    _, out = probe(client, image, ["sha256sum", *(f"{prefix}/{h}" for _, h in elsewhere.values())])
    tree_sums = {line.split()[1]: line.split()[0] for line in out.splitlines() if "  " in line}
    for soname, (path, held) in sorted(elsewhere.items()):
        same = builder_sums.get(path) is not None and builder_sums.get(path) == tree_sums.get(
            f"{prefix}/{held}"
        )
        if not same:
            raise UserError(
                f"The LLVM {tree.kind} {tree.root} runs in the builder, but its binaries "
                f"load {soname} from the builder's {path}, not the tree's {held}, and the "
                "two differ: the compiler would be the tree's clang with another LLVM's "
                "library, and what it compiles would be neither's. Its binaries have no "
                "RUNPATH leading to the tree's lib/ (LLVM's default is $ORIGIN/../lib); "
                "build it with LLVM's default RPATH settings and import that tree, or let "
                "this tool build the commit with `--llvm <commit>`. Nothing was tagged."
            )
        notes.append(
            f"{soname}: the binaries load the builder's {path} (no RUNPATH into the tree), "
            f"the same bytes as the tree's {held}"
        )
    return notes


def _smoke(client: Client, image: str, tree: LlvmTree, prefix: str, smoke: dict[str, str]) -> str:
    """Compile one kernel for the primary GPU target against the device libraries."""
    script = SMOKE_SCRIPT.format(prefix=shlex.quote(prefix), **smoke)
    code, out = probe(client, image, ["bash", "-c", script])
    if code != 0:
        lacking = re.search(r"unable to find '([^']+)'", out)
        fix = (
            f"clang calls {lacking[1]}, which the tree lacks or the import does not take: "
            "build it there and import again"
            if lacking
            else "Import an LLVM built with the AMDGPU target and no older than the device "
            "libraries, or point ORCH_ROCM_DEVICE_LIBS at device libraries this LLVM reads"
        )
        raise UserError(
            f"The LLVM {tree.kind} {tree.root} runs in the builder, but cannot compile for "
            f"{smoke['gpu_arch']} with the device libraries in {smoke['device_libs']}: "
            f"{' '.join(out.split())[:400]}. A GROMACS build would fail the same way, so "
            f"nothing was tagged. {fix}."
        )
    return f"device libraries: smoke compile for {smoke['gpu_arch']} (sinf, expf) passed"
