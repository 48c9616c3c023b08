"""Codegen: the probe's parsers, occupancy, the Codegen model and the diff.

Unit tests read real tool output stored under tests/data/codegen (see its README):
GROMACS 2026.3 HIP units compiled by clang 21 for gfx1201 (twice, and with
-fno-unroll-loops) and gfx90a, their code objects, `llvm-objdump -d` and `llvm-readelf
--notes` texts, and LLVM's own occupancy expectations. Engine tests run the probe in a
container of a HIP toolchain image on the same code objects.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from orchestrator.codegen.asm import asm_diff
from orchestrator.codegen.diff import code_unchanged, diff, short_name
from orchestrator.codegen.model import (
    Codegen,
    cpu_classify,
    load_codegen,
    parse_probe_output,
    probe_argv,
    probe_source,
)
from orchestrator.codegen.table import render, summary_lines
from orchestrator.core.errors import UserError
from orchestrator.parsers.occupancy import TARGETS, occupancy, occupancy_detail
from orchestrator.payloads import codegen_probe as probe
from orchestrator.report.text import codegen_lines
from orchestrator.verdict.compare import Comparison

DATA = Path(__file__).parent / "data" / "codegen"
GROMACS = DATA / "gromacs"
COV = DATA / "cov"  # one kernel compiled for code-object versions 5 and 6
DEMANGLED: dict[str, str] = json.loads((DATA / "demangled.json").read_text())  # llvm-cxxfilt 21


# --- helpers: stored fixtures and an independent ELF reader -----------------------------


def _gz(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def _code_objects(root: Path) -> list[tuple[Path, str, str, str]]:
    """(gzipped code object, relative name, unit, arch) under a fixture variant."""
    found = []
    for path in sorted(root.rglob("*.gz")):
        name = path.name[:-3]
        m = probe.CODE_OBJECT.match(name)
        if m is None:
            continue
        rel = str(path.relative_to(root))[:-3]
        unit = probe.CMAKE_DIR.sub(r"\1", str(Path(rel).parent / m.group("obj")))
        found.append((path, rel, unit.removesuffix(".o"), m.group("arch")))
    return found


def _report(root: Path) -> dict[str, Any]:
    """What the probe's gpu mode prints, built from the stored tool output of `root`."""
    records: list[Any] = []
    summary = []
    archs = set()
    for path, rel, unit, arch in _code_objects(root):
        notes = _gz(path.with_name(path.name[:-3] + ".notes.txt.gz"))
        disasm = _gz(path.with_name(path.name[:-3] + ".objdump.txt.gz"))
        version = probe.code_object_version(gzip.decompress(path.read_bytes())[:16])
        found, info = probe.code_object_records(rel, unit, arch, notes, disasm, version)
        records += found
        summary.append(info)
        archs.add(arch)
    for record in records:
        record["demangled"] = DEMANGLED.get(str(record["name"]))
    tools = {"objdump": "stored", "readelf": "stored"}
    return dict(schema=probe.SCHEMA, mode="gpu", tools=tools, archs=sorted(archs),
                code_objects=summary, functions=records, elapsed_s=0.0)  # fmt: skip


def _codegen(root: Path, build: str | None = None) -> Codegen:
    return parse_probe_output(json.dumps(_report(root)), source=str(root), build=build)


def _elf_symbols(data: bytes) -> dict[str, tuple[int, bytes]]:
    """{symbol: (type, bytes)} of the sized FUNC/OBJECT symbols of an ELF64 file."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
    found = {}
    for sec in sections:
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sec[6]][4]
        for off in range(sec[4], sec[4] + sec[5], 24):
            name, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, off)
            if info & 0xF not in (1, 2) or not size or shndx >= len(sections):
                continue
            symbol = data[strtab + name : data.index(b"\0", strtab + name)].decode()
            home = sections[shndx]
            start = home[4] + value - home[3]
            found[symbol] = (info & 0xF, data[start : start + size])
    return found


def _machine_code(root: Path) -> dict[str, bytes]:
    """Raw bytes of every function in the code objects of a fixture variant."""
    code = {}
    for path, _rel, _unit, _arch in _code_objects(root):
        for name, (kind, raw) in _elf_symbols(gzip.decompress(path.read_bytes())).items():
            if kind == 2:
                code[name] = raw
    return code


# --- normalisation on real compiler output ---------------------------------------------


def test_same_source_compiled_twice_has_equal_codegen() -> None:
    a, b = _codegen(GROMACS / "a"), _codegen(GROMACS / "b")
    assert len(a.kernels) == 33 and set(a.kernels) == set(b.kernels)
    assert {k: v.sha256 for k, v in a.kernels.items()} == {
        k: v.sha256 for k, v in b.kernels.items()
    }
    assert _machine_code(GROMACS / "a") == _machine_code(GROMACS / "b")


def test_no_unroll_changes_exactly_the_kernels_whose_machine_code_changed() -> None:
    a, b = _codegen(GROMACS / "a"), _codegen(GROMACS / "nounroll")
    by_hash = {k.name for key, k in a.kernels.items() if k.sha256 != b.kernels[key].sha256}
    raw_a, raw_b = _machine_code(GROMACS / "a"), _machine_code(GROMACS / "nounroll")
    by_bytes = {name for name in raw_a if raw_a[name] != raw_b[name]}
    assert by_hash == by_bytes
    assert 0 < len(by_hash) < len(a.kernels)
    # the independent check also says which category stayed put: PME solve has no loops
    solve = {k.name for k in a.kernels.values() if k.category == "pme_solve"}
    assert len(solve) == 16 and not solve & by_bytes


def test_layout_only_literals_are_not_code_changes() -> None:
    """v1 adds a kernel after the others: the data they address moves, their code not."""
    v0, v1 = _codegen(DATA / "layout" / "v0"), _codegen(DATA / "layout" / "v1")
    raw0, raw1 = _machine_code(DATA / "layout" / "v0"), _machine_code(DATA / "layout" / "v1")
    moved = {name for name in raw0 if raw0[name] != raw1[name]}
    assert moved == {"_Z11scaleKernelPfi", "_Z6lookupi"}
    for name in raw0:
        assert v0.kernels[name].sha256 == v1.kernels[name].sha256
    assert set(v1.kernels) - set(v0.kernels) == {"_Z11extraKernelPfi"}
    assert v0.kernels["_Z6lookupi"].kind == "function"
    disasm = _gz(next((DATA / "layout" / "v0").glob("*.objdump.txt.gz")))
    body = dict(probe.blocks(disasm.splitlines()))["_Z11scaleKernelPfi"]
    text = probe.gpu_normalise(body)
    assert sum("<pcrel>" in line for line in text) == 2
    assert not any("//" in line or re.search(r"<(?!pcrel>)", line) for line in text)


def _cov_report(disasm: str) -> dict[str, Any]:
    """The probe's gpu report of the code-object v5 fixture with `disasm` as its disassembly."""
    ((path, rel, unit, arch),) = _code_objects(COV / "v5")
    notes = _gz(path.with_name(path.name[:-3] + ".notes.txt.gz"))
    records, info = probe.code_object_records(rel, unit, arch, notes, disasm, 5)
    return dict(schema=probe.SCHEMA, mode="gpu", tools={"objdump": "stored"}, archs=[arch],
                code_objects=[info], functions=records, elapsed_s=0.0)  # fmt: skip


def test_operands_alone_are_code_changes() -> None:
    """The real kernel with one operand edited, each instruction's mnemonic kept: reading
    another kernel argument (0x1c -> 0x18) or multiplying by another register is a change."""
    disasm = _gz(next((COV / "v5").glob("*.objdump.txt.gz")))
    edits = [("s_load_b32 s4, s[0:1], 0x1c", "s_load_b32 s4, s[0:1], 0x18"),
             ("v_mul_f32_e32 v2, s2, v2", "v_mul_f32_e32 v2, s3, v2")]  # fmt: skip
    base = _cov_report(disasm)
    (kernel,) = base["functions"]
    for old, new in edits:
        assert disasm.count(old) == 1
        edited = _cov_report(disasm.replace(old, new))
        (other,) = edited["functions"]
        mnemonics = {
            tuple(line.split(" ", 1)[0] for line in probe.gpu_normalise(body))
            for text in (disasm, disasm.replace(old, new))
            for body in dict(probe.blocks(text.splitlines())).values()
        }
        assert len(mnemonics) == 1  # the two differ in operands alone
        assert other["instructions"] == kernel["instructions"]
        assert other["classes"] == kernel["classes"] and other["sha256"] != kernel["sha256"]
        a = parse_probe_output(json.dumps(base), source="v5", build="a")
        b = parse_probe_output(json.dumps(edited), source="v5", build="b")
        assert [k.name for k in diff(a, b).changed] == [kernel["name"]]


def test_disassembly_blocks_are_the_symbol_tables_functions() -> None:
    for path, _rel, _unit, _arch in _code_objects(GROMACS / "a") + _code_objects(
        GROMACS / "gfx90a"
    ):
        disasm = _gz(path.with_name(path.name[:-3] + ".objdump.txt.gz"))
        names = {
            name for name, body in probe.blocks(disasm.splitlines()) if probe.gpu_normalise(body)
        }
        symbols = _elf_symbols(gzip.decompress(path.read_bytes()))
        assert names - {".text"} == {n for n, (kind, _b) in symbols.items() if kind == 2}


def test_notes_agree_with_the_kernel_descriptors() -> None:
    """LDS, scratch and VGPR blocks from the notes vs the 64-byte .kd descriptors."""
    checked = 0
    for variant in ("a", "gfx90a"):
        for path, _rel, _unit, arch in _code_objects(GROMACS / variant):
            notes, target = probe.parse_notes(_gz(path.with_name(path.name[:-3] + ".notes.txt.gz")))
            assert target.endswith(arch)
            symbols = _elf_symbols(gzip.decompress(path.read_bytes()))
            assert set(notes) == {n[:-3] for n in symbols if n.endswith(".kd")}
            for name, note in notes.items():
                kd = symbols[name + ".kd"][1]
                lds, scratch = struct.unpack_from("<II", kd, 0)
                rsrc1 = struct.unpack_from("<I", kd, 48)[0]
                assert (lds, scratch) == (note[".group_segment_fixed_size"],
                                          note[".private_segment_fixed_size"])  # fmt: skip
                granule = 8 if arch == "gfx90a" or note[".wavefront_size"] == 32 else 4
                vgprs = int(str(note[".vgpr_count"]))
                assert rsrc1 & 0x3F == max(-(-vgprs // granule), 1) - 1
                checked += 1
    assert checked == 33 + 25


def test_instruction_classes_follow_each_generation_spelling() -> None:
    seen: dict[str, str] = {}
    for variant in ("a", "gfx90a"):
        for path, *_ in _code_objects(GROMACS / variant):
            disasm = _gz(path.with_name(path.name[:-3] + ".objdump.txt.gz"))
            for _name, body in probe.blocks(disasm.splitlines()):
                for line in probe.gpu_normalise(body):
                    seen[line.split(" ")[0]] = probe.gpu_class(line.split(" ")[0])
    expected = {
        "s_wait_loadcnt": "wait", "s_waitcnt": "wait", "s_barrier_wait": "wait",
        "s_barrier": "wait", "ds_load_b32": "lds", "ds_read_b32": "lds", "ds_store_b32": "lds",
        "ds_write_b32": "lds", "global_load_b32": "vmem", "global_load_dword": "vmem",
        "s_load_b64": "smem", "s_load_dwordx2": "smem", "s_cbranch_execz": "branch",
        "v_fma_f32": "valu", "v_dual_mul_f32": "valu", "s_add_co_i32": "salu",
        "s_add_u32": "salu", "s_delay_alu": "other", "s_endpgm": "other",
    }  # fmt: skip
    assert {m: seen[m] for m in expected} == expected
    assert not any(c == "other" and m.startswith(("v_", "ds_", "global_")) for m, c in seen.items())


# --- occupancy ------------------------------------------------------------------------------


def test_occupancy_matches_llvm_occupancy_levels() -> None:
    """Every CHECK of LLVM's occupancy-levels.ll for the processors we model."""
    cases = json.loads((DATA / "occupancy-levels.json").read_text())
    wrong, checked = [], 0
    for kernel in cases["kernels"]:
        if kernel["waves_per_eu"]:
            continue  # amdgpu-waves-per-eu is not in a code object's notes
        for run in cases["runs"]:
            expected = {kernel["expect"][p] for p in run["prefixes"] if p in kernel["expect"]}
            if run["mcpu"] not in TARGETS or not expected:
                continue
            assert len(expected) == 1
            # IsaInfo::getNumExtraSGPRs: gfx940+ keep flat scratch architected: 6 more SGPRs
            extra = 6 if run["mcpu"] in ("gfx940", "gfx941", "gfx942", "gfx950") else 0
            got = occupancy_detail(
                run["mcpu"], vgprs=kernel["vgprs"], sgprs=kernel["sgprs"] + extra,
                lds_bytes=kernel["lds"], wavefront_size=run["wave"],
                max_flat_workgroup_size=kernel["max_wg"], trap_handler=run["amdhsa"],
            )  # fmt: skip
            assert got is not None
            checked += 1
            if got.waves != expected.pop():
                wrong.append((run["mcpu"], run["wave"], kernel["name"], got))
    assert checked > 700 and not wrong


def test_occupancy_matches_llc21_on_real_code_objects() -> None:
    """llc 21's own '; Occupancy:' vs ours from the notes of the objects it wrote."""
    reported = json.loads((DATA / "llc21" / "llc21-occupancy.json").read_text())
    checked = 0
    for run, kernels in reported.items():
        arch, wave = run.split("-")
        notes, _target = probe.parse_notes(_gz(DATA / "llc21" / f"{run}.notes.txt.gz"))
        assert set(notes) == set(kernels)
        for name, note in notes.items():
            got = occupancy_detail(
                arch, vgprs=int(str(note[".vgpr_count"])), sgprs=int(str(note[".sgpr_count"])),
                lds_bytes=int(str(note[".group_segment_fixed_size"])),
                wavefront_size=int(wave[1:]),
                max_flat_workgroup_size=int(str(note[".max_flat_workgroup_size"])),
                wgp_mode=bool(note.get(".workgroup_processor_mode", True)),
                sgpr_rule="table",  # LLVM 21 predates PR #201342
            )  # fmt: skip
            assert got is not None and (run, name, got.waves) == (run, name, kernels[name])
            checked += 1
    assert checked == 12 * 41
    gfx90a, _ = probe.parse_notes(_gz(DATA / "llc21" / "gfx90a-w64.notes.txt.gz"))
    assert (gfx90a["kernel_32_agprs"][".vgpr_count"], gfx90a["kernel_32_agprs"][".agpr_count"]) == (
        44,
        32,
    )


def test_newer_sgpr_rule_charges_the_trap_handler() -> None:
    def waves(arch: str, sgprs: int, **rule: Any) -> int | None:
        got = occupancy_detail(arch, vgprs=8, sgprs=sgprs, lds_bytes=0, wavefront_size=64, **rule)
        return None if got is None else got.waves

    assert (waves("gfx942", 104, sgpr_rule="table"), waves("gfx942", 104)) == (7, 6)
    assert waves("gfx942", 104, trap_handler=False) == 7
    assert waves("gfx1201", 106) == 16  # SGPRs never limit on GFX10+
    assert waves("gfx9999", 1) is None
    # rocm-debian.md's summary: gfx1200/gfx1201 wave32, 128 VGPRs -> 10 waves, 256 -> 5
    assert occupancy("gfx1201", vgprs=128, sgprs=20, lds_bytes=0, wavefront_size=32) == 10
    assert occupancy("gfx1201", vgprs=256, sgprs=20, lds_bytes=0, wavefront_size=32) == 5


# --- the Codegen model ------------------------------------------------------------------------


def test_codegen_from_probe_output() -> None:
    cg = _codegen(GROMACS / "a", build="gromacs:test")
    assert cg.platform == "rocm" and cg.archs == ["gfx1201"] and cg.build == "gromacs:test"
    assert {c: len(keys) for c, keys in cg.categories().items()} == {"pme_solve": 16, "other": 17}
    assert all(k.category_known and k.kind == "kernel" for k in cg.kernels.values())
    units = {k.unit for k in cg.kernels.values()}
    assert "src/gromacs/ewald/pme_solve_hip.cpp" in units and len(units) == 4
    solve = [k for k in cg.kernels.values() if k.category == "pme_solve"]
    assert all(k.wavefront_size == 32 and k.wgp_mode is True for k in solve)
    assert all(k.occupancy == 16 and k.occupancy_limiter == "none" for k in solve)
    wave64 = _codegen(GROMACS / "gfx90a")
    assert {k.occupancy for k in wave64.kernels.values()} <= set(range(1, 9))
    assert all(k.agprs == 0 for k in wave64.kernels.values())


def test_keys_stay_unique_across_architectures() -> None:
    both = _report(GROMACS / "a")
    other = _report(GROMACS / "gfx90a")
    both["functions"] += other["functions"]
    both["archs"] += other["archs"]
    cg = parse_probe_output(json.dumps(both), source="two archs")
    assert len(cg.kernels) == 33 + 25
    solve = [k for k in cg.kernels if "pmeSolveKernel" in k]
    assert all(k.endswith(("@gfx1201", "@gfx90a")) for k in solve) and len(solve) == 32
    assert not any("@" in k for k in cg.kernels if "settleKernel" in k)  # only on gfx1201


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda t: t[: len(t) // 2], "not JSON (cut short)"),
        (lambda t: "", "not JSON"),
        (lambda t: json.dumps({"mode": "gpu", "schema": 99}), "probe schema 99"),
        (lambda t: t.replace('"functions"', '"function"'), "field 'functions' is missing"),
        (lambda t: t.replace('"sha256": "', '"sha256": "zz', 1), "functions.sha256"),
        (lambda t: json.dumps([1, 2]), 'no "mode"'),
    ],
)
def test_damaged_probe_output_is_one_clear_error(damage: Any, expected: str) -> None:
    text = json.dumps(_report(DATA / "layout" / "v0"))
    with pytest.raises(UserError) as err:
        parse_probe_output(damage(text), source="gromacs:dev-x (codegen probe)")
    assert "gromacs:dev-x (codegen probe)" in err.value.message
    assert expected.replace("functions.sha256", "sha256") in err.value.message
    assert "\n" not in err.value.message


def test_stored_codegen_roundtrip_and_damage(tmp_path: Path) -> None:
    cg = _codegen(GROMACS / "gfx90a", build="gromacs:gfx90a")
    path = tmp_path / "codegen.json"
    path.write_text(cg.model_dump_json())
    assert load_codegen(path) == cg
    path.write_text(cg.model_dump_json()[:5000])
    with pytest.raises(UserError, match="is damaged: not JSON"):
        load_codegen(path)
    path.write_text(cg.model_dump_json().replace('"platform":"rocm"', '"platform":"gpu"'))
    with pytest.raises(UserError, match="platform"):
        load_codegen(path)
    with pytest.raises(UserError, match="Cannot read"):
        load_codegen(tmp_path / "missing.json")


# --- diff ---------------------------------------------------------------------------------------


def test_diff_per_category_and_code_unchanged() -> None:
    a, b = _codegen(GROMACS / "a", "clang-21"), _codegen(GROMACS / "nounroll", "clang-21+nounroll")
    raw_a, raw_b = _machine_code(GROMACS / "a"), _machine_code(GROMACS / "nounroll")
    d = diff(a, b)
    assert {k.name for k in d.changed} == {n for n in raw_a if raw_a[n] != raw_b[n]}
    assert d.categories["pme_solve"].identical and code_unchanged(d, "pme_solve")
    assert not code_unchanged(d, "other") and not code_unchanged(d, "nbnxm")
    assert summary_lines(d) == [
        "pme_solve: code unchanged (16 kernels identical)",
        f"other: {len(d.changed)} of 17 kernels changed",
    ]
    vgpr_change = [abs((k.vgprs[1] or 0) - (k.vgprs[0] or 0)) for k in d.changed]
    assert vgpr_change == sorted(vgpr_change, reverse=True)  # no occupancy or spill change here
    same = diff(a, _codegen(GROMACS / "b"))
    assert not same.changed and all(c.identical for c in same.categories.values())


def test_diff_puts_occupancy_drops_and_new_spills_first() -> None:
    a = _codegen(GROMACS / "a")
    keys = sorted(a.kernels)
    b = a.model_copy(deep=True)
    worse_occ, new_spill, bigger = keys[0], keys[1], keys[2]
    b.kernels[worse_occ] = b.kernels[worse_occ].model_copy(
        update={"sha256": "0" * 64, "occupancy": 10}
    )
    b.kernels[new_spill] = b.kernels[new_spill].model_copy(
        update={"sha256": "1" * 64, "vgpr_spills": 4, "scratch_bytes": 16}
    )
    b.kernels[bigger] = b.kernels[bigger].model_copy(
        update={"sha256": "2" * 64, "instructions": 5000, "vgprs": 200}
    )
    del b.kernels[keys[3]]
    d = diff(a, b)
    assert [k.key for k in d.changed] == [worse_occ, new_spill, bigger]
    assert (
        d.changed[0].note() == "occupancy -6" and d.changed[1].note() == "new spills, more scratch"
    )
    category = a.kernels[keys[3]].category
    assert keys[3] in d.categories[category].only_baseline and not code_unchanged(d, category)
    lines = summary_lines(d)
    assert any("1 with lower occupancy" in line and "1 with more spills" in line for line in lines)
    assert any("1 only in the baseline" in line for line in lines)


# --- code-object versions ---------------------------------------------------------------------


def test_probe_reads_the_code_object_version_from_the_elf_header(tmp_path: Path) -> None:
    """clang 21's -mcode-object-version=5 and =6 (e_ident[EI_ABIVERSION] 3 and 4), read
    from the real files as the probe reads them, and what is not an HSA code object."""
    for version in (5, 6):
        (path, *_rest), *more = _code_objects(COV / f"v{version}")
        assert not more
        raw = gzip.decompress(path.read_bytes())
        assert raw[7:9] == bytes([64, version - 2])  # ELFOSABI_AMDGPU_HSA, V5 = 3, V6 = 4
        copy = tmp_path / path.name.removesuffix(".gz")
        copy.write_bytes(raw)
        assert probe.read_code_object_version(str(copy)) == version
    assert probe.code_object_version(raw[:8]) is None  # cut short
    assert probe.code_object_version(b"\x7fELF\x02\x01\x01\x00\x00" + bytes(7)) is None  # SysV
    assert probe.code_object_version(b"!<arch>\n" + bytes(8)) is None
    assert probe.read_code_object_version(str(tmp_path / "missing")) is None
    # the GROMACS fixtures are Debian clang 21's default: v6
    assert _codegen(GROMACS / "a").code_object_versions == [6]


def test_codegen_carries_the_versions_and_reads_older_records(tmp_path: Path) -> None:
    v5 = _codegen(COV / "v5", "cov5")
    assert v5.code_object_versions == [5]
    assert [o.code_object_version for o in v5.code_objects] == [5]
    path = tmp_path / "codegen.json"
    path.write_text(v5.model_dump_json())
    assert load_codegen(path) == v5
    older = json.loads(v5.model_dump_json())
    for obj in older["code_objects"]:
        del obj["code_object_version"]  # a codegen.json written before versions were kept
    path.write_text(json.dumps(older))
    old = load_codegen(path)
    assert old.code_objects[0].code_object_version is None and old.code_object_versions == []
    assert diff(old, _codegen(COV / "v6")).code_object_note() is None  # unknown: no claim


def test_diff_names_a_code_object_version_difference_first() -> None:
    a, b = _codegen(COV / "v5", "stable-x"), _codegen(COV / "v6", "dev-y")
    d = diff(a, b)
    assert (d.baseline_code_object_versions, d.candidate_code_object_versions) == ([5], [6])
    note = d.code_object_note()
    assert note is not None and note.startswith(
        "code-object version differs: v5 (stable-x, baseline) vs v6 (dev-y): every kernel's "
        "ABI changed, so differences in kernel code may come from it, not from the compiler "
        "change; build the dev side with -mcode-object-version=5"
    )
    text = render(d)
    assert text.splitlines()[0] == note and text.splitlines()[1] == "codegen: stable-x → dev-y"
    assert not render(d, note=False).startswith("code-object")
    assert not d.changed  # the same instructions: only the ABI differs for this kernel
    stored = type(d).model_validate_json(d.model_dump_json())  # written to disk: both kept
    assert (stored.baseline_code_object_versions, stored.candidate_code_object_versions) == (
        [5],
        [6],
    )
    assert diff(a, a).code_object_note() is None
    # bench and compare print it first in their codegen summary (and the HTML report too)
    lines = codegen_lines(Comparison.model_construct(codegen=d, cpu_only=False, categories={}))
    assert lines[0] == f"warning: {note}" and lines[1].startswith("codegen (")
    swapped = diff(b, a).code_object_note() or ""
    assert swapped.startswith("code-object version differs: v6 (dev-y, baseline) vs v5 (stable-x)")


def test_render_terminal_and_markdown() -> None:
    d = diff(_codegen(GROMACS / "a", "A-build"), _codegen(GROMACS / "nounroll", "B-build"))
    text = render(d)
    assert text.startswith("codegen: A-build → B-build\n")
    assert "pme_solve: code unchanged (16 kernels identical)" in text
    k = next(k for k in d.changed if k.demangled and "lincsKernel<false, false>" in k.demangled)
    row = next(line for line in text.splitlines() if "lincsKernel<false, false>" in line)
    assert f"{k.instructions[0]}→{k.instructions[1]}" in row and f"{k.vgprs[0]}→{k.vgprs[1]}" in row
    md = render(d, "markdown", limit=3)
    assert "| category" in md and f"… and {len(d.changed) - 3} more changed kernels" in md
    assert render(diff(_codegen(GROMACS / "a"), _codegen(GROMACS / "b"))).endswith(
        "no kernel's code changed\n"
    )


def test_short_name_keeps_template_arguments() -> None:
    name = (
        "void gmx::leapFrogKernel<(gmx::NumTempScaleValues)2, "
        "(gmx::ParrinelloRahmanVelocityScaling)1>(int, HIP_vector_type<float, 3u>*)"
    )
    assert short_name(name) == "leapFrogKernel<2, 1>"
    assert short_name("void pmeSolveKernel<(GridOrdering)1, false, 0, 32>(PmeGpuKernelParams)") == (
        "pmeSolveKernel<1, false, 0, 32>"
    )


def test_asm_diff_of_one_kernel() -> None:
    texts = {}
    for variant in ("a", "nounroll"):
        path = next((GROMACS / variant).rglob("leapfrog*.objdump.txt.gz"))
        blocks = dict(probe.blocks(_gz(path).splitlines()))
        name = sorted(blocks)[-1]
        texts[variant] = "\n".join(probe.gpu_normalise(blocks[name])) + "\n"
    patch = asm_diff(texts["a"], texts["nounroll"], "A " + name, "B " + name)
    assert patch.startswith(f"--- A {name}\n+++ B {name}\n@@")
    added = [line for line in patch.splitlines() if line.startswith("+") and line[1:2] != "+"]
    assert added and all("//" not in line for line in added)
    assert asm_diff(texts["a"], texts["a"]) == ""


# --- CPU (x86) ----------------------------------------------------------------------------------


def _cpu_records() -> dict[str, dict[str, Any]]:
    symbols = probe.parse_nm(_gz(DATA / "cpu" / "nm.txt.gz"))
    names = [line.split()[3] for line in _gz(DATA / "cpu" / "nm.txt.gz").splitlines()]
    demangled = dict(zip(names, _gz(DATA / "cpu" / "cxxfilt.txt.gz").splitlines(), strict=True))
    by_address = {address: name for address, _size, name in symbols}
    records = {}
    for part in ("pme", "nbnxm"):
        text = _gz(DATA / "cpu" / f"objdump-{part}.txt.gz")
        for name, body in probe.select_blocks(text, by_address):
            records[demangled[name].split("(")[0]] = probe.cpu_record(
                name, demangled[name], body, "libgromacs.so"
            )
    return records


def test_cpu_records_from_gnu_objdump() -> None:
    records = _cpu_records()
    kernel = records["nbnxm_kernel_ElecEw_VdwLJ_F_4xm"]
    classes = kernel["classes"]
    assert isinstance(classes, dict) and classes["vector"] > sum(classes.values()) / 2
    for name in ("gather_f_bsplines", "spread_on_grid", "solve_pme_yzx"):
        assert name in records
    categories = {name: cpu_classify(str(r["demangled"]))[0] for name, r in records.items()}
    assert categories["spread_on_grid"] == "pme_spread"
    assert categories["gather_f_bsplines"] == "pme_gather"
    assert categories["solve_pme_yzx"] == "pme_solve"
    assert categories["nbnxm_kernel_ElecEw_VdwLJ_F_4xm"] == "nbnxm"
    assert categories["copy_pmegrid_to_fftgrid"] == "memory"


def test_cpu_normalisation_ignores_where_the_function_lies() -> None:
    symbols = probe.parse_nm(_gz(DATA / "cpu" / "nm.txt.gz"))
    by_address = {address: name for address, _size, name in symbols}
    text = _gz(DATA / "cpu" / "objdump-pme.txt.gz")
    blocks = dict(probe.select_blocks(text, by_address))
    name = next(n for n in blocks if "gather_f_bsplines" in n)
    body = blocks[name]
    shift = 0x123450

    def moved(line: str) -> str:
        line = re.sub(r"^(\s*)([0-9a-f]+):", lambda m: f"{m[1]}{int(m[2], 16) + shift:x}:", line)
        line = re.sub(
            r"(j\w+|call)\s+([0-9a-f]+) <", lambda m: f"{m[1]}  {int(m[2], 16) + shift:x} <", line
        )
        return re.sub(r"# ([0-9a-f]+) <", lambda m: f"# {int(m[1], 16) + shift:x} <", line)

    original = probe.cpu_normalise(body, name)
    assert probe.cpu_normalise([moved(line) for line in body], name) == original
    assert not any(
        re.search(r"\b[0-9a-f]{6,}\b", line) for line in original if line.startswith(("j", "call"))
    )
    assert any(line.startswith("j") and "<.+0x" in line for line in original)


MOVED = DATA / "cpu" / "moved"  # one function compiled by gcc 12 three ways (hot.c)


def _hot_record(variant: str) -> dict[str, Any]:
    """The probe's record of spread_on_grid from the stored nm and objdump of `variant`."""
    symbols = probe.parse_nm((MOVED / f"{variant}.nm.txt").read_text())
    by_address = {address: name for address, _size, name in symbols}
    text = (MOVED / f"{variant}.objdump.txt").read_text()
    ((name, body),) = probe.select_blocks(text, by_address)
    return probe.cpu_record(name, name, body, "libhot.so")


def test_cpu_codegen_follows_the_code_not_where_it_and_its_data_lie() -> None:
    """`moved` is the same code behind another function and its data: every address and
    every ``%rip`` displacement differ, the hash does not. `operand` adds 7 instead of 5:
    the same mnemonics, another immediate, another hash."""
    rip = re.compile(r"(-?0x[0-9a-f]+)\(%rip\)")
    texts = {v: (MOVED / f"{v}.objdump.txt").read_text() for v in ("base", "moved", "operand")}
    base_rip, moved_rip = rip.findall(texts["base"]), rip.findall(texts["moved"])
    assert len(base_rip) == len(moved_rip) == 3
    assert all(int(b, 16) != int(m, 16) for b, m in zip(base_rip, moved_rip, strict=True))
    base, moved, operand = (_hot_record(v) for v in ("base", "moved", "operand"))
    assert moved["sha256"] == base["sha256"] and moved["instructions"] == base["instructions"]
    mnemonics = [
        [line.split()[1] for line in text.splitlines() if re.match(r"^\s+[0-9a-f]+:\t", line)]
        for text in (texts["base"], texts["operand"])
    ]
    assert mnemonics[0] == mnemonics[1]
    assert operand["sha256"] != base["sha256"] and operand["classes"] == base["classes"]


# --- the probe as a program -----------------------------------------------------------------


def test_probe_is_standalone_python39() -> None:
    source = probe_source()
    tree = ast.parse(source, feature_version=(3, 9))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(name.startswith("orchestrator") for name in imported)
    assert {name.split(".")[0] for name in imported} <= set(sys.stdlib_module_names)
    assert "zip(" not in source.replace("# ", "")  # zip(strict=) is 3.10+


def test_probe_argv_runs_as_a_container_would(tmp_path: Path) -> None:
    argv = probe_argv("gpu", str(tmp_path), objdump="true", readelf="true")
    assert argv[:3] == ["python3", "-c", probe_source()] and argv[3:5] == ["gpu", "--objdump"]
    out = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, check=True)
    cg = parse_probe_output(out.stdout, source="empty dir")
    assert cg.kernels == {} and cg.tools["objdump"] == probe.tool_version("true")
    asm = probe_argv("asm", "/x", objdump="o", name="k", arch="gfx1201")
    assert asm[-4:] == ["--arch", "gfx1201", "/x", "k"]
    probe_cmd = [sys.executable, *argv[1:3]]
    missing = subprocess.run(
        [*probe_cmd, "gpu", "--objdump", "llvm-objdump-99", "--readelf", "true", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1 and missing.stderr == (
        "codegen_probe: llvm-objdump-99 is not in this image "
        "(pass the path of the image's own tool)\n"
    )
    no_dir = subprocess.run(
        [*probe_cmd, "gpu", "--objdump", "true", "--readelf", "true", str(tmp_path / "no")],
        capture_output=True,
        text=True,
    )
    assert no_dir.returncode == 1 and no_dir.stderr.startswith("codegen_probe: no such directory")


# --- engine: the probe in real images -------------------------------------------------------

HIP_IMAGE = "GMXBENCH_TEST_HIP_IMAGE"  # a HIP toolchain image (default: the ROCm builder)
HIP_LLVM_BIN = "GMXBENCH_TEST_HIP_LLVM_BIN"  # where its llvm-objdump & co. live
CPU_IMAGE = "GMXBENCH_TEST_CPU_GROMACS_IMAGE"  # a CPU GROMACS image (default: stable_image)


@pytest.fixture(scope="session")
def hip_image(engine: Any, request: pytest.FixtureRequest) -> str:
    """A HIP compile stack with LLVM's binutils: the Debian ROCm builder (made if missing),
    or the image HIP_IMAGE names."""
    if os.environ.get(HIP_IMAGE):
        return engine.images.get(os.environ[HIP_IMAGE]).tags[0]  # type: ignore[no-any-return]
    from orchestrator.images.builder import ensure_builder

    return ensure_builder(engine, request.getfixturevalue("rocm_settings")).tag


@pytest.fixture(scope="session")
def hip_tools(request: pytest.FixtureRequest) -> dict[str, str]:
    """LLVM's tools in `hip_image`, and the ROCm paths its clang++ needs (none for an
    image HIP_IMAGE names: its clang finds them itself)."""
    base = os.environ.get(HIP_LLVM_BIN, "/usr/lib/llvm-21/bin")
    tools = ("objdump", "readelf", "cxxfilt")
    rocm = ""
    if not os.environ.get(HIP_IMAGE):
        from orchestrator.platforms.rocm.stacks import rocm_path, stack

        settings = request.getfixturevalue("rocm_settings")
        rocm = (
            f"--rocm-path={rocm_path(settings)} "
            f"--rocm-device-lib-path={stack(settings).device_libs(settings)}"
        )
    return {t: f"{base}/llvm-{t}" for t in tools} | {"clang": f"{base}/clang++", "rocm": rocm}


@pytest.fixture(scope="session")
def cpu_gromacs_image(request: pytest.FixtureRequest) -> str:
    tag = os.environ.get(CPU_IMAGE)
    return tag or str(request.getfixturevalue("stable_image").tag)


def _in_container(
    engine: Any, image: str, argv: list[str], files: dict[str, bytes] | None = None
) -> tuple[int, str, str]:
    """Run argv in a throw-away container holding `files` (path -> bytes) under /cg."""
    container = engine.containers.create(image, argv, network_disabled=True, working_dir="/cg")
    try:
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            for path, data in sorted((files or {}).items()):
                info = tarfile.TarInfo("cg/" + path)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        container.put_archive("/", archive.getvalue())
        container.start()
        code = container.wait(timeout=600)["StatusCode"]
        out = container.logs(stdout=True, stderr=False).decode()
        err = container.logs(stdout=False, stderr=True).decode()
        return int(code), out, err
    finally:
        container.remove(force=True)


def _fixture_files(root: Path, prefix: str) -> dict[str, bytes]:
    return {
        f"{prefix}/{rel}": gzip.decompress(path.read_bytes())
        for path, rel, _unit, _arch in _code_objects(root)
    }


FIELDS = ("sha256", "instructions", "classes", "kind", "unit", "arch", "vgprs", "sgprs",
          "agprs", "vgpr_spills", "sgpr_spills", "lds_bytes", "scratch_bytes", "occupancy",
          "wavefront_size", "max_flat_workgroup_size", "demangled")  # fmt: skip


@pytest.mark.engine
@pytest.mark.parametrize(
    "variant",
    ["gromacs/a", "gromacs/nounroll", "gromacs/gfx90a", "layout/v1", "cov/v5", "targets/base"],
)
def test_probe_in_image_matches_the_stored_tool_output(
    engine: Any, hip_image: str, hip_tools: dict[str, str], variant: str
) -> None:
    files = _fixture_files(DATA / variant, "objs")
    argv = probe_argv(
        "gpu", "/cg/objs", objdump=hip_tools["objdump"], readelf=hip_tools["readelf"],
        cxxfilt=hip_tools["cxxfilt"],
    )  # fmt: skip
    code, out, err = _in_container(engine, hip_image, argv, files)
    assert code == 0, err
    live = parse_probe_output(out, source=f"{hip_image} probe", build=variant)
    stored = _codegen(DATA / variant)
    assert set(live.kernels) == set(stored.kernels)
    for key, kernel in live.kernels.items():
        assert {f: getattr(kernel, f) for f in FIELDS} == {
            f: getattr(stored.kernels[key], f) for f in FIELDS
        }
    assert "LLVM" in live.tools["objdump"] and live.probe_seconds < 60
    assert (
        live.code_object_versions
        == stored.code_object_versions
        == [5 if variant == "cov/v5" else 6]
    )


@pytest.mark.engine
def test_asm_mode_in_image(engine: Any, hip_image: str, hip_tools: dict[str, str]) -> None:
    files = _fixture_files(GROMACS / "a", "objs")
    path = next((GROMACS / "a").rglob("leapfrog*.objdump.txt.gz"))
    blocks = dict(probe.blocks(_gz(path).splitlines()))
    name = min(n for n in blocks if n.startswith("_Z"))
    argv = probe_argv("asm", "/cg/objs", objdump=hip_tools["objdump"], name=name)
    code, out, err = _in_container(engine, hip_image, argv, files)
    assert code == 0, err
    assert out == "\n".join(probe.gpu_normalise(blocks[name])) + "\n"
    argv = probe_argv("asm", "/cg/objs", objdump=hip_tools["objdump"], name="_Z7missingv")
    code, out, err = _in_container(engine, hip_image, argv, files)
    assert (
        code == 1 and out == "" and err.startswith("codegen_probe: no function named _Z7missingv")
    )
    # several names: one disassembly, a JSON object of those found (a missing one left out)
    names = sorted(n for n in blocks if n.startswith("_Z"))[:3]
    argv = probe_argv("asm", "/cg/objs", objdump=hip_tools["objdump"],
                      name=[*names, "_Z7missingv"])  # fmt: skip
    code, out, err = _in_container(engine, hip_image, argv, files)
    assert code == 0, err
    assert json.loads(out) == {n: "\n".join(probe.gpu_normalise(blocks[n])) + "\n" for n in names}


@pytest.mark.engine
def test_image_compiler_output_is_reproducible_and_layout_proof(
    engine: Any, hip_image: str, hip_tools: dict[str, str]
) -> None:
    """Compile layout.hip with the image's clang: twice alike, and with a kernel added."""
    script = f"""set -e
for v in 0 0b 1; do
  mkdir -p $v
  {hip_tools["clang"]} -x hip {hip_tools["rocm"]} --offload-arch=gfx1201 -O3 -fno-gpu-rdc \\
      -DVARIANT=${{v%b}} \\
      -c layout.hip -o $v/layout.o
  {hip_tools["objdump"]} --offloading $v/layout.o > /dev/null
  python3 -c "$0" gpu --objdump {hip_tools["objdump"]} --readelf {hip_tools["readelf"]} $v > $v.json
done
cat 0.json 0b.json 1.json
"""
    files = {"layout.hip": (DATA / "layout" / "layout.hip").read_bytes()}
    code, out, err = _in_container(engine, hip_image, ["bash", "-c", script, probe_source()], files)
    assert code == 0, err
    first, again, extra = (parse_probe_output(line, source="compile") for line in out.splitlines())
    assert {k: v.sha256 for k, v in first.kernels.items()} == {
        k: v.sha256 for k, v in again.kernels.items()
    }
    assert set(extra.kernels) - set(first.kernels) == {"_Z11extraKernelPfi"}
    assert all(extra.kernels[k].sha256 == v.sha256 for k, v in first.kernels.items())


@pytest.mark.engine
@pytest.mark.slow
def test_cpu_probe_in_gromacs_image(engine: Any, cpu_gromacs_image: str) -> None:
    script = """set -e
lib=$(ls /opt/gromacs/*/lib*/libgromacs.so.*.*.* | head -n 1)
python3 -c "$0" cpu --objdump objdump --nm nm --cxxfilt c++filt "$lib"
python3 -c "$0" asm --objdump objdump --nm nm --cxxfilt c++filt "$lib" "$1"
"""
    name = "gather_f_bsplines"
    argv = ["bash", "-c", script, probe_source()]
    code, out, err = _in_container(engine, cpu_gromacs_image, [*argv, "placeholder"])
    assert code in (0, 1), err  # the asm call fails on the placeholder name
    cg = parse_probe_output(out.splitlines()[0], source=f"{cpu_gromacs_image} probe")
    counts = {c: len(keys) for c, keys in cg.categories().items()}
    assert counts["nbnxm"] > 50 and {"pme_spread", "pme_gather", "pme_solve"} <= set(counts)
    gather = next(k for k in cg.kernels.values() if (k.demangled or "").startswith(name + "("))
    assert gather.occupancy is None and gather.vgprs is None
    code, out, err = _in_container(engine, cpu_gromacs_image, [*argv, gather.demangled or ""])
    assert code == 0, err
    asm = out.split("\n", 1)[1].splitlines() if out.startswith("{") else out.splitlines()
    assert probe.digest(asm) == gather.sha256
