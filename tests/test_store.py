"""The run store: run ids, repeat groups, never overwriting, loading runs for compare."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError, UserError
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.runs import store
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.runs.store import ImageRef, RunResult, RunStore

LOG = Path(__file__).parent / "data" / "mdlog" / "water-2022.5.log"


def _result(run: str, **changes: object) -> RunResult:
    build, system, tag = run.split("__")
    values: dict[str, object] = {
        "run_id": run, "build": build, "system": system, "tag": tag, "platform": "cpu",
        "timestamp": "2026-11-23T00:00:00+00:00", "finished": True, "ns_per_day": 100.0,
        "image": ImageRef(tag="gromacs:x", id="sha256:0"),
        "host": HostInfo(hostname="h", kernel="k"), "command": ["gmx", "mdrun"],
        **changes,
    }  # fmt: skip
    return RunResult.model_validate(values)


def _save(runs: RunStore, run: str, **changes: object) -> Path:
    path = runs.create(run)
    RunStore.save(path, _result(run, **changes))
    return path


def test_ids_and_repeat_tags() -> None:
    assert store.run_id("dev-x", "water:3k:pme", "t") == "dev-x__water-3k-pme__t"
    assert store.repeat_tag("t", 1, 1) == "t"
    assert [store.repeat_tag("t", i, 3) for i in (1, 2, 3)] == ["t-r1", "t-r2", "t-r3"]


def test_groups_hold_the_tag_and_its_repeats_only(tmp_path: Path) -> None:
    runs = RunStore(tmp_path)
    for tag in ("t-r1", "t-r2", "t-r10", "t", "t-other", "tt-r1"):
        _save(runs, f"b__s__{tag}")
    (tmp_path / "b__s__t-r3").mkdir()  # no result.json: a damaged run, listed as such
    names = [p.name for p in runs.group("b__s__t")]
    assert names == ["b__s__t", "b__s__t-r1", "b__s__t-r2", "b__s__t-r3", "b__s__t-r10"]  # r2 < r10
    missing = runs.status(tmp_path / "b__s__t-r3")
    assert missing.state == "unreadable" and "(a run record) is missing" in missing.why
    assert runs.resolve("b__s__t-other") == [tmp_path / "b__s__t-other"]
    assert runs.resolve(str(tmp_path / "b__s__t-r1")) == [tmp_path / "b__s__t-r1"]
    with pytest.raises(UsageError, match="No runs match 'b__s__none'"):
        runs.resolve("b__s__none")


def test_a_run_directory_is_never_reused(tmp_path: Path) -> None:
    runs = RunStore(tmp_path)
    path = _save(runs, "b__s__t")
    with pytest.raises(UserError, match="already exists; runs are never overwritten"):
        runs.create("b__s__t")
    assert RunStore.load(path).ns_per_day == 100.0


def test_finished_skips_failed_runs_and_brings_breakdowns(tmp_path: Path) -> None:
    runs = RunStore(tmp_path)
    good = _save(runs, "b__s__t-r1")
    RunStore.save_breakdown(good, cycle_breakdown(parse_mdlog(LOG)))
    _save(runs, "b__s__t-r2", finished=False, ns_per_day=None, failure="mdrun exited with code 1")
    found = runs.finished("b__s__t")
    assert [run.path for run in found] == [good]
    assert found[0].breakdown is not None and found[0].breakdown.categories["nbnxm"].total_ms > 0


def test_schema_1_runs_get_their_energies_from_md_log(tmp_path: Path) -> None:
    """Runs recorded before result.json carried energies are still energy-checked."""
    runs = RunStore(tmp_path)
    old = _save(runs, "b__s__old", schema_version=1)
    shutil.copy(LOG, old / "topol.log")
    new = _save(runs, "b__s__new", energies={"Potential": -1.0})
    shutil.copy(LOG, new / "topol.log")
    potential = parse_mdlog(LOG).energies["Potential"]  # type: ignore[index]
    assert runs.finished("b__s__old")[0].result.energies["Potential"] == potential  # type: ignore[index]
    assert runs.finished("b__s__new")[0].result.energies == {"Potential": -1.0}


def test_log_tail_prefers_stderr(tmp_path: Path) -> None:
    assert store.log_tail(tmp_path) == "(no log)"
    (tmp_path / "topol.log").write_text("md\n" * 30)
    assert store.log_tail(tmp_path, 2) == "md\nmd"
    (tmp_path / "stderr.log").write_text("Fatal error\n")
    assert store.log_tail(tmp_path) == "Fatal error"
