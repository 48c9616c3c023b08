"""One ROCm build for two GPU targets, through the compiler loop, for real (`-m multi_target`).

The mini llvm-project (`tests/mini_llvm.py`) stands in for the user's LLVM twice: its first
commit adds nothing to Debian's clang-21, its second adds `-fno-unroll-loops` to the device
code of the LINCS unit. GROMACS 2026.3 is built from the compile cache with each, for
gfx1201 (RDNA 4, wave32) and gfx942 (MI300, wave64 with AGPRs) in one build. Checked:
the tags, labels and lockfiles carry both targets; the cache recompiles only the HIP units
(and the few host units that embed the build's name); `codegen diff` between the two
stand-ins reports, per target, exactly the kernels an independent compile of the units
with and without the option changes for that target; each kernel's occupancy follows its
own target's rules; and a GPU outside the image's targets is refused before any container.

Two dev builds of 51 HIP units for two targets take about 12 minutes on 2 cores, more than
CI's budget leaves, so this runs on request (`nox -s tests -- -m multi_target`); the
figures it printed are in the README. CI covers the same per-target diff on a user kernel
(`tests/test_user_kernels.py`) and the target list's CMake flags against GROMACS's own
CMake (`tests/test_targets.py`).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mini_llvm import INITIAL_MESSAGE, MiniLlvm, make_mini_llvm
from objdump_kernels import changed_by_target
from test_rocm_loop import (
    HIP_UNITS,
    LINCS_UNIT,
    OPTION,
    PREFIX_UNITS,
    compile_with_and_without,
)

from orchestrator.codegen.targets import TargetsDiff
from orchestrator.codegen.workflow import codegen_diff, image_codegen
from orchestrator.images.gromacs import build_gromacs
from orchestrator.images.provenance import ImageRecord, load_lockfile
from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm
from orchestrator.platforms.rocm import RocmPlatform
from orchestrator.store.layout import lockfile_path

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.multi_target]

TARGETS = ("gfx1201", "gfx942")
#: gfx_target_version of the KFD topology for each GPU a fake host has.
KFD_VERSION = {"gfx1201": 120001, "gfx942": 90402, "gfx90a": 90010}


@dataclass
class Built:
    """The two dev builds (stand-in adding nothing, stand-in adding the option) and what
    each cost."""

    llvm: MiniLlvm
    settings: Any
    plain: ImageRecord
    option: ImageRecord
    seconds: dict[str, float]


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, rocm_settings: Any, rocm_stable: Any, engine: Any
) -> Built:
    """Both dev builds, from the compile cache the stable image filled."""
    folder = tmp_path_factory.mktemp("llvm-targets") / "llvm-project"
    llvm = make_mini_llvm(folder, message=f"{INITIAL_MESSAGE} ({uuid.uuid4().hex[:8]})")
    settings = rocm_settings.model_copy(
        update={"llvm_source": str(llvm.path), "gpu_arch": ",".join(TARGETS)}
    )
    seconds: dict[str, float] = {}
    records = []
    for name, flags in (("plain", []), ("option", [OPTION])):
        if flags:
            llvm.commit("ExtraFlags: -fno-unroll-loops for LINCS", device_flags=flags,
                        device_units=[LINCS_UNIT])  # fmt: skip
        started = time.monotonic()
        toolchain = ensure_toolchain_llvm(engine, settings, llvm.head())
        seconds[f"{name} toolchain"] = time.monotonic() - started
        started = time.monotonic()
        records.append(build_gromacs(engine, settings, "dev", toolchain_tag=toolchain))
        seconds[f"{name} GROMACS"] = time.monotonic() - started
    print("two-target dev builds (s):", {k: round(v) for k, v in seconds.items()})
    return Built(llvm, settings, records[0], records[1], seconds)


def test_tags_labels_and_lockfiles_carry_both_targets(
    built: Built, rocm_stable: Any, engine: Any
) -> None:
    for record in (built.plain, built.option):
        assert re.fullmatch(r"gromacs:dev-llvm-[0-9a-f]{8}-gfx1201_gfx942-\d{8}-\d{4}", record.tag)
        assert record.gpu_archs == list(TARGETS)
        image = engine.images.get(record.tag)
        assert image.labels["gmxbench.gpu_arch"] == "gfx1201,gfx942"
        lock = load_lockfile(lockfile_path(built.settings.results_dir, record.tag))
        assert lock.record.gpu_archs == list(TARGETS)
        flags = " ".join(lock.context["cmake_flags"])
        assert "--offload-arch=gfx1201 --offload-arch=gfx942" in flags
        assert "-DGMX_HIP_TARGET_ARCH=gfx1201,gfx942" in flags
        _assert_only_hip_units_compiled(built.settings, rocm_stable, record)


def test_codegen_diff_reports_each_target_and_matches_an_independent_compile(
    built: Built, engine: Any
) -> None:
    _, _, targets = codegen_diff(engine, built.settings, built.plain.tag, built.option.tag)
    assert isinstance(targets, TargetsDiff) and list(targets.diffs) == list(TARGETS)
    independent = compile_units(engine, built)
    assert {arch for arch, _, _ in independent} == set(TARGETS)
    for arch in TARGETS:
        found = {(k.unit, k.name) for k in targets.diffs[arch].changed}
        expected = {(unit, name) for a, unit, name in independent if a == arch}
        lincs = {(unit, name) for unit, name in expected if LINCS_UNIT in unit}
        assert len(lincs) == 4 and found == lincs, (arch, sorted(found), sorted(lincs))
        assert targets.diffs[arch].code_unchanged("pme_solve")
    total = sum(c.total for c in targets.diffs["gfx1201"].categories.values())
    lines = [s.text() for s in targets.summaries]
    assert lines == [f"gfx1201: 4 changed of {total}", f"gfx942: 4 changed of {total}"], lines
    print("per target:", "; ".join(lines))


def test_each_target_keeps_its_own_occupancy_rules(built: Built, engine: Any) -> None:
    """The same kernel, two targets: wave32 on gfx1201, wave64 on gfx942, each with its
    own register file (gfx942's VGPRs and AGPRs share 512)."""
    _, codegen = image_codegen(engine, built.settings, built.plain.tag)
    assert codegen.archs == list(TARGETS)
    by_arch: dict[str, dict[str, Any]] = {arch: {} for arch in TARGETS}
    for key, kernel in codegen.kernels.items():
        if kernel.kind == "kernel":
            by_arch[kernel.arch][key.replace(f"@{kernel.arch}", "")] = kernel
    assert by_arch["gfx1201"].keys() == by_arch["gfx942"].keys()
    assert {k.wavefront_size for k in by_arch["gfx1201"].values()} == {32}
    assert {k.wavefront_size for k in by_arch["gfx942"].values()} == {64}
    assert max(k.occupancy or 0 for k in by_arch["gfx942"].values()) <= 8
    assert max(k.occupancy or 0 for k in by_arch["gfx1201"].values()) <= 16
    assert any(k.agprs is not None for k in by_arch["gfx942"].values())


@pytest.mark.parametrize("host", ["gfx90a", "gfx942", "gfx1201"])
def test_a_host_gpu_outside_the_targets_is_refused(built: Built, tmp_path: Path, host: str) -> None:
    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes/1"
    nodes.mkdir(parents=True)
    (nodes / "properties").write_text(
        f"cpu_cores_count 0\ngfx_target_version {KFD_VERSION[host]}\n"
    )
    problem = RocmPlatform(sys_root=tmp_path).run.target_problem(
        built.option.gpu_arch, built.option.tag
    )
    if host == "gfx90a":
        assert problem is not None and "gfx1201,gfx942" in problem and "gfx90a" in problem
    else:
        assert problem is None


def compile_units(engine: Any, built: Built) -> set[tuple[str, str, str]]:
    """(target, unit, kernel) triples whose code `OPTION` changes, by compiling `UNITS`
    directly with the plain build's compiler and two-target flags, with and without it, in
    that image (its stand-in adds nothing), read by `tests/objdump_kernels.py`."""
    out = compile_with_and_without(engine, built.settings, built.plain, "independent-targets")
    return changed_by_target(out / "plain", out / "option")


def _assert_only_hip_units_compiled(settings: Any, stable: Any, dev: ImageRecord) -> None:
    stable_cache = load_lockfile(lockfile_path(settings.results_dir, stable.tag)).compile_cache
    cache = load_lockfile(lockfile_path(settings.results_dir, dev.tag)).compile_cache
    assert cache is not None and stable_cache is not None
    assert cache.hits + cache.misses == stable_cache.hits + stable_cache.misses
    assert HIP_UNITS <= cache.misses <= HIP_UNITS + PREFIX_UNITS, cache
