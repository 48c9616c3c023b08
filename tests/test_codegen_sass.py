"""Codegen for NVIDIA: the probe's SASS mode on real SASS, and its records through the
model, the diff and the table.

The fixtures (tests/data/sass, see its README) are `cuobjdump -sass` and `-res-usage` of
libgromacs.so of GROMACS 2026.3 built by nvcc 13.0 for sm_90, as is (A) and with
`-maxrregcount=48` (B), trimmed to the ELF blocks of the kernels a water benchmark ran.
cuobjdump does not run here (no CUDA toolkit): the mode's text functions are tested on
its real output; the engine test of the CUDA platform runs the real tool in an image.
Every expectation is computed from the raw text by other means than the code under test.
"""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path

import pytest

from orchestrator.codegen.diff import diff
from orchestrator.codegen.model import Codegen, parse_probe_output, probe_argv
from orchestrator.codegen.table import render
from orchestrator.core.settings import CHOICES
from orchestrator.payloads import codegen_probe as probe

DATA = Path(__file__).parent / "data" / "sass"
LIB = "libgromacs.so"
EMPTY = "_ZN3cub17CUB_300001_SM_9006detail11EmptyKernelIvEEvv"
CAPPED = (
    "_ZN3gmx41nbfe_kernel_ElecEwTwinCut_VdwLJPsw_F_cudaENS_13NBAtomDataGpuENS_10NBParamGpu"
    "ENS_10GpuFeplistEb"
)
INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);")


def text(name: str) -> str:
    return lzma.decompress((DATA / name).read_bytes()).decode()


def records(side: str) -> list[dict[str, object]]:
    found, _summary = probe.sass_records(
        LIB, LIB, text(f"sass-{side}.txt.xz"), text(f"res-usage-{side}.txt.xz")
    )
    return found


def by_place(found: list[dict[str, object]]) -> dict[tuple[str, str], dict[str, object]]:
    return {(str(r["code_object"]), str(r["name"])): r for r in found}


def raw_functions(sass: str) -> dict[tuple[int, str], list[str]]:
    """(ELF index, function) -> its instruction texts, addresses, encodings and spaces
    dropped: the test's own reading of the raw text."""
    found: dict[tuple[int, str], list[str]] = {}
    for index, elf in enumerate(sass.split("code for sm_")[1:]):
        for chunk in elf.split("Function : ")[1:]:
            name, _, body = chunk.partition("\n")
            found[(index, name.strip())] = [" ".join(m.split()) for m in INSN.findall(body)]
    return found


def raw_resources(res: str) -> dict[tuple[int, str], dict[str, int]]:
    found: dict[tuple[int, str], dict[str, int]] = {}
    for index, elf in enumerate(res.split("Resource usage:")[1:]):
        for name, line in re.findall(r" Function (\S+):\n\s+(REG:.*)", elf):
            found[(index, name)] = {k: int(v) for k, v in re.findall(r"(\S+):(\d+)", line)}
    return found


@pytest.fixture(scope="module")
def a() -> list[dict[str, object]]:
    return records("A")


@pytest.fixture(scope="module")
def b() -> list[dict[str, object]]:
    return records("B")


def test_fixtures_are_the_running_kernels_and_every_elf_is_read(a: list[dict[str, object]]) -> None:
    raw = raw_functions(text("sass-A.txt.xz"))
    assert len(a) == len(raw) == 36
    assert {r["arch"] for r in a} == {"sm_90"}
    assert all(r["kind"] == "kernel" for r in a)  # every one ends in EXIT: no -rdc here
    assert {str(r["name"]) for r in a} == {name for _index, name in raw}


def test_same_code_hashes_the_same(a: list[dict[str, object]]) -> None:
    """(a) A against itself; and cub's EmptyKernel, printed in each unit with other column
    widths, is one hash."""
    assert by_place(a) == by_place(records("A"))
    empty = [r for r in a if r["name"] == EMPTY]
    assert len(empty) == 6
    assert len({r["sha256"] for r in empty}) == 1
    assert empty[0]["instructions"] == 2  # LDC, EXIT: the self-branch and NOPs go


def test_a_against_b_changes_exactly_the_kernels_whose_sass_differs(
    a: list[dict[str, object]], b: list[dict[str, object]]
) -> None:
    """(b) The changed set against the raw texts' instruction lists, trailing padding (the
    self-branch and NOPs after the last EXIT) cut by the test's own rule."""

    def code(lines: list[str]) -> list[str]:
        last = max(i for i, line in enumerate(lines) if line.endswith("EXIT"))
        return lines[: last + 1] + [x for x in lines[last + 1 :] if x != "NOP"][1:]

    raw_a, raw_b = raw_functions(text("sass-A.txt.xz")), raw_functions(text("sass-B.txt.xz"))
    assert raw_a.keys() == raw_b.keys()
    expected = {
        name for key, name in ((k, k[1]) for k in raw_a) if code(raw_a[key]) != code(raw_b[key])
    }
    base, cand = by_place(a), by_place(b)
    changed = {
        name for (obj, name), r in base.items() if r["sha256"] != cand[(obj, name)]["sha256"]
    }
    assert changed == expected
    assert 0 < len(changed) < len(base)


def test_resources_are_res_usage(a: list[dict[str, object]], b: list[dict[str, object]]) -> None:
    """(c) Registers, stack, shared, local and constant bank 0 of every function."""
    for side, found in (("A", a), ("B", b)):
        res = raw_resources(text(f"res-usage-{side}.txt.xz"))
        objects = sorted({str(r["code_object"]) for r in found}, key=lambda o: int(o.split("#")[1]))
        assert len(res) == len(found)
        for r in found:
            raw = res[(objects.index(str(r["code_object"])), str(r["name"]))]
            got = (r["registers"], r["stack_bytes"], r["shared_bytes"], r["local_bytes"])
            assert got == (raw["REG"], raw["STACK"], raw["SHARED"], raw["LOCAL"])
            assert r["constant_bytes"] == raw["CONSTANT[0]"]


def test_registers_capped_at_48(a: list[dict[str, object]], b: list[dict[str, object]]) -> None:
    """(d) -maxrregcount=48: the FEP kernel drops from 64 registers to 48 and spills into
    an 8-byte stack frame (STL to the stack: local memory instructions appear)."""
    (before,) = [r for r in a if r["name"] == CAPPED]
    (after,) = [r for r in b if r["name"] == CAPPED]
    assert (before["registers"], after["registers"]) == (64, 48)
    assert (before["stack_bytes"], after["stack_bytes"]) == (0, 8)
    assert "local" not in before["classes"]  # type: ignore[operator]
    assert after["classes"]["local"] > 0  # type: ignore[index]


def test_one_name_in_several_units_is_keyed_apart(a: list[dict[str, object]]) -> None:
    """(e) EmptyKernel is in six ELFs of the library: six records, six keys."""
    empty = [r for r in a if r["name"] == EMPTY]
    assert len({(r["unit"], r["code_object"]) for r in empty}) == 6
    keys = [k for k in codegen("A").kernels if k.startswith(EMPTY)]
    assert sorted(keys) == sorted(f"{EMPTY}@sm_90@{r['unit']}" for r in empty)


def _function(sass: str, name: str) -> list[str]:
    for _arch, functions in probe.sass_blocks(sass):
        for found, body in functions:
            if found == name:
                return body
    raise AssertionError(name)


TARGET = re.compile(r"((?:BRA|BSSY B\d+,) (?:!?P\d, )?)0x([0-9a-f]+)( ?;)")
ADDRESS = re.compile(r"/\*([0-9a-f]{4,})\*/")


def test_moved_or_relabelled_code_keeps_its_hash() -> None:
    """(f) The same function at other addresses (printed from where it landed in a linked
    image), or with nvdisasm's ELF-wide ``.L_x_N`` labels, hashes as cuobjdump's."""
    body = _function(text("sass-A.txt.xz"), CAPPED)
    reference = probe.sass_normalise(body)
    assert sum(".L" in line for line in reference) > 10

    def moved(line: str) -> str:
        line = ADDRESS.sub(lambda m: f"/*{int(m.group(1), 16) + 0x7700:04x}*/", line)
        return TARGET.sub(
            lambda m: f"{m.group(1)}{int(m.group(2), 16) + 0x7700:#x}{m.group(3)}", line
        )

    assert [moved(line) for line in body] != body
    assert probe.sass_normalise([moved(line) for line in body]) == reference

    targets = sorted({int(m.group(2), 16) for line in body for m in TARGET.finditer(line)})
    label = {t: f".L_x_{40 + n}" for n, t in enumerate(targets)}
    nvdisasm = []
    for line in body:
        at = ADDRESS.search(line)
        if at and int(at.group(1), 16) in label:
            nvdisasm.append(f"{label[int(at.group(1), 16)]}:")
        nvdisasm.append(
            TARGET.sub(lambda m: f"{m.group(1)}`({label[int(m.group(2), 16)]}){m.group(3)}", line)
        )
    assert probe.sass_normalise(nvdisasm) == reference


def test_classes_by_opcode_family() -> None:
    assert probe.sass_class("@!P0 FFMA.FTZ R1, R2, R3, R4") == "fp32"
    assert probe.sass_class("LDG.E.64.CONSTANT R2, desc[UR4][R2.64]") == "global"
    assert probe.sass_class("STL [R1], R0") == "local"
    assert probe.sass_class("LDS.128 R4, [R0]") == "shared"
    assert probe.sass_class("UIADD3 UR4, UR4, 0x1, URZ") == "uniform"
    assert probe.sass_class("HFMA2.MMA R5, -RZ, RZ, 0, 0") == "move"
    assert probe.sass_class("BAR.SYNC.DEFER_BLOCKING 0x0") == "sync"
    assert probe.sass_class("DFMA R2, R4, R6, R2") == "fp64"
    assert probe.sass_class("@P0 BRA .L12") == "control"


def codegen(side: str) -> Codegen:
    found, summary = probe.sass_records(
        LIB, LIB, text(f"sass-{side}.txt.xz"), text(f"res-usage-{side}.txt.xz")
    )
    for r in found:
        r["demangled"] = None
    out = dict(schema=probe.SCHEMA, mode="sass", tools={"cuobjdump": "13.0"}, archs=["sm_90"],
               code_objects=summary, functions=found, elapsed_s=0.1)  # fmt: skip
    return parse_probe_output(json.dumps(out), source=side, build=side, platform="rocm")


@pytest.fixture
def cuda_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    """`cuda` among the platforms while its folder is written elsewhere."""
    known = tuple(CHOICES.get("platform") or ())
    if known and "cuda" not in known:
        monkeypatch.setitem(CHOICES, "platform", (*known, "cuda"))


@pytest.mark.usefixtures("cuda_platform")
def test_model_diff_and_table() -> None:
    base, cand = codegen("A"), codegen("B")
    text_a = json.dumps(dict(schema=probe.SCHEMA, mode="sass", tools={}, archs=["sm_90"],
                             code_objects=[], functions=[], elapsed_s=0))  # fmt: skip
    assert parse_probe_output(text_a, source="x").platform == "cuda"
    capped = cand.kernels[CAPPED]
    assert (base.kernels[CAPPED].occupancy, capped.occupancy) == (32, 40)
    assert capped.occupancy_limiter == "registers"
    assert capped.private_bytes == 8
    assert capped.spills is None
    d = diff(base, cand)
    assert d.arch == "sm_90" and d.gpu
    delta = next(k for k in d.changed if k.key == CAPPED)
    assert (delta.vgprs, delta.scratch_bytes, delta.occupancy) == ((64, 48), (0, 8), (32, 40))
    assert delta.spills == (None, None)
    assert delta.note() == "occupancy +8, more scratch"
    table = render(d)
    assert "REG" in table and "stack+local" in table and "VGPR" not in table
    assert "64→48" in table


def test_register_occupancy() -> None:
    """The calculator's register limit on sm_90 (65536 per SM, 256 per warp, warps in
    fours, at most 64): 40 registers 1280 a warp, 51 warps, 48; 255 -> 8."""
    from orchestrator.parsers.occupancy import register_warps

    assert [register_warps("sm_90", n) for n in (4, 32, 40, 48, 56, 64, 128, 255)] == [
        64, 64, 48, 40, 36, 32, 16, 8
    ]  # fmt: skip
    assert register_warps("sm_86", 32) == 48
    assert register_warps("sm_90a", 64) == 32
    assert register_warps("gfx942", 64) is None


def test_probe_argv_for_sass() -> None:
    argv = probe_argv("sass", "/opt/gmxbench/codeobjects", cuobjdump="/cuda/bin/cuobjdump",
                      cxxfilt="c++filt")  # fmt: skip
    assert argv[3:] == ["sass", "--cuobjdump", "/cuda/bin/cuobjdump", "--cxxfilt", "c++filt",
                        "/opt/gmxbench/codeobjects"]  # fmt: skip
    asm = probe_argv("asm", "/d", cuobjdump="/c", name="k", unit="u", arch="sm_90")
    assert asm[3:] == ["asm", "--cuobjdump", "/c", "--unit", "u", "--arch", "sm_90", "/d", "k"]
    with pytest.raises(ValueError, match="cuobjdump"):
        probe_argv("sass", "/d", objdump="/x")
    with pytest.raises(ValueError, match="objdump"):
        probe_argv("gpu", "/d", cuobjdump="/c")


def test_sass_mode_without_cuobjdump_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "cuda" / "bin" / "cuobjdump")
    with pytest.raises(SystemExit) as stop:
        probe.main(["sass", "--cuobjdump", missing, str(tmp_path)])
    assert stop.value.code == 1
    assert f"{missing} is not in this image" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        probe.main(["asm", str(tmp_path), "kernel"])
    assert "asm needs --objdump (AMDGPU, x86) or --cuobjdump (SASS)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        probe.main(["sass", str(tmp_path)])  # --cuobjdump is required
