"""Real clang+lld, built on the lent 16-core host from the template's own functions.

The host (no container engine) ran `configure` and `build` as the product renders them
(`host-build/functions.sh`, extracted from the rendered `toolchain-llvm` script by
`host-build/drive.sh`), on Debian's LLVM 22.1.8 source cut to what the build needs, then
the one-file AMDGPU commit of `tests/real_llvm.py`, then compiled one GROMACS HIP unit
(`pme_solve_hip.cpp`, device side, gfx1201) with both clangs. Its outputs are the
fixtures here (see `tests/data/real_llvm/README.md`); these tests read them with the
product's own parsers and probe, so what they claim is checked, not retyped.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from orchestrator.codegen.diff import diff
from orchestrator.codegen.model import Codegen, parse_probe_output
from orchestrator.images.toolchain_llvm import NinjaProgress, configure_line, example_script

HOST = Path(__file__).parent / "data" / "real_llvm" / "host-build"
UNIT = "pme_solve_hip.cpp.o.0.hipv4-amdgcn-amd-amdhsa--gfx1201"
SIDES = ("clang21", "clang22-release", "clang22-edited")


def _times() -> dict[str, float]:
    found = {}
    for line in (HOST / "times.txt").read_text().splitlines():
        name, seconds, *rest = line.split()
        assert not rest or rest == ["rc=0"], line
        found[name] = float(seconds)
    return found


def test_the_host_ran_the_line_the_template_renders_now(rocm_settings: Any) -> None:
    """If the template's configure line changes, these figures are stale: run the host again."""
    line = configure_line(example_script(rocm_settings))
    assert line in (HOST / "functions.sh").read_text()


def test_the_one_file_commit_rebuilds_that_file_and_the_links() -> None:
    """`ninja -n` after the commit, in the built tree: the edited unit, clang's version
    (the commit it names), the AMDGPU library, the two shared libraries and the links."""
    progress = NinjaProgress()
    for line in (HOST / "plan2.txt").read_text().splitlines():
        progress.feed(line)
    assert progress.total == 15
    assert list(progress.compiled) == [
        "lib/Target/AMDGPU/AMDGPUTargetMachine.cpp",
        "tools/clang/lib/Basic/Version.cpp",
    ]
    assert set(progress.linked) == {
        "lib/libLLVMAMDGPUCodeGen.a", "lib/libLLVM.so.22.1", "lib/libclang-cpp.so.22.1",
        "bin/llvm-readobj", "bin/llvm-objdump", "bin/lld", "bin/clang-22",
        "bin/clang-offload-bundler",
    }  # fmt: skip
    why = (HOST / "explain2.txt").read_text().splitlines()
    assert why[0].startswith("ninja explain: output lib/Target/AMDGPU/CMakeFiles/")
    assert "older than most recent input" in why[0] and "AMDGPUTargetMachine.cpp" in why[0]
    assert why[1] == "ninja explain: command line changed for tools/clang/lib/Basic/VCSVersion.inc"


def test_clang_names_each_commit_and_the_times_are_recorded() -> None:
    repository = (HOST / "repository").read_text().strip()
    for n in (1, 2):
        commit = (HOST / f"commit{n}").read_text().strip()
        text = (HOST / f"prefix{n}.txt").read_text()
        assert f"clang version 22.1.8 ({repository} {commit})" in text
    times = _times()
    assert 600 < times["ninja-distribution1"] < 3600  # cold, 16 cores
    assert times["ninja-distribution2"] < 120  # the one-file commit
    assert times["configure2"] < 30


def _probe(engine: Any, image: str, side: str) -> Codegen:
    """The product's probe over one side's code object, with the builder's llvm-21 tools."""
    probe = Path(__file__).parents[1] / "orchestrator" / "payloads" / "codegen_probe.py"
    tools = "/usr/lib/llvm-21/bin"
    out = subprocess.run(
        ["docker", "run", "--rm", "--network", "none",
         "-v", f"{probe}:/probe.py:ro", "-v", f"{HOST / 'codeobjects' / side}:/co:ro", image,
         "python3", "/probe.py", "gpu", "--objdump", f"{tools}/llvm-objdump",
         "--readelf", f"{tools}/llvm-readelf", "--cxxfilt", f"{tools}/llvm-cxxfilt", "/co"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return parse_probe_output(out, source=side, build=side)


@pytest.fixture(scope="module")
def fingerprints(engine: Any, rocm_settings: Any) -> dict[str, Codegen]:
    from orchestrator.images.builder import ensure_builder

    image = ensure_builder(engine, rocm_settings).tag  # Debian sid with llvm-21's tools
    return {side: _probe(engine, image, side) for side in SIDES}


def test_the_probe_reads_the_unit_each_clang_compiled(fingerprints: dict[str, Codegen]) -> None:
    for side, codegen in fingerprints.items():
        kernels = [k for k in codegen.kernels.values() if k.kind == "kernel"]
        assert len(kernels) == 16, side  # pmeSolveKernel's 16 instantiations
        assert {k.category for k in kernels} == {"pme_solve"}, side
        assert codegen.code_object_versions == [6], side


def test_the_edit_changes_the_kernels_and_clang_22_differs_from_21(
    fingerprints: dict[str, Codegen],
) -> None:
    """The one-line AMDGPU edit changes every kernel of the unit (so the loop sees it),
    as does going from Debian's clang 21 to upstream clang 22."""
    edit = diff(fingerprints["clang22-release"], fingerprints["clang22-edited"])
    upgrade = diff(fingerprints["clang21"], fingerprints["clang22-release"])
    for result in (edit, upgrade):
        category = result.categories["pme_solve"]
        assert len(category.changed) == 16 and category.total == 16
        assert result.code_object_note() is None  # v6 on both sides
    # The vectorizer off: memory operations no longer merged, never fewer instructions.
    assert all((d.instructions[1] or 0) >= (d.instructions[0] or 0) for d in edit.changed)
