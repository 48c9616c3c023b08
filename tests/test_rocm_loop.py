"""The compiler loop on the ROCm platform, on Debian's ROCm packages, for real, end to end.

A mini llvm-project (`tests/mini_llvm.py`) stands in for the user's LLVM: its clang
forwards to Debian's clang-21 (the stable image's HIP compiler), adding the device
options its ExtraFlags.cpp names. Its first commit adds nothing. Then the working tree
adds `-fno-unroll-loops` to the device code of the LINCS unit only, uncommitted, and
`nox -s bench -- --llvm <checkout>` runs the whole loop as a user's shell does (on the
CPU: there is no GPU here): the toolchain rebuilds that one file, GROMACS only its HIP
units from the compile cache, the codegen summary comes as soon as the dev image exists
and names the four changed `lincsKernel`s, the bench warns that a water box never runs
them (SETTLE) and names water_lincs, both sides run interleaved, and the verdict is
printed and reaches a real local webhook. The kernels `codegen diff` calls changed are
checked against an independent compile of some units with and without the option;
`--system auto` picks water_lincs; the same bench again builds nothing. Benching the
first commit (which adds nothing) builds GROMACS once more and stops at the codegen
diff: no kernel changed, no container runs. These are CI's two ROCm dev builds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import json_webhook
from mini_llvm import INITIAL_MESSAGE, MiniLlvm, make_mini_llvm, version_line
from objdump_kernels import DISASSEMBLE
from objdump_kernels import changed as objdump_changed

from orchestrator.core.errors import UserError
from orchestrator.core.events import Event
from orchestrator.images.provenance import ImageRecord, load_lockfile, lockfile_path
from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm
from orchestrator.results.codegen_diff import CodegenDiff
from orchestrator.runs.database import Database, benches
from orchestrator.runs.store import RunStore
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.codegen import codegen_diff
from orchestrator.workflows.placement import changed_families
from orchestrator.workflows.rebuild import find_lockfile

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
OPTION = "-fno-unroll-loops"
#: The only unit whose device code gets `OPTION`: the change touches LINCS kernels only.
LINCS_UNIT = "lincs_gpu_internal_hip"
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


def cli(loop: Loop, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m orchestrator ...` with the loop's settings, as a user's shell runs it."""
    source = loop.settings.gromacs
    full = {
        **os.environ, "ORCH_PLATFORM": "rocm", "ORCH_ROCM_STACK": "debian",
        "ORCH_GPU_ARCH": "gfx1201", "ORCH_RESULTS_DIR": str(loop.settings.results_dir),
        "ORCH_LLVM_SOURCE": str(loop.llvm.path), "ORCH_GROMACS__URL": source.url,
        "ORCH_GROMACS__REF": source.ref, "ORCH_GROMACS__SHA256": source.sha256,
        "NO_PROXY": "127.0.0.1", **env,
    }  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=REPO, env=full, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip


@dataclass
class Bench:
    """What the dirty-tree `bench` printed, what the webhook received, and the dev image."""

    proc: subprocess.CompletedProcess[str]
    received: list[dict[str, Any]]
    url: str
    dev: ImageRecord


@pytest.fixture(scope="module")
def dirty(engine: Any, loop: Loop, rocm_stable: Any) -> Bench:
    """`bench --llvm <checkout>` with the option added to the LINCS unit's device code in
    the working tree, uncommitted, on a water box (which never runs LINCS)."""
    loop.llvm.edit(device_flags=[OPTION], device_units=[LINCS_UNIT])
    with json_webhook() as (url, received):
        proc = cli(loop, "bench", "--llvm", str(loop.llvm.path), "--cpu-only", "--system",
                   "water:3k", "--steps", "500", "--repeats", "2",
                   ORCH_WEBHOOK_URL=url, ORCH_WEBHOOK_FORMAT="json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    short = loop.llvm.head()[:8]
    said = proc.stderr + proc.stdout
    built = re.search(rf"tagged (gromacs:dev-llvm-{short}-dirty-\d{{8}}-\d{{4}})", said)
    assert built, said[-3000:]
    dev = load_lockfile(lockfile_path(loop.settings.results_dir, built.group(1))).record
    return Bench(proc, received, url, dev)


def test_dirty_tree_bench_runs_the_whole_loop(loop: Loop, rocm_stable: Any, dirty: Bench) -> None:
    commit = loop.llvm.head()
    short = commit[:8]
    said, out = dirty.proc.stderr + dirty.proc.stdout, dirty.proc.stdout
    ninja = [line for line in said.splitlines() if line.startswith("ninja: ")]
    assert ninja and "compiled 2 files" in ninja[-1], ninja  # the toolchain: one file + version
    assert "ExtraFlags.cpp" in ninja[-1] and "Version.cpp" in ninja[-1]
    assert dirty.dev.llvm_commit == f"{short}-dirty" and dirty.dev.llvm_dirty
    _assert_only_hip_units_compiled(loop.settings, rocm_stable, dirty.dev)
    headline = re.search(
        rf"^LLVM {short}-dirty on water:3k:pme: [\d.]+ ns/day \(baseline ", out, re.M
    )
    assert headline, out
    assert "codegen (kernels changed / unchanged / only in one build):" in out
    assert re.search(r"^  pme_solve: code unchanged \(\d+ kernels identical\)", out, re.M), out
    early = re.search(r"codegen after ([\d.]+) s: 4 of (\d+) kernels changed", said)
    first_run = said.index("__water-3k-pme__")  # the first run's line names it
    assert early and said.index(early.group(0)) < first_run, said[-3000:]
    warned = re.search(
        r"the changed kernels \(lincs: lincsKernel<[^)]*\) do not run on a GPU in "
        r"water:3k:pme \(by [^)]*\): systems that run them: ([\w:, ]+);", said
    )  # fmt: skip
    assert warned and "water_lincs:3k" in warned.group(1).split(", "), said[-3000:]
    verdicts = [p for p in dirty.received if "headline" in json.dumps(p)]
    assert verdicts and headline.group(0) in json.dumps(verdicts[-1])
    assert dirty.url not in out + said  # the webhook URL is a secret
    runs = RunStore(loop.settings.results_dir)
    tag = re.search(
        rf"{re.escape(dirty.dev.build)}__water-3k-pme__(llvm-{short}-dirty-[\d-]+)-r1", out
    )
    assert tag, out
    group = runs.group(f"{dirty.dev.build}__water-3k-pme__{tag.group(1)}")
    assert len(group) == 2
    for path in group:
        result = RunStore.load(path)
        assert result.finished and result.ns_per_day
        assert result.llvm_commit == f"{short}-dirty"
        assert result.compiler_version == version_line(f"{commit}-dirty", str(loop.llvm.path))


def test_the_same_bench_again_builds_nothing_and_can_be_its_own_baseline(
    engine: Any, loop: Loop, dirty: Bench, tmp_path: Path
) -> None:
    """`--against-llvm A` (and `--against <build>`) make the baseline a dev build: here the
    same dirty tree on both sides, so both groups run the one dev image (an A/A of it)."""
    checkout = str(loop.llvm.path)
    for against in ({"against_llvm": checkout}, {"against": dirty.dev.build}):
        loop.said.clear()
        req = BenchRequest(
            llvm=checkout, cpu_only=True, system="water:3k", steps=500, repeats=2, **against
        )
        cmp = bench(engine, loop.settings, req, emit=loop.emit).comparison
        assert any(line.endswith("exists: reusing it") for line in loop.said), loop.said
        assert f"up to date: {dirty.dev.tag}" in "\n".join(loop.said)
        assert all(run.startswith(f"{dirty.dev.build}__") for run in cmp.baseline), cmp.baseline
        assert all(run.startswith(f"{dirty.dev.build}__") for run in cmp.candidate)
        assert cmp.codegen is None  # one image: nothing to diff
    with pytest.raises(UserError, match="no GROMACS image gromacs:no-such-build"):
        bench(engine, loop.settings, BenchRequest(against="no-such-build", repeats=2))
    lock = find_lockfile(engine, loop.settings.model_copy(update={"results_dir": tmp_path}),
                         "dev-current")  # fmt: skip
    assert lock.record.id == dirty.dev.id == engine.images.get("gromacs:dev-current").id


def test_a_stand_in_adding_nothing_changes_no_kernel_and_measures_nothing(
    engine: Any, loop: Loop, rocm_stable: Any, dirty: Bench
) -> None:
    """`bench --llvm <first commit>` (its toolchain adds nothing): GROMACS is built once
    more (its HIP units), the codegen diff finds every kernel identical, and the bench
    ends there, with no container run, exit 0, recorded and posted as `nothing measured`."""
    first = loop.llvm.git("rev-list", "--max-parents=0", "HEAD")
    with json_webhook() as (url, received):
        proc = cli(loop, "bench", "--llvm", first[:12], "--cpu-only", "--system", "water:3k",
                   ORCH_WEBHOOK_URL=url, ORCH_WEBHOOK_FORMAT="json")  # fmt: skip
    said = proc.stderr + proc.stdout
    assert proc.returncode == 0, said[-3000:]
    assert proc.stdout.rstrip().endswith("no kernel changed: nothing to measure"), proc.stdout
    assert "pair 1 of" not in said and "__water-3k-pme__" not in said
    built = re.search(r"tagged (gromacs:dev-llvm-[0-9a-f]{8}-\d{8}-\d{4})", said)
    assert built, said[-3000:]
    dev = load_lockfile(lockfile_path(loop.settings.results_dir, built.group(1))).record
    runs = RunStore(loop.settings.results_dir)
    assert not [p for p in runs.runs() if p.name.startswith(f"{dev.build}__")]  # no container
    timing = re.search(r"done: ([\d.]+) s in all, the codegen summary after ([\d.]+) s: "
                       r"0\.0 s in 0 container runs", said)  # fmt: skip
    assert timing, said[-2000:]
    build_seconds = _build_seconds(said)
    print(f"no-op bench: {timing.group(1)} s in all, GROMACS dev build {build_seconds:.0f} s, "
          f"codegen summary at {timing.group(2)} s")  # fmt: skip
    assert [p["data"]["verdict"] for p in received if p.get("event") == "verdict"] == [
        "nothing measured"
    ]
    mine = benches.select().where(benches.c.candidate == dev.build)
    rows = Database.of(loop.settings).query(mine)
    assert [(r.verdict, r.runs, r.changed_kernels) for r in rows] == [("nothing measured", 0, 0)]
    _assert_only_hip_units_compiled(loop.settings, rocm_stable, dev)
    same = gfx1201_diff(engine, loop.settings, rocm_stable.tag, dev.tag)
    assert not same.changed, same.changed[:3]
    assert sum(len(c.unchanged) for c in same.categories.values()) >= 500
    assert all(not c.only_a and not c.only_b for c in same.categories.values())
    back = gfx1201_diff(engine, loop.settings, dirty.dev.tag, dev.tag)
    forth = gfx1201_diff(engine, loop.settings, rocm_stable.tag, dirty.dev.tag)
    assert changed(back) == changed(forth) and changed(back)


def test_system_auto_picks_the_system_that_runs_the_changed_kernels(
    engine: Any, loop: Loop, dirty: Bench
) -> None:
    """The same dirty tree with `--system auto`: only LINCS kernels changed, and the
    cheapest system that runs them is water_lincs (with -update gpu on a GPU; not added
    with --cpu-only, where they are host runs)."""
    loop.said.clear()
    req = BenchRequest(llvm=str(loop.llvm.path), cpu_only=True, system="auto", steps=200,
                       repeats=2)  # fmt: skip
    outcome = bench(engine, loop.settings, req, emit=loop.emit)
    said = "\n".join(loop.said)
    assert "--system auto: water_lincs:3k runs lincs (from its options (-update gpu))" in said
    assert "--cpu-only: not adding -update gpu (GPU options) to water_lincs:3k" in said
    assert outcome.comparison is not None and outcome.comparison.system == "water_lincs:3k"
    assert outcome.runs == 4 and outcome.verdict in ("faster", "slower", "no change")


def test_changed_kernels_are_those_an_independent_compile_changes(
    engine: Any, loop: Loop, rocm_stable: Any, dirty: Bench
) -> None:
    """The option changes kernels of the leap-frog, LINCS and SETTLE units when compiled
    into each (the independent compile); the stand-in gives it to the LINCS unit only, so
    exactly the LINCS unit's changed kernels are changed in the dev build."""
    result = gfx1201_diff(engine, loop.settings, rocm_stable.tag, dirty.dev.tag)
    independent = compile_units(engine, loop.settings, rocm_stable)
    assert {unit for unit, _ in independent} > {u for u in UNITS if LINCS_UNIT in u}
    lincs = {(unit, name) for unit, name in independent if LINCS_UNIT in unit}
    assert len(lincs) == 4 and changed(result) == lincs, (sorted(changed(result)), sorted(lincs))
    assert changed_families(result).keys() == {"lincs"}
    assert result.code_unchanged("pme_solve")  # PME solve has no loop to unroll
    assert not result.code_unchanged("other")  # LINCS has
    shown = cli(loop, "codegen", "diff", rocm_stable.build, dirty.dev.build, "--kernel",
                "lincsKernel", "--asm")  # fmt: skip
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert f"A: {rocm_stable.tag}" in shown.stdout and "other: " in shown.stdout
    assert re.search(r"^--- gromacs:stable-\S+ _Z", shown.stdout, re.M), shown.stdout[:2000]
    assert re.search(r"^[-+][a-z]\w* ", shown.stdout, re.M)  # instruction lines differ


def gfx1201_diff(engine: Any, settings: Any, a: str, b: str) -> CodegenDiff:
    """`codegen diff A B` of two one-target builds: their one target's diff."""
    _, _, targets = codegen_diff(engine, settings, a, b)
    assert list(targets.diffs) == ["gfx1201"], list(targets.diffs)
    return targets.target("gfx1201")


def _build_seconds(said: str) -> float:
    """The GROMACS dev build's seconds, from the console's last build-ended line (the
    toolchain was built before: this bench builds GROMACS only)."""
    ended = re.findall(r"^built \S+ as \S+ in ([\d.]+) s", said, re.M)
    return float(ended[-1]) if ended else float("nan")


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
"""


def compile_with_and_without(engine: Any, settings: Any, image: ImageRecord, name: str) -> Path:
    """`UNITS` compiled in `image` with its lockfile's CMake flags (so its compiler and its
    targets), with (`option/`) and without (`plain/`) `OPTION`, each code object
    disassembled beside it; the output folder."""
    lock = load_lockfile(lockfile_path(settings.results_dir, image.tag))
    flags = " ".join(lock.context["cmake_flags"]).replace(
        f"-DCMAKE_INSTALL_PREFIX={lock.context['prefix']}", "-DCMAKE_INSTALL_PREFIX=/tmp/unused"
    )
    tools = "/usr/lib/llvm-21/bin"
    script = CHECK.format(flags=flags, units=repr(set(UNITS)), option=OPTION, bin=tools)
    script += DISASSEMBLE.format(roots="/out/plain /out/option", bin=tools)
    work = Path(settings.results_dir) / name
    (work / "out").mkdir(parents=True, exist_ok=True)
    (work / "check.sh").write_text(script)
    tarball = settings.gromacs.path
    container = engine.containers.run(
        image.id, ["bash", "/in/check.sh"], detach=True, network_disabled=True,
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
    return work / "out"


def compile_units(engine: Any, settings: Any, stable: ImageRecord) -> set[tuple[str, str]]:
    """(unit, kernel) pairs whose code `OPTION` changes, by compiling `UNITS` directly with
    the stable image's compiler and flags, with and without it, in the stable image, and
    comparing `llvm-objdump -d`'s text of each symbol (`tests/objdump_kernels.py`: no code
    shared with the codegen probe or its parser, which the other side of the check uses)."""
    out = compile_with_and_without(engine, settings, stable, "independent-check")
    found, units = objdump_changed(out / "plain", out / "option")
    assert units == set(UNITS), sorted(units)
    return found
