"""Codegen per offload target: builds that hold code for several GPUs, compared per target.

Real compiler output only (tests/data/codegen, see its README): GROMACS 2026.3's leapfrog
and pme_solve units compiled by clang 21 for gfx1201 (as configured, and with
-fno-unroll-loops) and for gfx90a, formed into two-target builds the way the probe reports
one (every code object of the build, each kernel once per target); and one unit compiled
in a single clang call for gfx1201 and gfx942 (`targets/`), as a two-target GROMACS build
compiles it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from test_codegen import (
    GROMACS,
    _code_objects,
    _codegen,
    _cpu_records,
    _elf_symbols,
    _machine_code,
    _report,
)

from orchestrator.codegen.diff import diff, primary_target, target_view
from orchestrator.codegen.html import BenchCodegen, section
from orchestrator.codegen.model import Codegen, parse_probe_output
from orchestrator.codegen.table import render
from orchestrator.codegen.targets import (
    diff_targets,
    nothing_to_measure,
    targets_line,
)
from orchestrator.codegen.workflow import Side, diff_report, runs_codegen, verdict_diff
from orchestrator.core.errors import UsageError
from orchestrator.core.events import Event
from orchestrator.core.settings import split_targets
from orchestrator.images.provenance import ImageRecord
from orchestrator.parsers.occupancy import occupancy_detail
from orchestrator.payloads import codegen_probe as probe
from orchestrator.platforms.rocm import RocmPlatform
from orchestrator.report.text import codegen_lines
from orchestrator.runs.hostinfo import collect
from orchestrator.store.layout import CODEGEN_FILE
from orchestrator.store.records import ImageRef, RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.controlled import kernel_status
from orchestrator.workflows.bench import NOTHING_CHANGED, _summary, nothing_changed
from orchestrator.workflows.placement import changed_families

TARGETS = Path(__file__).parent / "data" / "codegen" / "targets"
#: The units the gfx1201 and gfx90a fixtures both hold.
UNITS = ("leapfrog_gpu_internal_hip.cpp", "pme_solve_hip.cpp")


def _probe_report(*roots: Path) -> dict[str, Any]:
    """The probe's report of a build whose code objects are those of `roots` (one
    variant per target), restricted to the units every root holds."""
    merged: dict[str, Any] | None = None
    for root in roots:
        part = _report(root)
        part["functions"] = [f for f in part["functions"] if f["unit"].endswith(UNITS)]
        part["code_objects"] = [o for o in part["code_objects"] if o["unit"].endswith(UNITS)]
        if merged is None:
            merged = part
        else:
            merged["functions"] += part["functions"]
            merged["code_objects"] += part["code_objects"]
            merged["archs"] += part["archs"]
    assert merged is not None
    return merged


def _build(*roots: Path, name: str) -> Codegen:
    return parse_probe_output(json.dumps(_probe_report(*roots)), source=name, build=name)


@pytest.fixture(scope="module")
def builds() -> dict[str, Codegen]:
    """Two-target builds A (as configured) and B (gfx1201 with -fno-unroll-loops), and the
    gfx1201-only builds of the same units."""
    return {
        "A": _build(GROMACS / "a", GROMACS / "gfx90a", name="A"),
        "B": _build(GROMACS / "nounroll", GROMACS / "gfx90a", name="B"),
        "a1": _build(GROMACS / "a", name="a1"),
        "b1": _build(GROMACS / "nounroll", name="b1"),
    }


def _changed_names(*variants: str) -> set[str]:
    """The functions whose machine code differs between two gfx1201 variants, by the raw
    bytes of the code objects (the probe's normalisation not involved)."""
    one, two = (_machine_code(GROMACS / v) for v in variants)
    names = {k.name for k in _build(GROMACS / variants[0], name="x").kernels.values()}
    return {n for n in names if one[n] != two[n]}


def test_each_target_is_diffed_on_its_own(builds: dict[str, Codegen]) -> None:
    a, b = builds["A"], builds["B"]
    assert a.archs == ["gfx1201", "gfx90a"] and len(a.kernels) == 50
    targets = diff_targets(a, b)
    assert list(targets.diffs) == ["gfx1201", "gfx90a"] and targets.several
    mine = targets.diffs["gfx1201"]
    expected = _changed_names("a", "nounroll")
    assert expected and {k.name for k in mine.changed} == expected
    assert all("@" not in k.key for k in mine.changed)  # keys as a one-target build's
    assert all(k.arch == "gfx1201" for k in mine.changed)
    assert not targets.diffs["gfx90a"].changed  # the same gfx90a code objects on both sides
    total = len(a.kernels) // 2
    assert targets_line(mine) == (
        f"gfx1201: {len(expected)} changed of {total}; gfx90a: 0 changed of {total}"
    )
    assert targets_line(targets.diffs["gfx90a"]) == (
        f"gfx90a: 0 changed of {total}; gfx1201: {len(expected)} changed of {total}"
    )


def test_one_target_against_two_targets_on_the_shared_target(builds: dict[str, Codegen]) -> None:
    """A one-target stable and a two-target dev build: the shared target's diff is the
    one-target diff, and the new target is only in the candidate, not 25 changed kernels."""
    single = diff(builds["a1"], builds["b1"])
    targets = diff_targets(builds["a1"], builds["B"])
    shared = targets.diffs["gfx1201"]
    assert shared.model_copy(update={"targets": [], "candidate": "b1"}) == single
    assert targets_line(shared) == (
        f"gfx1201: {len(single.changed)} changed of 25; gfx90a: only in the candidate (25 kernels)"
    )
    assert diff(builds["a1"], builds["B"]) == shared.model_copy(update={"targets": []})
    assert set(target_view(builds["A"], "gfx1201").kernels) == set(builds["a1"].kernels)
    assert target_view(builds["a1"], "gfx1201") is builds["a1"]  # one target: itself


def test_one_target_build_keeps_its_keys_and_cpu_is_unchanged() -> None:
    """Keys of a one-target build are what they were (stored diffs and kept code match),
    and a CPU build's diff is one target, with no per-target line."""
    a, b = _codegen(GROMACS / "a"), _codegen(GROMACS / "nounroll")
    d = diff(a, b)
    assert {k.key for k in d.changed} <= set(a.kernels) and d.arch == "gfx1201" and d.gpu
    assert targets_line(diff_targets(a, b).diffs["gfx1201"]) is None
    records = list(_cpu_records().values())
    report = dict(schema=probe.SCHEMA, mode="cpu", tools={}, archs=["x86_64"],
                  code_objects=[], functions=records, elapsed_s=0.0)  # fmt: skip
    cpu = parse_probe_output(json.dumps(report), source="cpu", build="cpu-a")
    slower = cpu.model_copy(deep=True, update={"build": "cpu-b"})
    key = next(iter(slower.kernels))
    slower.kernels[key] = slower.kernels[key].model_copy(update={"sha256": "0" * 64})
    host = diff_targets(cpu, slower)
    assert list(host.diffs) == ["x86_64"] and not host.several
    only = host.for_verdict(None)
    assert only.model_copy(update={"targets": []}) == diff(cpu, slower)
    assert not only.gpu and [k.key for k in only.changed] == [key]
    assert targets_line(only) is None and set(target_view(cpu, "x86_64").kernels) == set(
        cpu.kernels
    )


def test_occupancy_is_each_targets_own(builds: dict[str, Codegen]) -> None:
    """The same kernel on gfx1201 (wave32, 1536 VGPRs per SIMD) and gfx90a (wave64, one
    512-register file for VGPRs and AGPRs) gets its own target's occupancy and limits."""
    a = builds["A"]
    by_target = {arch: target_view(a, arch).kernels for arch in a.archs}
    assert set(by_target["gfx1201"]) == set(by_target["gfx90a"])
    differ = 0
    for key, new in by_target["gfx1201"].items():
        old = by_target["gfx90a"][key]
        assert (new.wavefront_size, old.wavefront_size) == (32, 64)
        for k in (new, old):
            want = occupancy_detail(
                k.arch, vgprs=k.vgprs or 0, sgprs=k.sgprs or 0, lds_bytes=k.lds_bytes or 0,
                wavefront_size=k.wavefront_size or 64,
                max_flat_workgroup_size=k.max_flat_workgroup_size, wgp_mode=k.wgp_mode,
            )  # fmt: skip
            assert want is not None and (k.occupancy, k.occupancy_limiter) == (
                want.waves,
                want.limiter,
            )
        differ += new.occupancy != old.occupancy
    assert differ  # the two targets' rules give different answers for real kernels
    assert max(k.occupancy or 0 for k in by_target["gfx90a"].values()) <= 8  # gfx90a: ≤ 8
    assert {k.occupancy for k in by_target["gfx1201"].values()} == {16}


def test_verdict_target_host_first_then_the_candidates_list(builds: dict[str, Codegen]) -> None:
    targets = diff_targets(builds["A"], builds["B"])
    assert targets.verdict_target("gfx90a") == ("gfx90a", True)
    assert targets.verdict_target(None) == ("gfx1201", False)  # A's first
    assert targets.verdict_target("gfx942", ["gfx90a", "gfx1201"]) == ("gfx90a", False)
    assert primary_target(["gfx1201"], ["gfx942", "gfx1201"], ["gfx942"]) == "gfx1201"
    assert primary_target(["gfx90a"], ["gfx942"]) == "gfx90a"  # nothing shared: A's first
    assert split_targets("gfx1201,gfx942") == ["gfx1201", "gfx942"]
    assert split_targets(None) == [] and split_targets("gfx1201") == ["gfx1201"]
    dev = ImageRecord(tag="gromacs:dev-x", id="sha256:1", kind="gromacs", gpu_arch="gfx90a,gfx1201")
    picked = verdict_diff(targets, dev, host=None)
    assert (picked.arch, picked.host) == ("gfx90a", False)
    assert verdict_diff(targets, dev, host="gfx1201").host


def test_bench_measures_nothing_where_the_hosts_target_did_not_change(
    builds: dict[str, Codegen],
) -> None:
    targets = diff_targets(builds["A"], builds["B"])
    here = targets.for_verdict("gfx90a")
    changed = len(targets.diffs["gfx1201"].changed)
    assert nothing_changed(here)
    assert nothing_to_measure(here, NOTHING_CHANGED) == (
        f"gfx90a (this host): {NOTHING_CHANGED} here; gfx1201: {changed} changed of 25 — "
        "measure on a gfx1201 host"
    )
    there = targets.for_verdict("gfx1201")
    assert not nothing_changed(there)
    same = diff_targets(builds["A"], builds["A"]).for_verdict("gfx90a")
    assert nothing_changed(same) and nothing_to_measure(same, NOTHING_CHANGED) == NOTHING_CHANGED


def _sides(builds: dict[str, Codegen], a: str, b: str) -> tuple[Side, Side]:
    return Side(a, builds[a], None), Side(b, builds[b], None)


def test_codegen_diff_text_per_target_and_arch(builds: dict[str, Codegen]) -> None:
    one, two = _sides(builds, "A", "B")
    targets = diff_targets(one.codegen, two.codegen)
    result, text = diff_report(one, two, targets, host=None)
    lines = text.splitlines()
    changed = len(result.changed)
    assert lines[:4] == [
        "baseline: A",
        "candidate: B",
        f"per target: gfx1201: {changed} changed of 25; gfx90a: 0 changed of 25",
        "kernels below: gfx1201 (the primary target: no GPU of a target held here); "
        "--arch TARGET lists another target's",
    ]
    assert text.endswith(render(result, note=False)) and result.arch == "gfx1201"
    other, text = diff_report(one, two, targets, arch="gfx90a", host="gfx1201")
    assert other.arch == "gfx90a" and "kernels below: gfx90a (--arch)" in text
    assert text.endswith("no kernel's code changed\n")
    _, text = diff_report(one, two, targets, host="gfx90a")
    assert "per target: gfx90a (this host): 0 changed of 25; gfx1201: " in text
    with pytest.raises(UsageError) as err:
        diff_report(one, two, targets, arch="gfx942")
    message = err.value.message
    assert message.startswith("--arch gfx942: neither build holds code for gfx942.")
    assert (
        "The baseline (A) holds gfx1201, gfx90a; the candidate (B) holds gfx1201, gfx90a."
        in message
    )
    assert "\n" not in message
    single = diff_targets(builds["a1"], builds["b1"])
    _, text = diff_report(*_sides(builds, "a1", "b1"), single, host="gfx1201")
    assert "per target" not in text and text.startswith(
        "baseline: a1\ncandidate: b1\ncodegen: a1 → b1\n"
    )


def test_stored_runs_keep_every_target(builds: dict[str, Codegen], tmp_path: Path) -> None:
    """A run keeps its image's whole codegen (`codegen.json`): compare and the report
    find every target's summary there, and judge on the target the timings are of."""
    for name, run in (("A", "base"), ("B", "cand")):
        (tmp_path / run).mkdir()
        (tmp_path / run / CODEGEN_FILE).write_text(builds[name].model_dump_json())
    found = runs_codegen(tmp_path / "base", tmp_path / "cand")
    assert found is not None and found.arch in ("gfx1201", "gfx90a")
    assert [t.arch for t in found.targets] == ["gfx1201", "gfx90a"]
    cmp = Comparison.model_construct(codegen=found, cpu_only=False, categories={})
    lines = codegen_lines(cmp)
    assert lines[0].startswith(f"codegen (kernels changed / unchanged / only in one build) on "
                               f"{found.arch} (")  # fmt: skip
    assert lines[-1] == f"  per target: {targets_line(found)}"


def test_html_view_has_a_per_target_table(builds: dict[str, Codegen]) -> None:
    d = diff_targets(builds["A"], builds["B"]).for_verdict("gfx1201")
    cmp = Comparison.model_construct(
        codegen=d, cpu_only=False, categories={}, kernels={}, controlled={}, label="bench",
        system="rnase", ns_per_day=None,
    )  # fmt: skip
    page = section([BenchCodegen(cmp)])
    table = page[page.index('<table class="targets"') : page.index("</table>")]
    assert '<tr class="target timed" data-arch="gfx1201">' in table
    assert f'<td class="num">{len(d.changed)}</td>' in table and "this host&#x27;s GPU" in table
    assert '<tr class="target" data-arch="gfx90a"><td>gfx90a</td><td class="num">0</td>' in table
    one = diff(builds["a1"], builds["b1"])
    cmp_one = cmp.model_copy(update={"codegen": one})
    assert 'class="targets"' not in section([BenchCodegen(cmp_one)])


def test_placement_sees_only_the_timed_targets_changes(builds: dict[str, Codegen]) -> None:
    targets = diff_targets(builds["A"], builds["B"])
    expected = changed_families(diff(builds["a1"], builds["b1"]))
    assert expected and changed_families(targets.for_verdict("gfx1201")) == expected
    assert changed_families(targets.for_verdict("gfx90a")) == {}


# --- one unit compiled for two targets in one clang call (tests/data/codegen/targets) ----------


def _target_machine_code(root: Path) -> dict[tuple[str, str], bytes]:
    """(arch, function) -> raw bytes, from every code object under `root`."""
    code = {}
    for path, _rel, _unit, arch in _code_objects(root):
        for name, (kind, raw) in _elf_symbols(gzip.decompress(path.read_bytes())).items():
            if kind == 2:
                code[arch, name] = raw
    return code


def test_real_two_target_compile_is_diffed_per_target() -> None:
    """leapfrog compiled with --offload-arch=gfx1201 --offload-arch=gfx942, as configured
    and with -fno-unroll-loops: each target's changed kernels are those whose bytes
    differ in that target's code object, with that target's own occupancy."""
    base, nounroll = _codegen(TARGETS / "base", "base"), _codegen(TARGETS / "nounroll", "nounroll")
    assert base.archs == ["gfx1201", "gfx942"]
    assert all(key.endswith(("@gfx1201", "@gfx942")) for key in base.kernels)
    raw_a, raw_b = (
        _target_machine_code(TARGETS / "base"),
        _target_machine_code(TARGETS / "nounroll"),
    )
    targets = diff_targets(base, nounroll)
    lines = []
    for arch in base.archs:
        d = targets.diffs[arch]
        names = {name for (where, name) in raw_a if where == arch}
        assert {k.name for k in d.changed} == {n for n in names if raw_a[arch, n] != raw_b[arch, n]}
        views = target_view(base, arch).kernels, target_view(nounroll, arch).kernels
        for k in d.changed:
            assert k.occupancy == (views[0][k.key].occupancy, views[1][k.key].occupancy)
            assert k.vgprs == (views[0][k.key].vgprs, views[1][k.key].vgprs)
        lines.append(f"{arch}: {len(d.changed)} changed of {len(names)}")
    assert targets_line(targets.diffs["gfx1201"]) == "; ".join(lines)
    wave32, wave64 = (targets.diffs[arch].changed for arch in base.archs)
    by_key = {k.key: k for k in wave64}
    assert {k.key for k in wave32} == set(by_key)  # -fno-unroll-loops changed both
    for k in wave32:  # the same kernel, each target's occupancy: 16 waves (gfx1201), ≤ 8
        assert k.occupancy[0] == 16 and (by_key[k.key].occupancy[0] or 99) <= 8


def test_one_target_build_against_the_same_compile_for_two_targets() -> None:
    """The same unit compiled for gfx1201 alone and for gfx1201 and gfx942: the shared
    target's code is the same (nothing to measure on a gfx1201 host), and gfx942 is only
    in B, not nine changed kernels."""
    one, two = _codegen(TARGETS / "one", "one"), _codegen(TARGETS / "base", "two")
    raw_one, raw_two = (_target_machine_code(TARGETS / v) for v in ("one", "base"))
    assert raw_one == {key: code for key, code in raw_two.items() if key[0] == "gfx1201"}
    targets = diff_targets(one, two)
    here = targets.for_verdict("gfx1201")
    assert nothing_changed(here) and not here.changed and here.host
    assert (
        targets_line(here)
        == "gfx1201 (this host): 0 changed of 9; gfx942: only in the candidate (9 kernels)"
    )
    assert nothing_to_measure(here, NOTHING_CHANGED) == (
        f"gfx1201 (this host): {NOTHING_CHANGED} here; gfx942: only in the candidate (9 kernels)"
    )
    assert diff(one, two) == here.model_copy(update={"targets": [], "host": False})
    assert diff(one, two, "gfx942").categories["other"].only_candidate == sorted(
        target_view(two, "gfx942").kernels
    )


def test_bench_summary_names_the_timed_target(builds: dict[str, Codegen]) -> None:
    said: list[Event] = []
    d = diff_targets(builds["A"], builds["B"]).for_verdict("gfx1201")
    _summary(d, 1.25, said.append)
    texts = [e.text for e in said]
    assert texts[0] == (
        f"codegen after 1.2 s: {len(d.changed)} of 25 kernels changed on gfx1201 (this host's GPU)"
    )
    assert f"  per target: {targets_line(d)}" in texts
    said.clear()
    _summary(diff(builds["a1"], builds["b1"]), 1.25, said.append)
    assert not any("per target" in e.text for e in said)


def test_controlled_verdict_reads_only_the_timed_targets_code(builds: dict[str, Codegen]) -> None:
    """A kernel trace names a kernel once, whatever the targets: on a gfx90a host the
    kernels -fno-unroll-loops changed on gfx1201 are the control, not changed ones."""
    targets = diff_targets(builds["A"], builds["B"])
    names = sorted({k.demangled for k in targets.diffs["gfx1201"].changed if k.demangled})
    assert names
    assert set(kernel_status(names, targets.for_verdict("gfx1201")).values()) == {"changed"}
    assert set(kernel_status(names, targets.for_verdict("gfx90a")).values()) == {"unchanged"}


def test_stored_runs_are_judged_on_the_gpu_they_ran_on(
    builds: dict[str, Codegen], tmp_path: Path
) -> None:
    """A run records its GPU's target (the KFD topology, read like the runner reads it);
    compare and the report judge stored runs on that target, not today's host's."""
    sys_root = tmp_path / "host"
    node = sys_root / "sys/class/kfd/kfd/topology/nodes/1"
    node.mkdir(parents=True)
    (node / "properties").write_text("cpu_cores_count 0\ngfx_target_version 90010\n")
    host = collect(RocmPlatform(dev_root=tmp_path / "dev", sys_root=sys_root), sys_root)
    assert host.gpu_target == "gfx90a"
    for name, run in (("A", "base"), ("B", "cand")):
        (tmp_path / run).mkdir()
        (tmp_path / run / CODEGEN_FILE).write_text(builds[name].model_dump_json())
    result = RunResult(
        run_id="cand", build="b", system="water:3k:pme", tag="t", platform="rocm",
        timestamp="2026-11-25T00:00:00+00:00", finished=True, return_code=0, ns_per_day=1.0,
        image=ImageRef(tag="gromacs:x", id="sha256:0"), host=host, command=["gmx"],
    )  # fmt: skip
    RunStore.save(tmp_path / "cand", result)
    found = runs_codegen(tmp_path / "base", tmp_path / "cand")
    assert found is not None and found.arch == "gfx90a" and found.host
