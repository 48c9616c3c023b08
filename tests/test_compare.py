"""Comparisons of real md.logs: validity guards, suspect energies, refusals, the report."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.results.compare import compare_runs
from orchestrator.results.report import render, webhook_text
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.runs.store import ImageRef, Run, RunResult, RunStore


def load_runs(results: Path, spec: str) -> list[Run]:
    return RunStore(results).finished(spec)


REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "tests" / "data" / "mdlog"
COMMAND = ["gmx", "mdrun", "-v", "-deffnm", "topol", "-ntmpi", "1", "-ntomp", "2", "-resethway"]


def make_run(
    results: Path,
    name: str,
    log: str,
    *,
    system: str = "water:3k:pme",
    steps: int = 2000,
    command: list[str] = COMMAND,
    ns_scale: float = 1.0,
) -> Path:
    """A run directory around a real md.log, as the runner leaves it."""
    run_dir = results / name
    run_dir.mkdir(parents=True)
    shutil.copy(LOGS / log, run_dir / "topol.log")
    md = parse_mdlog(run_dir / "topol.log")
    tag = name.split("__")[2]
    result = RunResult(
        run_id=name, build=name.split("__")[0], system=system, tag=tag, platform="cpu",
        timestamp="2026-11-22T00:00:00+00:00", finished=True, return_code=0,
        ns_per_day=(md.ns_per_day or 0) * ns_scale, gmx_version=md.gmx_version,
        image=ImageRef(tag="gromacs:x", id="sha256:0"), host=HostInfo(hostname="h", kernel="k"),
        command=command, steps=steps, atoms=md.atoms, pme_grid=md.pme_grid,
        coulomb_cutoff=md.coulomb_cutoff, energies=md.energies,
    )  # fmt: skip
    RunStore.save(run_dir, result)
    RunStore.save_breakdown(run_dir, cycle_breakdown(md))
    return run_dir


def test_different_pme_grids_not_comparable(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5-2pp1pme.log", steps=1500)
    b = make_run(tmp_path, "dev__w__t", "water-2022.5-tunepme-derived.log", steps=1500)
    cmp = compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))
    assert not cmp.comparable
    assert "PME tuning ended on different grids" in (cmp.comparable_note or "")
    assert "-notunepme" in (cmp.comparable_note or "")
    assert cmp.ns_per_day.n_candidate == 1
    assert "not comparable per kernel" in render(cmp)


def test_same_grid_is_comparable_and_single_run_says_noise_unknown(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log", ns_scale=1.1)
    cmp = compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))
    assert cmp.comparable and not cmp.suspect
    assert cmp.ns_per_day.delta_pct == pytest.approx(10.0)
    assert cmp.ns_per_day.marker == "•"  # one run per side: never a verdict
    assert "noise unknown" in cmp.ns_per_day.note
    assert set(cmp.categories) >= {"nbnxm", "pme_spread", "fft"}
    assert cmp.headline.startswith("dev on water:3k:pme: 138.8 ns/day (baseline 126.2, Δ +12.622")


def test_different_potential_energy_is_suspect(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5-alt-energy.log", ns_scale=10)
    cmp = compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))
    assert cmp.suspect
    assert "potential energy" in (cmp.suspect_note or "")
    assert cmp.headline.startswith("⚠ SUSPECT")
    assert cmp.ns_per_day.marker != "🚀"
    assert "suspect" in webhook_text(cmp)


def test_repeated_groups_give_a_verdict(tmp_path: Path) -> None:
    for i in range(1, 6):
        make_run(
            tmp_path, f"stable__w__kernel-baseline-r{i}", "water-2022.5.log", ns_scale=1 + i / 1000
        )
        make_run(tmp_path, f"dev__w__fast-r{i}", "water-2022.5.log", ns_scale=1.2 + i / 1000)
    cmp = compare_runs(
        load_runs(tmp_path, "stable__w__kernel-baseline"), load_runs(tmp_path, "dev__w__fast")
    )
    assert cmp.ns_per_day.n_baseline == cmp.ns_per_day.n_candidate == 5
    assert cmp.ns_per_day.significant and cmp.ns_per_day.marker == "🚀"
    assert "5 vs 5 runs" in cmp.stats_line


@pytest.mark.parametrize(
    ("change", "message"),
    [({"steps": 4000}, "differ in steps"), ({"system": "benchMEM"}, "differ in system"),
     ({"command": [*COMMAND, "-notunepme"]}, "different mdrun options")],
)  # fmt: skip
def test_refuses_pairs_that_measure_different_things(
    tmp_path: Path, change: dict, message: str
) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log", **change)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=message):
        compare_runs(load_runs(tmp_path, str(a)), load_runs(tmp_path, str(b)))


def test_failed_runs_are_never_numbers(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    result = RunResult.model_validate_json((a / "result.json").read_text())
    RunStore.save(a, result.model_copy(update={"finished": False, "ns_per_day": None}))
    with pytest.raises(UsageError, match="no finished runs"):
        load_runs(tmp_path, str(a))


def test_compare_cli_markdown(tmp_path: Path) -> None:
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log", ns_scale=0.9)
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "compare", str(a), str(b), "--format", "markdown"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "| • ns/day" in proc.stdout and "|---" in proc.stdout
    assert "-10.00%" in proc.stdout


def test_benjamini_hochberg_keeps_broad_changes_and_drops_lone_ones() -> None:
    from orchestrator.results.compare import adjust_for_many_categories
    from orchestrator.results.stats import compare_samples

    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    moved = compare_samples(base, [90.0, 91.0, 89.0, 90.5, 89.5], higher_is_better=False)
    same = compare_samples(base, [100.2, 99.8, 101.1, 99.4, 100.6], higher_is_better=False)
    assert moved.significant and moved.marker == "🚀"
    lone = adjust_for_many_categories({"nbnxm": moved, **{f"c{i}": same for i in range(6)}}, 0.05)
    assert not lone["nbnxm"].significant and lone["nbnxm"].marker == "•"
    assert "Benjamini–Hochberg" in lone["nbnxm"].note
    broad = adjust_for_many_categories({f"c{i}": moved for i in range(7)}, 0.05)
    assert all(v.significant and v.marker == "🚀" for v in broad.values())
