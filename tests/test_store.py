"""The run store: run ids, repeat groups, never overwriting, loading runs for compare."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError, UserError
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.store import layout, runstore
from orchestrator.store.records import ImageRef, RunResult
from orchestrator.store.runstore import RunStore

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
    assert layout.run_id("dev-x", "water:3k:pme", "t") == "dev-x__water-3k-pme__t"
    assert layout.repeat_tag("t", 1, 1) == "t"
    assert [layout.repeat_tag("t", i, 3) for i in (1, 2, 3)] == ["t-r1", "t-r2", "t-r3"]


def test_records_say_their_group_repeat_and_role(tmp_path: Path) -> None:
    """Schema 4: what a tag's `-r<N>` and `kernel-baseline-` said is written as fields."""
    path = _save(RunStore(tmp_path), "b__s__kernel-baseline-t-r2")
    written = json.loads((path / layout.RESULT_FILE).read_text())
    assert written["schema_version"] == 4 and written["group"] == "b__s__kernel-baseline-t"
    assert (written["repeat"], written["role"], written["bench"]) == (2, "baseline", "t")
    single = _result("b__s__t")
    assert (single.group, single.repeat, single.role, single.bench) == ("b__s__t", None, None, None)
    assert (_result("b__s__t-r3").group_tag, single.group_tag) == ("t", "t")


def test_a_record_from_before_the_fields_is_placed_by_its_tag(tmp_path: Path) -> None:
    """A schema 3 result.json (no group, repeat, role or bench) loads with them derived."""
    path = tmp_path / "b__s__kernel-baseline-t-r10"
    path.mkdir()
    old = _result(path.name).model_dump(mode="json", exclude={"group", "repeat", "role", "bench"})
    (path / layout.RESULT_FILE).write_text(json.dumps({**old, "schema_version": 3}))
    loaded = RunStore.load(path)
    assert loaded.schema_version == 3 and loaded.group == "b__s__kernel-baseline-t"
    assert (loaded.repeat, loaded.role, loaded.bench) == (10, "baseline", "t")


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
    assert runstore.log_tail(tmp_path) == "(no log)"
    (tmp_path / "topol.log").write_text("md\n" * 30)
    assert runstore.log_tail(tmp_path, 2) == "md\nmd"
    (tmp_path / "stderr.log").write_text("Fatal error\n")
    assert runstore.log_tail(tmp_path) == "Fatal error"
