"""The compiler loop on the ROCm platform, on Debian's ROCm packages, for real, end to end.

A mini llvm-project (`tests/mini_llvm.py`) stands in for the user's LLVM: its clang
forwards to Debian's clang-21 (the stable image's HIP compiler), adding the device
options its ExtraFlags.cpp names. Three commits after its first make the patch loop:

* **base** adds `-ffp-contract=off` to every device compilation, so it already differs
  from the stable compiler in most kernels (as a user's LLVM differs from the vendor's);
* **change** adds `-fno-unroll-loops` to the device code of the LINCS unit only;
* **no-op** changes nothing the compiler does (its `clang --version` still differs).

`nox -s bench -- --llvm <change>` measures the commit against its parent (base): both
toolchains come from one workspace (the candidate's recompiles one file), GROMACS is
built from the compile cache (its HIP units only), the codegen summary names the four
`lincsKernel`s alone, checked against an independent compile, the bench warns that a
water box never runs them (SETTLE) and names water_lincs, both sides run interleaved,
and the verdict names its base and reaches a real local webhook. `bench --llvm <no-op>
--system saxpy` is the next iteration, on a user's kernel: the parent's toolchain is
reused, every kernel is identical, and the bench stops there: no container runs.
`--against stable` shows what the two compilers always differ in; `--system auto` picks
water_lincs; a dirty working tree is planned against its `HEAD` (`--dry-run`). These are
CI's two ROCm dev builds (a third, the no-op's, would be the same path again).
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

from orchestrator.codegen.diff import CodegenDiff
from orchestrator.codegen.workflow import codegen_diff
from orchestrator.core.errors import UserError
from orchestrator.core.events import Event
from orchestrator.images.provenance import ImageRecord, load_lockfile
from orchestrator.report import words
from orchestrator.store.database import Database, benches
from orchestrator.store.layout import lockfile_path
from orchestrator.store.runstore import RunStore
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.build import CompilerSpec
from orchestrator.workflows.placement import changed_families
from orchestrator.workflows.rebuild import find_lockfile

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
#: A user's HIP microbenchmark recipe (`[sources]`): what the no-op iteration is benched on.
SAXPY = Path(__file__).parent / "data" / "user_recipes" / "saxpy"
#: The base commit's option, on every device compilation: most kernels differ from stable.
BASE_OPTION = "-ffp-contract=off"
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
    """The mini llvm-project with its three commits, and what the tests built from it."""

    llvm: MiniLlvm
    settings: Any
    base: str
    change: str
    noop: str
    said: list[str] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        self.said.append(event.text)


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory, rocm_settings: Any, engine: Any) -> Loop:
    # A fresh first commit each session: every toolchain must really be built (ninja's
    # counts are checked), not found from an earlier session.
    folder = tmp_path_factory.mktemp("llvm-rocm") / "llvm-project"
    llvm = make_mini_llvm(folder, message=f"{INITIAL_MESSAGE} ({uuid.uuid4().hex[:8]})")
    base = llvm.commit("base: no FMA contraction on the device", common_device_flags=[BASE_OPTION])
    flags = {"common_device_flags": [BASE_OPTION], "device_flags": [OPTION],
             "device_units": [LINCS_UNIT]}  # fmt: skip
    change = llvm.commit("change: no loop unrolling in LINCS", **flags)
    noop = llvm.commit("no-op: nothing the compiler does", **flags)
    settings = rocm_settings.model_copy(update={"llvm_source": str(llvm.path)})
    return Loop(llvm, settings, base, change, noop)


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


def built_dev(loop: Loop, said: str, commit: str) -> ImageRecord:
    """The record of the dev image a bench said it tagged for `commit`."""
    built = re.search(rf"tagged (gromacs:dev-llvm-{commit[:8]}-\d{{8}}-\d{{4}})", said)
    assert built, said[-3000:]
    return load_lockfile(lockfile_path(loop.settings.results_dir, built.group(1))).record


@dataclass
class Bench:
    """What a `bench` printed, what the webhook received, and the dev images it built."""

    proc: subprocess.CompletedProcess[str]
    received: list[dict[str, Any]]
    url: str
    #: The candidate's dev image, and the parent's (None where the bench built none).
    dev: ImageRecord | None
    parent: ImageRecord | None = None


@pytest.fixture(scope="module")
def change(engine: Any, loop: Loop, rocm_stable: Any) -> Bench:
    """`bench --llvm <change>` on a water box (which never runs LINCS): against its
    parent, the base commit, both sides built here."""
    with json_webhook() as (url, received):
        proc = cli(loop, "bench", "--llvm", loop.change[:12], "--cpu-only", "--system",
                   "water:3k", "--steps", "500", "--repeats", "4",
                   ORCH_WEBHOOK_URL=url, ORCH_WEBHOOK_FORMAT="json")  # fmt: skip
    said = proc.stderr + proc.stdout
    # 0: no significant slowdown, 3: could not judge (a busy host), 4: slower (`core.exits`)
    assert proc.returncode in (0, 3, 4), said[-3000:]
    return Bench(proc, received, url, built_dev(loop, said, loop.change),
                 built_dev(loop, said, loop.base))  # fmt: skip


@pytest.fixture(scope="module")
def noop(engine: Any, loop: Loop, change: Bench) -> Bench:
    """`bench --llvm <no-op> --system saxpy:4MiB`, the next iteration, on a user's HIP
    kernel: its parent (the change commit) was built by the first."""
    with json_webhook() as (url, received):
        proc = cli(loop, "bench", "--llvm", loop.noop[:12], "--system", "saxpy:4MiB",
                   ORCH_WEBHOOK_URL=url, ORCH_WEBHOOK_FORMAT="json",
                   ORCH_RECIPES_DIRS=str(SAXPY))  # fmt: skip
    said = proc.stderr + proc.stdout
    assert proc.returncode == 0, said[-3000:]
    return Bench(proc, received, url, None)


def test_a_changing_commit_names_only_its_kernels_against_its_parent(
    loop: Loop, rocm_stable: Any, change: Bench
) -> None:
    """`bench --llvm <change>` builds its parent's toolchain and dev image and its own
    (GROMACS's HIP units each; the candidate's toolchain recompiles one file), names the
    LINCS kernels alone, warns that the system never runs them, says what the runs take,
    and posts the verdict that names its base."""
    assert change.dev is not None and change.parent is not None
    short = loop.change[:8]
    said, out = change.proc.stderr + change.proc.stdout, change.proc.stdout
    parent = f"parent {loop.base[:8]}"
    assert f"baseline ({parent}): LLVM toolchain at {loop.base}" in said
    assert said.count("tagged gromacs:dev-") == 2, said[-3000:]  # both sides, from the cache
    ninja = [line for line in said.splitlines() if line.startswith("ninja: ")]
    assert ninja and "compiled 2 files" in ninja[-1], ninja  # the candidate: one file + version
    assert "ExtraFlags.cpp" in ninja[-1] and "Version.cpp" in ninja[-1]
    assert change.dev.llvm_commit == short and not change.dev.llvm_dirty
    for dev in (change.parent, change.dev):
        _assert_only_hip_units_compiled(loop.settings, rocm_stable, dev)
    print(f"change bench (both sides built): the GROMACS dev builds {_build_seconds(said)}")
    headline = re.search(
        rf"^LLVM {short} on water:3k:pme vs {parent}: [\d.]+ ns/day \(baseline ", out, re.M
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
    assert "8 runs on water:3k:pme: " in said  # what the runs take, said before them
    verdicts = [p for p in change.received if "headline" in json.dumps(p)]
    assert verdicts and headline.group(0) in json.dumps(verdicts[-1])
    said_verdict = [p["data"]["verdict"] for p in change.received if p.get("event") == "verdict"]
    codes = {"faster": 0, "no change": 0, "too busy": 3, "slower": 4}  # `core.exits`
    assert change.proc.returncode == codes[said_verdict[-1]], said_verdict
    assert change.url not in out + said  # the webhook URL is a secret
    runs = RunStore(loop.settings.results_dir)
    tag = re.search(rf"{re.escape(change.dev.build)}__water-3k-pme__(llvm-{short}-[\d-]+)-r1", out)
    assert tag, out
    group = runs.group(f"{change.dev.build}__water-3k-pme__{tag.group(1)}")
    assert 4 <= len(group) <= 8  # 4 pairs, and those that shared the machine again
    for path in group:
        result = RunStore.load(path)
        assert result.finished and result.ns_per_day
        assert result.llvm_commit == short
        assert result.compiler_version == version_line(loop.change, str(loop.llvm.path))


def test_a_no_op_commit_changes_no_kernel_and_builds_only_its_side(
    loop: Loop, change: Bench, noop: Bench
) -> None:
    """`bench --llvm <no-op commit>`, the next iteration: the parent's toolchain is reused,
    the candidate's recompiles its version alone, every kernel of the user's HIP kernel is
    identical to the parent's, and the bench ends there: no container run, exit 0,
    recorded and posted as `nothing measured`."""
    said = noop.proc.stderr + noop.proc.stdout
    assert f"baseline (parent {loop.change[:8]}): LLVM toolchain at {loop.change}" in said
    assert re.search(rf"toolchain image \S+-llvm-{loop.change[:8]} exists: reusing it", said)
    ninja = [line for line in said.splitlines() if line.startswith("ninja: ")]
    assert ninja and "compiled 1 file" in ninja[-1] and "Version.cpp" in ninja[-1], ninja
    assert "tagged gromacs:" not in said  # a microbenchmark recipe: no GROMACS build
    last = noop.proc.stdout.rstrip().splitlines()[-1]
    assert re.fullmatch(rf"\S+-llvm-{loop.noop[:8]}\S* vs \S+-llvm-{loop.change[:8]}\S* "
                        rf"\(parent {loop.change[:8]}\): no kernel changed: nothing to measure",
                        last), last  # fmt: skip
    assert "pair 1 of" not in said
    timing = re.search(r"done: ([\d.]+) s in all, the codegen summary after ([\d.]+) s: "
                       r"0\.0 s in 0 container runs", said)  # fmt: skip
    assert timing, said[-2000:]
    print(f"no-op bench (the next iteration): {timing.group(1)} s in all, codegen summary at "
          f"{timing.group(2)} s")  # fmt: skip
    assert [p["data"]["verdict"] for p in noop.received if p.get("event") == "verdict"] == [
        "nothing measured"
    ]
    mine = benches.select().where(benches.c.candidate.contains(f"llvm-{loop.noop[:8]}"))
    rows = Database.of(loop.settings).query(mine)
    assert [(r.verdict, r.runs, r.changed_kernels) for r in rows] == [("nothing measured", 0, 0)]


def test_against_stable_shows_what_the_two_compilers_differ_in(
    engine: Any, loop: Loop, rocm_stable: Any, change: Bench
) -> None:
    """`--against stable`: the field report's dev-vs-stable comparison, one flag away;
    nothing is built, and most kernels differ (the base commit's option)."""
    assert change.dev is not None
    loop.said.clear()
    req = BenchRequest(candidate=CompilerSpec("llvm", loop.change), baseline=CompilerSpec("stable"),
                       cpu_only=True, system="water:3k", steps=200, repeats=4)  # fmt: skip
    outcome = bench(engine, loop.settings, req, emit=loop.emit)
    said = "\n".join(loop.said)
    assert f"up to date: {change.dev.tag}" in said and "tagged gromacs:" not in said
    counted = re.search(r"codegen after [\d.]+ s: (\d+) of (\d+) kernels changed", said)
    assert counted and int(counted.group(1)) >= 100, said[-2000:]
    assert outcome.comparison is not None and outcome.comparison.base == "stable"
    assert " vs stable: " in words.headline_text(outcome.comparison)


def test_the_same_build_on_both_sides_is_an_a_a_of_it(
    engine: Any, loop: Loop, change: Bench, tmp_path: Path
) -> None:
    """`--against-llvm C` (and `--against <build>`) make the baseline a named build: here
    the candidate's own, so both groups run the one dev image (an A/A of it)."""
    assert change.dev is not None
    own = (CompilerSpec("llvm", loop.change[:12]), CompilerSpec("build", change.dev.build))
    for against in own:
        loop.said.clear()
        req = BenchRequest(
            candidate=CompilerSpec("llvm", loop.change), baseline=against, cpu_only=True,
            system="water:3k", steps=200, repeats=4,
        )  # fmt: skip
        cmp = bench(engine, loop.settings, req, emit=loop.emit).comparison
        assert any(line.endswith("exists: reusing it") for line in loop.said), loop.said
        assert f"up to date: {change.dev.tag}" in "\n".join(loop.said)
        assert all(run.startswith(f"{change.dev.build}__") for run in cmp.baseline), cmp.baseline
        assert all(run.startswith(f"{change.dev.build}__") for run in cmp.candidate)
        assert cmp.codegen is None  # one image: nothing to diff
    with pytest.raises(UserError, match="no GROMACS image gromacs:no-such-build"):
        missing = CompilerSpec("build", "no-such-build")
        bench(engine, loop.settings, BenchRequest(baseline=missing, repeats=4))
    lock = find_lockfile(engine, loop.settings.model_copy(update={"results_dir": tmp_path}),
                         "dev-current")  # fmt: skip
    assert lock.record.id == change.dev.id == engine.images.get("gromacs:dev-current").id


def test_a_dirty_working_tree_is_planned_against_its_head(
    engine: Any, loop: Loop, noop: Bench, change: Bench
) -> None:
    """`bench --llvm <checkout> --dry-run` with uncommitted edits: the base is `HEAD` (the
    no-op commit, whose toolchain exists but no GROMACS dev image: its bench was on a
    kernel), the tree's toolchain and both dev images are to be built; nothing is built or
    run, and the plan gives each step's estimate."""
    loop.llvm.edit(common_device_flags=[BASE_OPTION], device_flags=[OPTION],
                   device_units=[LINCS_UNIT, "settle_gpu_internal_hip"])  # fmt: skip
    try:
        proc = cli(loop, "bench", "--llvm", str(loop.llvm.path), "--dry-run", "--system",
                   "water:3k", "--steps", "500", "--repeats", "4")  # fmt: skip
    finally:
        loop.llvm.git("checkout", "--", ".")
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = proc.stdout
    head = f"HEAD {loop.noop[:8]}"
    assert re.search(rf"baseline \({head}\): reuse toolchain \S+-llvm-{loop.noop[:8]}:", plan)
    assert re.search(rf"candidate \(LLVM {loop.noop[:8]}-dirty\): build LLVM ", plan), plan
    for side in ("baseline", "candidate"):
        assert re.search(rf"{side}: GROMACS dev build from the compile cache: \d+ (s|min) "
                         r"\(median of \d+ stored builds\)", plan), plan  # fmt: skip
    assert re.search(r"4 interleaved pairs \(8 runs\) on water:3k:pme: \d+ (s|min) "
                     r"\(\d+ s a run, the median of \d+ stored runs\)", plan), plan  # fmt: skip
    assert "building" not in proc.stderr and "tagged" not in proc.stderr


def test_system_auto_picks_the_system_that_runs_the_changed_kernels(
    engine: Any, loop: Loop, change: Bench
) -> None:
    """The change commit with `--system auto`: only LINCS kernels changed against its
    parent, and the cheapest system that runs them is water_lincs (with -update gpu on a
    GPU; not added with --cpu-only, where they are host runs)."""
    loop.said.clear()
    req = BenchRequest(candidate=CompilerSpec("llvm", loop.change), cpu_only=True, system="auto",
                       steps=200, repeats=4)  # fmt: skip
    outcome = bench(engine, loop.settings, req, emit=loop.emit)
    said = "\n".join(loop.said)
    assert "--system auto: water_lincs:3k runs lincs (from its options (-update gpu))" in said
    assert "--cpu-only: not adding -update gpu (GPU options) to water_lincs:3k" in said
    assert outcome.comparison is not None and outcome.comparison.system == "water_lincs:3k"
    assert outcome.runs == 8 and outcome.verdict in ("faster", "slower", "no change")


def test_changed_kernels_are_those_an_independent_compile_changes(
    engine: Any, loop: Loop, rocm_stable: Any, change: Bench
) -> None:
    """The option changes kernels of the leap-frog, LINCS and SETTLE units when compiled
    into each (the independent compile, with the base option on both sides); the change
    commit gives it to the LINCS unit only, so exactly the LINCS unit's changed kernels
    are changed against its parent."""
    assert change.dev is not None and change.parent is not None
    result = gfx1201_diff(engine, loop.settings, change.parent.tag, change.dev.tag)
    independent = compile_units(engine, loop.settings, rocm_stable)
    assert {unit for unit, _ in independent} > {u for u in UNITS if LINCS_UNIT in u}
    lincs = {(unit, name) for unit, name in independent if LINCS_UNIT in unit}
    assert len(lincs) == 4 and changed(result) == lincs, (sorted(changed(result)), sorted(lincs))
    assert changed_families(result).keys() == {"lincs"}
    assert result.code_unchanged("pme_solve")  # PME solve has no loop to unroll
    assert not result.code_unchanged("other")  # LINCS has
    shown = cli(loop, "codegen", "diff", change.parent.build, change.dev.build, "--kernel",
                "lincsKernel", "--asm")  # fmt: skip
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert f"baseline: {change.parent.tag}" in shown.stdout and "other: " in shown.stdout
    assert re.search(r"^--- gromacs:dev-llvm-\S+ _Z", shown.stdout, re.M), shown.stdout[:2000]
    assert re.search(r"^[-+][a-z]\w* ", shown.stdout, re.M)  # instruction lines differ


def gfx1201_diff(engine: Any, settings: Any, a: str, b: str) -> CodegenDiff:
    """`codegen diff A B` of two one-target builds: their one target's diff."""
    _, _, targets = codegen_diff(engine, settings, a, b)
    assert list(targets.diffs) == ["gfx1201"], list(targets.diffs)
    return targets.target("gfx1201")


def _build_seconds(said: str) -> str:
    """The GROMACS builds' seconds, from the console's build-ended lines."""
    ended = re.findall(r"^built gromacs:\S+ as \S+ in ([\d.]+) s", said, re.M)
    return " and ".join(f"{float(s):.0f} s" for s in ended) or "unknown"


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
    base = ["-Xarch_device", "{base}"]
    for side, extra in (("plain", base), ("option", base + ["-Xarch_device", "{option}"])):
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
    script = CHECK.format(flags=flags, units=repr(set(UNITS)), base=BASE_OPTION, option=OPTION,
                          bin=tools)  # fmt: skip
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
    the stable image's compiler and flags plus the base option, with and without it, in
    the stable image, and
    comparing `llvm-objdump -d`'s text of each symbol (`tests/objdump_kernels.py`: no code
    shared with the codegen probe or its parser, which the other side of the check uses)."""
    out = compile_with_and_without(engine, settings, stable, "independent-check")
    found, units = objdump_changed(out / "plain", out / "option")
    assert units == set(UNITS), sorted(units)
    return found
