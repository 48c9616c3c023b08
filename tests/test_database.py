"""The results database, on SQLite and on a real PostgreSQL server: schema and migrations,
idempotent import, concurrent writers, history with change points, clear failures."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, Table, inspect, text

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.settings import load_settings
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog
from orchestrator.report import words
from orchestrator.report.text import history_text
from orchestrator.runs.liveness import Owner
from orchestrator.store import database
from orchestrator.store.database import Database, import_runs, record_quietly
from orchestrator.store.records import RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict import history
from tests import postgres
from tests.test_store import _result, _save

LOG = Path(__file__).parent / "data" / "mdlog" / "water-2022.5.log"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    if postgres.server_bin() is None:
        message = "Debian's postgresql package is not installed (.ci/setup-tests installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + ": the database tests must run against PostgreSQL in CI")
        pytest.skip(message)
    with postgres.server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.sqlite'}"
    return postgres.new_database(request.getfixturevalue("pg_server"))


def _store(tmp_path: Path) -> RunStore:
    """Finished runs with a breakdown, a failed run, a damaged one and one in progress."""
    runs = RunStore(tmp_path / "results")
    breakdown = cycle_breakdown(parse_mdlog(LOG))
    for i in range(3):
        path = _save(runs, f"dev__water__t-r{i + 1}", llvm_commit="abcdef12", ns_per_day=90.0 + i)
        RunStore.save_breakdown(path, breakdown)
    _save(runs, "dev__water__broken", finished=False, ns_per_day=None, failure="mdrun exited 1")
    (runs.root / "dev__water__damaged").mkdir()
    (runs.root / "dev__water__damaged" / "result.json").write_text("{")
    _save(runs, "dev__water__running", finished=False, ns_per_day=None, owner=Owner.current())
    return runs


def test_every_result_field_is_a_column_or_deliberately_kept_in_the_record() -> None:
    columns = {c.name for c in database.runs.c}
    unplaced = set(RunResult.model_fields) - columns - database.RECORD_ONLY - database.ELSEWHERE
    assert not unplaced, f"decide where these RunResult fields go in the index: {unplaced}"


def test_migrations_build_exactly_the_tables_the_code_uses(db_url: str) -> None:
    db = Database(db_url)
    db.migrate()
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), database.metadata)
    assert diff == [] and db.revision() == "0004"


def test_import_is_idempotent_and_records_failures_as_failures(db_url: str, tmp_path: Path) -> None:
    runs, db = _store(tmp_path), Database(db_url)
    first = import_runs(db, runs)
    again = import_runs(db, runs)
    assert first.written == again.written == 4 and db.count() == 4
    assert {line.split(":")[0] for line in first.left_out} == {
        "dev__water__damaged", "dev__water__running",
    }  # fmt: skip
    rows = {r.run_id: r for r in db.query(database.runs.select())}
    broken = rows["dev__water__broken"]
    assert broken.state == "failed" and broken.ns_per_day is None and not broken.finished
    assert broken.failure == "mdrun exited 1"
    assert rows["dev__water__t-r1"].group_name == "dev__water__t"
    assert RunResult.model_validate_json(rows["dev__water__t-r2"].record).ns_per_day == 91.0
    cats = db.query(
        database.categories.select().where(database.categories.c.run_id == "dev__water__t-r1")
    )
    assert {c.category for c in cats} >= {"nbnxm", "pme_spread"}


def test_an_old_schema_is_upgraded_and_a_newer_one_refused(db_url: str, tmp_path: Path) -> None:
    db = Database(db_url)
    db.migrate("0001")
    assert db.revision() == "0001" and "bisects" not in inspect(db.engine).get_table_names()
    Database(db_url).record([(tmp_path, _result("b__s__t"), None, "finished")])
    assert db.revision() == "0004" and "bisects" in inspect(db.engine).get_table_names()
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    with pytest.raises(UserError, match="schema revision 0099, which this gmxbench does not know"):
        Database(db_url).record([(tmp_path, _result("b__s__u"), None, "finished")])
    assert (
        Database(db_url).engine.connect().execute(text("SELECT count(*) FROM runs")).scalar() == 1
    )


def test_runs_indexed_before_get_their_repeat_role_and_bench(db_url: str, tmp_path: Path) -> None:
    """Revision 0004 fills its columns in rows indexed before, from their tags."""
    db = Database(db_url)
    db.migrate("0003")
    old = Table("runs", MetaData(), autoload_with=db.engine)
    with db.engine.begin() as conn:
        for run in ("b__s__kernel-baseline-t-r2", "b__s__t-r2", "b__s__plain"):
            row, _ = database._rows(tmp_path, _result(run), None, "finished")
            conn.execute(old.insert().values({k: v for k, v in row.items() if k in old.c}))
    rows = {r.run_id: (r.repeat, r.role, r.bench) for r in db.query(database.runs.select())}
    assert rows == {
        "b__s__kernel-baseline-t-r2": (2, "baseline", "t"), "b__s__t-r2": (2, None, None),
        "b__s__plain": (None, None, None),
    }  # fmt: skip


def test_a_bench_that_measured_nothing_is_recorded_like_a_verdict(
    db_url: str, tmp_path: Path
) -> None:
    """Issue 28: no kernel changed, so no run; the outcome is a row all the same, beside
    a measured one, and a database that fails is a caution, not a lost verdict."""
    settings = load_settings(results_dir=tmp_path, database_url=db_url)
    said: list[str] = []
    nothing = database.BenchRecord(
        baseline="stable-rocm", candidate="dev-llvm-1234abcd-x", llvm_commit="1234abcd",
        system="water:6k:pme", verdict="nothing measured",
        headline="no kernel changed: nothing to measure", changed_kernels=0,
        elapsed_seconds=271.5,
    )  # fmt: skip
    measured = nothing.model_copy(update={
        "bench_id": "b2", "verdict": "slower", "headline": "LLVM x on water: 9.0 ns/day",
        "changed_kernels": 4, "runs": 4, "candidate_group": "dev__water__t",
    })  # fmt: skip
    for record in (nothing, measured):
        database.record_bench(settings, record, lambda e: said.append(e.text))
    rows = {r.bench_id: r for r in Database(db_url).query(database.benches.select())}
    assert said == [] and len(rows) == 2
    row = rows[nothing.bench_id]
    assert row.verdict == "nothing measured" and row.runs == 0 and row.changed_kernels == 0
    assert row.candidate_group is None and row.elapsed_seconds == 271.5
    assert rows["b2"].verdict == "slower" and rows["b2"].candidate_group == "dev__water__t"
    broken = load_settings(results_dir=tmp_path, database_url="postgresql://x:pw@127.0.0.1:1/gmx")
    database.record_bench(broken, nothing, lambda e: said.append(e.text))
    assert len(said) == 1 and f"bench {nothing.bench_id} is not in the results database" in said[0]


def _writer(url: str, prefix: str, n: int) -> None:
    db = Database(url)
    for i in range(n):  # one transaction per run, as the runner records them
        db.record([(Path("/x"), _result(f"{prefix}__s__t-r{i}"), None, "finished")])


def test_two_writers_at_once_lose_nothing(db_url: str) -> None:
    Database(db_url).migrate()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(db_url, f"w{k}", 150)) for k in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert Database(db_url).count() == 300


def _git_repo(path: Path, commits: int) -> list[str]:
    """A repository whose commit dates run opposite to the order runs are made in."""
    path.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    for role in ("AUTHOR", "COMMITTER"):
        env |= {f"GIT_{role}_NAME": "t", f"GIT_{role}_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    hashes = []
    for i in range(commits):
        date = f"2026-01-{i + 1:02d}T00:00:00+00:00"
        run_env = {**env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        subprocess.run(["git", "-C", str(path), "commit", "-q", "--allow-empty", "-m", f"c{i}"],
                       check=True, env=run_env)  # fmt: skip
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True)  # fmt: skip
        hashes.append(out.stdout.strip())
    return hashes


def test_history_orders_by_commit_date_and_flags_the_planted_change(
    db_url: str, tmp_path: Path
) -> None:
    commits = _git_repo(tmp_path / "llvm", 6)
    db, items = Database(db_url), []
    for k, commit in enumerate(reversed(commits)):  # made newest commit first
        position = len(commits) - 1 - k
        for r in range(5):
            value = (100.0 if position < 4 else 85.0) + 0.3 * ((r * 7 + position) % 5)
            result = _result(
                f"llvm-{commit[:8]}__water__t-r{r}", llvm_commit=commit[:8], ns_per_day=value,
                timestamp=f"2026-02-01T00:{k:02d}:{r:02d}+00:00",
            )  # fmt: skip
            items.append((tmp_path, result, None, "finished"))
    db.record(items)
    series = history.load_series(db, "water", llvm_source=str(tmp_path / "llvm"))
    assert [p.key for p in series.points] == [c[:8] for c in commits]
    assert words.ordered_by(series).startswith("commit date in")
    assert [p.key for p in series.change_points] == [commits[4][:8]]
    assert series.change_points[0].change is not None
    assert series.change_points[0].change.delta_pct == pytest.approx(-15, abs=1)
    text_out = history_text(series)
    assert f"change point at {commits[4][:8]}: slower by" in text_out
    last = history.load_series(db, "water", last=3, llvm_source=str(tmp_path / "llvm"))
    assert [p.key for p in last.points] == [c[:8] for c in commits[3:]]
    by_time = history.load_series(db, "water")  # no checkout: the order runs were made in
    assert words.ordered_by(by_time) == "first run" and by_time.points[0].key == commits[-1][:8]


def test_history_of_a_category_leaves_out_runs_that_spent_no_time_in_it(
    db_url: str, tmp_path: Path
) -> None:
    """A build that does not use a category (0 ms: a GPU run has no CPU FFT) has no value
    for it: the series skips those runs instead of failing on the log of a zero ratio."""
    runs, db = _store(tmp_path), Database(db_url)
    unused = cycle_breakdown(parse_mdlog(LOG))
    unused.categories["pme_spread"] = unused.categories["pme_spread"].model_copy(
        update={"total_ms": 0.0}
    )
    for i in range(2):
        path = _save(runs, f"gpu__water__t-r{i + 1}", llvm_commit="fedcba98", ns_per_day=95.0)
        RunStore.save_breakdown(path, unused)
    import_runs(db, runs)
    series = history.load_series(db, "water", "pme_spread")
    assert [(p.key, p.runs) for p in series.points] == [("abcdef12", 3)]
    assert {p.key for p in history.load_series(db, "water").points} == {"abcdef12", "fedcba98"}


def test_history_by_category_metric_and_kernel_with_clear_refusals(
    db_url: str, tmp_path: Path
) -> None:
    runs, db = _store(tmp_path), Database(db_url)
    import_runs(db, runs)
    series = history.load_series(db, "water", "pme_spread")
    assert series.unit == "ms" and not series.higher_is_better and series.points[0].runs == 3
    assert history.load_series(db, "water").metric == "ns/day"
    with pytest.raises(UsageError, match=r"'bogus' is not measured by the runs of 'water'.*nbnxm"):
        history.load_series(db, "water", "bogus")
    with pytest.raises(UsageError, match=r"No finished runs of system 'nope'.*water"):
        history.load_series(db, "nope")


def test_an_unreachable_server_is_a_caution_for_a_run_and_a_paragraph_for_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://someone:hunter2@127.0.0.1:1/gmx"
    monkeypatch.setenv("ORCH_DATABASE_URL", url)
    settings = load_settings(results_dir=tmp_path)
    assert settings.public_dump()["database_url"] == "<set>"
    seen: list[Any] = []
    record_quietly(settings, tmp_path, _result("b__s__t"), seen.append)
    assert len(seen) == 1 and "is not in the results database" in seen[0].text
    assert "hunter2" not in seen[0].text and "***" in seen[0].text
    with pytest.raises(UserError, match="cannot be used") as err:
        Database.of(settings).count()
    assert "hunter2" not in err.value.message
    with pytest.raises(UsageError, match=r"SQLite .* or PostgreSQL"):
        Database("mysql://x@y/z")


def test_bisect_refuses_what_it_cannot_bisect_before_building_anything(tmp_path: Path) -> None:
    from orchestrator.workflows.bisect import BisectRequest, bisect

    commits = _git_repo(tmp_path / "llvm", 3)
    url = load_settings(results_dir=tmp_path, llvm_source="https://github.com/llvm/llvm-project")
    with pytest.raises(UsageError, match="bisect needs a local llvm-project checkout"):
        bisect(None, url, BisectRequest(good=commits[0], bad=commits[2]))  # type: ignore[arg-type]
    here = url.model_copy(update={"llvm_source": str(tmp_path / "llvm")})
    with pytest.raises(UsageError, match="is not an ancestor of --bad"):
        bisect(None, here, BisectRequest(good=commits[2], bad=commits[0]))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="'nope' is not a commit in"):
        bisect(None, here, BisectRequest(good="nope", bad=commits[0]))  # type: ignore[arg-type]
    assert not (tmp_path / "runs.sqlite").exists()  # nothing recorded for a refused bisect
