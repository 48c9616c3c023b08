"""Which kernel families a system runs (`runs.coverage`), and which system `--system auto`
picks: from the recipes' options, from real fingerprints' kernel names, from a kernel
trace in rocprofv3's layout and from a real md.log's cycle accounting (issue 28)."""

from __future__ import annotations

import csv
from pathlib import Path

from orchestrator.codegen.diff import CodegenDiff, diff
from orchestrator.core.events import Caution, Event
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.parsers.rocprof import parse_rocprof
from orchestrator.runs import coverage as cov
from orchestrator.runs.recipe import load_recipe
from orchestrator.store.runstore import RunStore
from orchestrator.workflows.placement import changed_families
from tests.test_codegen import DEMANGLED, GROMACS, _codegen
from tests.test_store import _save

DATA = Path(__file__).parent / "data"
#: A real rocprofv3 kernel trace (rocprofiler-sdk's documentation): its layout is kept.
TRACE = DATA / "samples" / "ROCm_rocprofiler-sdk__source_docs_data_kernel_trace.csv"
LINCS_LOG = DATA / "mdlog" / "water_lincs-2022.5.log"


def test_real_kernels_fall_into_their_families() -> None:
    """GROMACS 2026.3's leap-frog, LINCS, SETTLE and PME-solve kernels (clang 21), and
    `-fno-unroll-loops`, which changes the first three and not PME solve."""
    names = {cov.family(name, "other") for name in DEMANGLED.values()}
    assert {"update", "lincs", "settle"} <= names
    assert cov.family("void pmeSolveKernel<(GridOrdering)0, false, 0, 32>(P)", "pme_solve") == (
        "pme_solve"
    )
    changed = changed_families(diff(_codegen(GROMACS / "a"), _codegen(GROMACS / "nounroll")))
    assert set(changed) == {"update", "lincs", "settle"}
    assert all("lincsKernel" in name for name in changed["lincs"]), changed["lincs"]
    assert changed_families(diff(_codegen(GROMACS / "a"), _codegen(GROMACS / "b"))) == {}


def test_options_decide_what_a_gpu_runs() -> None:
    water, lincs = load_recipe("water"), load_recipe("water_lincs")
    mem, rf = load_recipe("benchMEM"), load_recipe("water::rf")
    pme = {"pme_spread", "pme_solve", "pme_gather", "fft"}
    assert cov.from_options(water) == {"nbnxm", "memory", *pme}  # -update auto: not sure
    assert cov.from_options(water, ["-update", "gpu"]) >= {"settle", "update"}
    assert "lincs" not in cov.from_options(water, ["-update", "gpu"])
    assert "lincs" in cov.from_options(lincs, ["-update", "gpu"])
    assert "lincs" not in cov.from_options(lincs, ["-update", "gpu", "-update", "cpu"])
    assert "lincs" not in cov.from_options(mem, ["-update", "gpu"])  # GPU LINCS refuses it
    assert not cov.from_options(rf) & pme
    assert not cov.from_options(water, ["-pme", "cpu"]) & pme
    assert "fft" not in cov.from_options(water, ["-pmefft", "cpu"])
    assert cov.from_options(water, ["-nb", "cpu"]) == set()
    # On the CPU everything runs on the CPU: LINCS wherever the topology has it.
    assert "lincs" in cov.from_options(lincs, gpu=False) and "lincs" in cov.from_options(
        mem, gpu=False
    )
    assert "lincs" not in cov.from_options(water, gpu=False)


def test_auto_picks_the_cheapest_system_that_runs_every_changed_family() -> None:
    systems = cov.candidates()
    lincs = cov.choose([], systems, {"lincs"})
    assert lincs is not None and lincs.system.name == "water_lincs:3k"
    assert lincs.args == ["-update", "gpu"]
    assert "6e+06 atom-steps" in lincs.why and "benchMEM" not in lincs.why  # GPU: not there
    settle = cov.choose([], systems, {"settle", "update"})
    assert settle is not None and settle.system.name == "water:6k:pme"
    assert "also covering: water_GMX50:0096:pme" in settle.why
    assert cov.choose([], systems, {"lincs", "settle"}) is None  # no recipe runs both on a GPU
    on_cpu = cov.choose([], systems, {"lincs", "settle"}, gpu=False)
    assert on_cpu is not None and on_cpu.system.name == "benchMEM" and on_cpu.args == []


def test_stored_runs_set_the_cost_when_every_candidate_has_them(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for system, wall in (("water:6k:pme", 2.0), ("water_lincs:3k", 9.0)):
        for i in range(3):
            _save(store, f"b__{system.replace(':', '-')}__t-r{i}", system=system, steps=1000,
                  mdrun_wall_seconds=wall + i, setup_seconds=1.0)  # fmt: skip
    stored = cov.finished_runs(store)
    both = [load_recipe("water"), load_recipe("water_lincs")]
    by_atoms = cov.choose([], both, {"update"})
    assert by_atoms is not None and by_atoms.system.name == "water_lincs:3k"  # 3k < 6k atoms
    by_time = cov.choose(stored, both, {"update"})
    assert by_time is not None and by_time.system.name == "water:6k:pme"
    assert "7 s per run (stored runs)" in by_time.why  # 3.0 ms/step × 2000 + 1 s
    assert cov.cost(stored, both[0], 1000, cpu_only=True)[1] == "atom-steps"  # none alike


def _trace(path: Path, names: list[str]) -> Path:
    """A kernel trace in the real sample's layout (its header and first row's fields),
    one dispatch per name, 1 µs apart."""
    with TRACE.open(newline="") as handle:
        header, row = list(csv.reader(handle))[:2]
    at = header.index("Kernel_Name"), header.index("Start_Timestamp"), header.index("End_Timestamp")
    with path.open("w", newline="") as handle:
        out = csv.writer(handle, quoting=csv.QUOTE_NONNUMERIC)
        out.writerow(header)
        for i, name in enumerate(names):
            fields = list(row)
            fields[at[0]], fields[at[1]], fields[at[2]] = name, 1000 * i, 1000 * i + 500
            out.writerow([int(f) if str(f).isdigit() else f for f in fields])
    return path


def test_a_stored_trace_adds_what_the_system_launched(tmp_path: Path) -> None:
    sample = parse_rocprof(TRACE)  # the real sample: no GROMACS kernel, no judged family
    assert sample.kernels and not {cov.family(k.name, k.category) for k in sample.kernels} & (
        cov.JUDGED - {"other"}
    )
    lincs_names = [n for n in DEMANGLED.values() if "lincsKernel" in n]
    leapfrog = [n for n in DEMANGLED.values() if "leapFrogKernel" in n]
    breakdown = parse_rocprof(_trace(tmp_path / "kernel_trace.csv", lincs_names + leapfrog))
    store = RunStore(tmp_path / "results")
    path = _save(store, "b__benchMEM__t", system="benchMEM", platform="rocm")
    RunStore.save_breakdown(path, breakdown)
    mem = load_recipe("benchMEM")
    found = cov.coverage(cov.finished_runs(store), mem)
    assert {"lincs", "update"} <= found.families and "b__benchMEM__t" in found.why
    assert "lincs" not in cov.coverage([], mem).families  # by its options alone
    assert cov.from_runs(cov.finished_runs(store), mem, gpu=False) == (set(), "")


def test_a_cpu_runs_cycle_accounting_says_constraints_ran(tmp_path: Path) -> None:
    """The real md.log of water_lincs on the CPU: a Constraints row, so LINCS (the
    recipe's algorithm) ran; the nonbonded and PME rows give their categories."""
    store = RunStore(tmp_path)
    path = _save(store, "b__water_lincs-3k__t", system="water_lincs:3k")
    RunStore.save_breakdown(path, cycle_breakdown(parse_mdlog(LINCS_LOG)))
    assert "Initializing LINear Constraint Solver" in LINCS_LOG.read_text()
    families, run = cov.from_runs(cov.finished_runs(store), load_recipe("water_lincs"), gpu=False)
    assert run == "b__water_lincs-3k__t"
    assert families == {"nbnxm", "pme_spread", "pme_solve", "pme_gather", "fft", "update", "lincs"}
    assert cov.from_runs(cov.finished_runs(store), load_recipe("water"), gpu=False) == (set(), "")


def _lincs_only() -> CodegenDiff:
    """Real fingerprints where only the LINCS kernels differ: `a`, and `a` with the
    `-fno-unroll-loops` build's LINCS kernels."""
    a, nounroll = _codegen(GROMACS / "a", "stable"), _codegen(GROMACS / "nounroll")
    kernels = {
        key: nounroll.kernels[key] if "lincsKernel" in DEMANGLED.get(k.name, "") else k
        for key, k in a.kernels.items()
    }
    return diff(a, a.model_copy(update={"kernels": kernels, "build": "dev"}))


def test_bench_places_a_lincs_change_where_lincs_runs(tmp_path: Path) -> None:
    """`bench`'s decision, before any run: a named water box gets a caution naming the
    systems that run the changed kernels; `--system auto` picks water_lincs and adds its
    `-update gpu`, except with --cpu-only; identical code is nothing to measure."""
    from orchestrator.core.settings import load_settings
    from orchestrator.workflows.bench import BenchRequest, nothing_changed, placed

    settings = load_settings(results_dir=tmp_path)
    codegen = _lincs_only()
    assert [len(v) for v in changed_families(codegen).values()] == [4]
    said: list[Event] = []
    water = placed(settings, BenchRequest(system="water:3k"), codegen, said.append)
    assert water.system == "water:3k:pme" and water.mdrun_args == []
    (caution,) = [e for e in said if isinstance(e, Caution)]
    assert "the changed kernels (lincs: lincsKernel<false, false>, " in caution.text
    assert "do not run in water:3k:pme (by its options)" in caution.text
    assert "systems that run them: water_lincs:3k;" in caution.text
    said.clear()
    auto = placed(settings, BenchRequest(system="auto"), codegen, said.append)
    assert auto.system == "water_lincs:3k" and auto.mdrun_args == ["-update", "gpu"]
    assert said[0].text.startswith("--system auto: water_lincs:3k runs lincs")
    host = placed(settings, BenchRequest(system="auto", cpu_only=True), codegen, said.append)
    assert host.system == "water_lincs:3k" and host.mdrun_args == []
    assert nothing_changed(diff(_codegen(GROMACS / "a"), _codegen(GROMACS / "b")))
    assert not nothing_changed(codegen)
