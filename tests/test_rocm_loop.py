"""The compiler loop on the ROCm platform, on Debian's ROCm packages, for real.

A mini llvm-project (`tests/mini_llvm.py`) stands in for the user's LLVM: its clang
forwards to Debian's clang-21 (the stable image's HIP compiler), adding the device
options its ExtraFlags.cpp names. Its first commit adds nothing; a second commit adds
`-fno-unroll-loops` to device code (the toolchain rebuilds that one file, and GROMACS only
its HIP units, from the compile cache); then the working tree takes the option out again,
uncommitted, and `bench --llvm <checkout>` runs the whole loop on that dirty tree (on the
CPU: there is no GPU here). The kernels `codegen diff` calls changed are checked against
an independent compile of some units with and without the option, and a stand-in that
adds nothing must change no kernel at all.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mini_llvm import INITIAL_MESSAGE, MiniLlvm, make_mini_llvm

from orchestrator.core.events import Event
from orchestrator.images.gromacs import build_gromacs
from orchestrator.images.provenance import ImageRecord, load_lockfile, lockfile_path
from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm
from orchestrator.parsers.codegen import parse_probe_output, probe_source
from orchestrator.results.codegen_diff import CodegenDiff
from orchestrator.workflows.codegen import codegen_diff

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
OPTION = "-fno-unroll-loops"
#: Units compiled independently (small ones: the nbnxm bodies take 30+ s each).
UNITS = (
    "src/gromacs/mdlib/leapfrog_gpu_internal_hip.cpp",
    "src/gromacs/mdlib/lincs_gpu_internal_hip.cpp",
    "src/gromacs/mdlib/settle_gpu_internal_hip.cpp",
    "src/gromacs/ewald/pme_solve_hip.cpp",
)
#: GROMACS 2026.3's HIP translation units (CMake's HIP language) and its host units that
#: include buildinfo.h (the install prefix, hence the build name, and the compilers).
HIP_UNITS, PREFIX_UNITS = 51, 5


@dataclass
class Loop:
    """The mini llvm-project on the ROCm builder and what the tests built from it."""

    llvm: MiniLlvm
    settings: Any
    said: list[str] = field(default_factory=list)
    option_dev: Any = None

    def emit(self, event: Event) -> None:
        self.said.append(event.text)


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory, rocm_settings: Any, engine: Any) -> Loop:
    # A fresh first commit each session: the second commit's toolchain must really be
    # built (its ninja counts are checked), not found from an earlier session.
    folder = tmp_path_factory.mktemp("llvm-rocm") / "llvm-project"
    llvm = make_mini_llvm(folder, message=f"{INITIAL_MESSAGE} ({uuid.uuid4().hex[:8]})")
    settings = rocm_settings.model_copy(update={"llvm_source": str(llvm.path)})
    ensure_toolchain_llvm(engine, settings, llvm.head())  # the first commit: adds nothing
    return Loop(llvm, settings)


def changed(result: CodegenDiff) -> set[tuple[str, str]]:
    return {(k.unit, k.name) for k in result.changed}


def test_second_commit_rebuilds_one_file_and_changes_what_the_option_changes(
    engine: Any, loop: Loop, rocm_stable: Any
) -> None:
    loop.llvm.commit("AMDGPU: no loop unrolling in device code", device_flags=[OPTION])
    toolchain = ensure_toolchain_llvm(engine, loop.settings, loop.llvm.head(), emit=loop.emit)
    ninja = [line for line in loop.said if line.startswith("ninja: ")]
    assert ninja and "compiled 2 files" in ninja[-1], ninja
    assert "ExtraFlags.cpp" in ninja[-1] and "Version.cpp" in ninja[-1]
    dev = build_gromacs(engine, loop.settings, "dev", toolchain_tag=toolchain)
    loop.option_dev = dev
    assert dev.llvm_commit == loop.llvm.head()[:8] and not dev.llvm_dirty
    _assert_only_hip_units_compiled(loop.settings, rocm_stable, dev)
    _, _, result = codegen_diff(engine, loop.settings, rocm_stable.tag, dev.tag)
    independent = compile_units(engine, loop.settings, rocm_stable)
    ours = {(unit, name) for unit, name in changed(result) if unit in UNITS}
    assert independent and ours == independent, (sorted(ours), sorted(independent))
    assert result.code_unchanged("pme_solve")  # PME solve has no loop to unroll
    assert not result.code_unchanged("other")  # leap-frog, LINCS and SETTLE have
    shown = cli(loop, "codegen", "diff", rocm_stable.build, dev.build, "--kernel",
                "leapFrogKernel", "--asm")  # fmt: skip
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert f"A: {rocm_stable.tag}" in shown.stdout and "other: " in shown.stdout
    assert re.search(r"^--- gromacs:stable-\S+ _Z", shown.stdout, re.M), shown.stdout[:2000]
    assert re.search(r"^[-+][a-z]\w* ", shown.stdout, re.M)  # instruction lines differ


def cli(loop: Loop, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m orchestrator ...` with the loop's settings, as a user's shell runs it."""
    source = loop.settings.gromacs
    env = {
        **os.environ, "ORCH_PLATFORM": "rocm", "ORCH_ROCM_STACK": "debian",
        "ORCH_GPU_ARCH": "gfx1201", "ORCH_RESULTS_DIR": str(loop.settings.results_dir),
        "ORCH_LLVM_SOURCE": str(loop.llvm.path), "ORCH_GROMACS__URL": source.url,
        "ORCH_GROMACS__REF": source.ref, "ORCH_GROMACS__SHA256": source.sha256,
    }  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def dirty(engine: Any, loop: Loop) -> Iterator[subprocess.CompletedProcess[str]]:
    """`bench --llvm <checkout>` on the second commit with the option taken out, uncommitted."""
    loop.llvm.edit(device_flags=[])
    yield cli(loop, "bench", "--llvm", str(loop.llvm.path), "--cpu-only", "--system",
              "water:3k", "--steps", "500", "--repeats", "2")  # fmt: skip


def test_dirty_tree_bench_end_to_end_and_a_stand_in_adding_nothing_changes_nothing(
    engine: Any, loop: Loop, rocm_stable: Any, dirty: subprocess.CompletedProcess[str]
) -> None:
    assert dirty.returncode == 0, dirty.stderr[-3000:]
    short = loop.llvm.head()[:8]
    built = re.search(rf"tagged (gromacs:dev-llvm-{short}-dirty-\d{{8}}-\d{{4}})", dirty.stderr)
    assert built, dirty.stderr[-3000:]
    out = dirty.stdout
    assert re.search(rf"^LLVM {short}-dirty on water:3k:pme: ", out, re.M), out
    assert "codegen (kernels changed / unchanged / only in one build):" in out
    assert re.search(r"^  nbnxm: code unchanged \(\d+ kernels identical\)", out, re.M), out
    dev = load_lockfile(lockfile_path(loop.settings.results_dir, built.group(1))).record
    _assert_only_hip_units_compiled(loop.settings, rocm_stable, dev)
    _, _, same = codegen_diff(engine, loop.settings, rocm_stable.tag, dev.tag)
    assert not same.changed, same.changed[:3]
    assert sum(len(c.unchanged) for c in same.categories.values()) >= 500
    assert all(not c.only_a and not c.only_b for c in same.categories.values())
    if loop.option_dev is not None:  # the option's kernels, seen from the other side
        _, _, back = codegen_diff(engine, loop.settings, loop.option_dev.tag, dev.tag)
        _, _, forth = codegen_diff(engine, loop.settings, rocm_stable.tag, loop.option_dev.tag)
        assert changed(back) == changed(forth) and changed(back)


def _assert_only_hip_units_compiled(settings: Any, stable: Any, dev: ImageRecord) -> None:
    """The compile cache's own counters: the HIP units (the compiler under test's) and the
    few host units that embed the build's name are compiled; the rest, made by the
    builder's unchanged host compiler for the stable image, come from the cache."""
    stable_cache = load_lockfile(lockfile_path(settings.results_dir, stable.tag)).compile_cache
    cache = load_lockfile(lockfile_path(settings.results_dir, dev.tag)).compile_cache
    assert cache is not None and stable_cache is not None
    assert cache.hits + cache.misses == stable_cache.hits + stable_cache.misses
    assert HIP_UNITS <= cache.misses <= HIP_UNITS + PREFIX_UNITS, cache


CHECK = r"""set -euo pipefail
mkdir -p /src/gromacs && tar -C /src/gromacs --strip-components=1 -xzf /in/gromacs.tar.gz
cmake -S /src/gromacs -B /build/gromacs {flags} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > /dev/null
python3 - <<'PY'
import json, os, shlex, subprocess
units = {units}
for entry in json.load(open("/build/gromacs/compile_commands.json")):
    unit = os.path.relpath(entry["file"], "/src/gromacs")
    if unit not in units:
        continue
    args = shlex.split(entry["command"])
    output = os.path.relpath(os.path.join(entry["directory"], entry["output"]), "/build/gromacs")
    for side, extra in (("plain", []), ("option", ["-Xarch_device", "{option}"])):
        target = f"/out/{{side}}/{{output}}"
        os.makedirs(os.path.dirname(target), exist_ok=True)
        cut = args.index("-o")
        subprocess.run(args[:cut] + extra + ["-o", target] + args[cut + 2:],
                       cwd=entry["directory"], check=True)
        subprocess.run(["{bin}/llvm-objdump", "--offloading", target], check=True,
                       stdout=subprocess.DEVNULL)
        for name in os.listdir(os.path.dirname(target)):
            if "host-" in name or name.endswith(".o"):
                os.remove(os.path.join(os.path.dirname(target), name))
PY
for side in plain option; do
  python3 /in/probe.py gpu --objdump {bin}/llvm-objdump --readelf {bin}/llvm-readelf \
    /out/$side > /out/$side.json
done
"""


def compile_units(engine: Any, settings: Any, stable: ImageRecord) -> set[tuple[str, str]]:
    """(unit, kernel) pairs whose code `OPTION` changes, by compiling `UNITS` directly with
    the stable image's compiler and flags, with and without it, in the stable image."""
    lock = load_lockfile(lockfile_path(settings.results_dir, stable.tag))
    flags = " ".join(lock.context["cmake_flags"]).replace(
        f"-DCMAKE_INSTALL_PREFIX={lock.context['prefix']}", "-DCMAKE_INSTALL_PREFIX=/tmp/unused"
    )
    script = CHECK.format(
        flags=flags, units=repr(set(UNITS)), option=OPTION, bin="/usr/lib/llvm-21/bin"
    )
    work = Path(settings.results_dir) / "independent-check"
    (work / "out").mkdir(parents=True, exist_ok=True)
    (work / "check.sh").write_text(script)
    (work / "probe.py").write_text(probe_source())
    tarball = settings.gromacs.path
    container = engine.containers.run(
        stable.id, ["bash", "/in/check.sh"], detach=True, network_disabled=True,
        volumes={str(work): {"bind": "/in", "mode": "rw"},
                 str(tarball): {"bind": "/in/gromacs.tar.gz", "mode": "ro"},
                 str(work / "out"): {"bind": "/out", "mode": "rw"}},
    )  # fmt: skip
    try:
        status = container.wait(timeout=1800)
        logs = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, logs[-3000:]
    sides = {
        side: parse_probe_output((work / "out" / f"{side}.json").read_text(), source=side)
        for side in ("plain", "option")
    }
    plain, option = sides["plain"].kernels, sides["option"].kernels
    assert plain.keys() == option.keys() and plain
    assert {k.unit for k in plain.values()} == set(UNITS), json.dumps(sorted(UNITS))
    return {(k.unit, k.name) for key, k in plain.items() if k.sha256 != option[key].sha256}
