"""The results database: an index over the run directories, for history, reports and bisect.

The run directory stays the source of truth (`store.runstore`); this index can be dropped and
rebuilt from it (`db import`, idempotent). SQLite in the results folder is the default; a
team sets `ORCH_DATABASE_URL=postgresql://…` and shares one server (the `postgres` extra).
The schema is versioned by Alembic (`migrations/`): an older database is upgraded when
opened, a newer one is refused rather than written with columns it does not know. Every
field of a `RunResult` is a column or deliberately kept only in the row's `record` (the
whole result.json), so nothing is dropped silently. Two writers at once lose nothing:
SQLite takes its write lock at the start of each transaction and waits for the other.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    func,
    select,
)  # fmt: skip
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Caution, Emit, ignore
from orchestrator.core.settings import Settings
from orchestrator.core.urls import hide_query_secrets
from orchestrator.images.provenance import label
from orchestrator.parsers.breakdown import Breakdown
from orchestrator.store import layout
from orchestrator.store.records import MICROBENCH_KIND, RunResult, RunState
from orchestrator.store.runstore import RunStore

MIGRATIONS = Path(__file__).with_name("migrations")
#: Serialises schema upgrades of two processes on one PostgreSQL server.
_PG_LOCK = 0x676D7862

metadata = MetaData()
runs = Table(
    "runs", metadata,
    Column("run_id", String(255), primary_key=True),
    Column("group_name", String(255), nullable=False, index=True),
    Column("build", String(255), nullable=False, index=True),
    Column("system", String(255), nullable=False, index=True),
    Column("tag", String(255), nullable=False),
    Column("repeat", Integer),
    Column("role", String(16)),
    Column("bench", String(255)),
    Column("kind", String(16), nullable=False),
    Column("platform", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("image_tag", String(255), nullable=False),
    Column("image_id", String(100), nullable=False),
    Column("compiler", String(255)),
    Column("compiler_version", Text),
    Column("llvm_commit", String(64), index=True),
    Column("gromacs_commit", String(64)),
    Column("gmx_version", String(64)),
    Column("host", String(255), nullable=False),
    Column("started", String(40), nullable=False, index=True),
    Column("finished", Boolean, nullable=False),
    Column("failure", Text),
    Column("ns_per_day", Float),
    Column("headline", String(64)),
    Column("headline_value", Float),
    Column("duration_seconds", Float),
    Column("cpu_only", Boolean, nullable=False),
    Column("profile_mode", String(16), nullable=False),
    Column("path", Text, nullable=False),
    Column("record", Text, nullable=False),
    Column("recorded_at", String(40), nullable=False),
)  # fmt: skip


def _run_id() -> Column[str]:
    return Column(
        "run_id", String(255), ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True
    )


categories = Table(
    "categories", metadata,
    _run_id(),
    Column("category", String(32), primary_key=True),
    Column("total_ms", Float, nullable=False),
    Column("percent", Float, nullable=False),
    Column("calls", Integer, nullable=False),
)  # fmt: skip
kernels = Table(
    "kernels", metadata,
    _run_id(),
    Column("name", Text, primary_key=True),
    Column("category", String(32), nullable=False),
    Column("calls", Integer, nullable=False),
    Column("total_ms", Float, nullable=False),
    Column("median_us", Float),
)  # fmt: skip
metrics = Table(
    "metrics", metadata,
    _run_id(),
    Column("name", String(64), primary_key=True),
    Column("value", Float, nullable=False),
    Column("unit", String(32), nullable=False),
    Column("better", String(8), nullable=False),
)  # fmt: skip
bisects = Table(
    "bisects", metadata,
    Column("bisect_id", String(64), primary_key=True),
    Column("good", String(64), nullable=False),
    Column("bad", String(64), nullable=False),
    Column("system", String(255), nullable=False),
    Column("metric", String(64), nullable=False),
    Column("started", String(40), nullable=False),
    Column("first_bad", String(64)),
    Column("outcome", Text, nullable=False),
)  # fmt: skip
bisect_steps = Table(
    "bisect_steps", metadata,
    Column("bisect_id", String(64), ForeignKey("bisects.bisect_id", ondelete="CASCADE"),
           primary_key=True),
    Column("step", Integer, primary_key=True),
    Column("commit", String(64), nullable=False),
    Column("verdict", String(8), nullable=False),
    Column("baseline_group", String(255)),
    Column("candidate_group", String(255)),
    Column("delta_pct", Float),
    Column("p_value", Float),
    Column("pairs", Integer, nullable=False),
    Column("note", Text, nullable=False),
    Column("at", String(40), nullable=False),
)  # fmt: skip
benches = Table(
    "benches", metadata,
    Column("bench_id", String(64), primary_key=True),
    Column("started", String(40), nullable=False, index=True),
    Column("baseline", String(255), nullable=False),
    Column("candidate", String(255), nullable=False),
    Column("llvm_commit", String(64), index=True),
    Column("system", String(255), nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("headline", Text, nullable=False),
    Column("changed_kernels", Integer),
    Column("runs", Integer, nullable=False),
    Column("elapsed_seconds", Float, nullable=False),
    Column("baseline_group", String(255)),
    Column("candidate_group", String(255)),
)  # fmt: skip

#: `RunResult` fields kept only in `record`: a new field must be added here or as a
#: column (a test checks), so the index never drops one without a decision.
RECORD_ONLY = frozenset({
    "schema_version", "return_code", "hour_per_ns", "mdrun_wall_seconds", "setup_seconds",
    "command", "mdrun_args", "steps", "atoms", "ntomp", "device", "pme_grid", "coulomb_cutoff",
    "energies", "owner", "noise", "facts", "batch_job", "profile", "native",
})  # fmt: skip
#: `RunResult` fields whose values live in other columns or tables.
ELSEWHERE = frozenset({"run_id", "timestamp", "image", "metrics", "group"})


def url_of(settings: Settings) -> str:
    """`ORCH_DATABASE_URL`, else SQLite in the results folder."""
    if settings.database_url is not None:
        return settings.database_url.get_secret_value()
    return f"sqlite:///{layout.sqlite_path(settings.results_dir).resolve()}"


def shown(url: str) -> str:
    """The URL as it may be printed: the password hidden, in its field and in the query
    string (`?password=`, which libpq reads too)."""
    try:
        return hide_query_secrets(make_url(url).render_as_string(hide_password=True))
    except ArgumentError:
        return "<not a database URL>"


class Database:
    """One database, upgraded to this tool's schema on first use."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = _connect(url)
        self._ready = False

    @classmethod
    def of(cls, settings: Settings) -> Database:
        return cls(url_of(settings))

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A write transaction on an up-to-date schema; its errors as one paragraph."""
        self.migrate()
        with self._errors(), self.engine.begin() as conn:
            yield conn

    def migrate(self, revision: str = "head") -> None:
        """Upgrade to `revision` (serialised between processes); refuse a newer schema."""
        if self._ready and revision == "head":
            return
        # Imported here: alembic is a third of every command's start-up (a batch job's too)
        # and only a write or a schema check needs it.
        from alembic import command
        from alembic.config import Config
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        known = {rev.revision for rev in ScriptDirectory.from_config(config).walk_revisions()}
        with self._errors(), self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK})")
            current = MigrationContext.configure(conn).get_current_revision()
            if current is not None and current not in known:
                raise UserError(
                    f"The results database {shown(self.url)} has schema revision {current}, "
                    f"which this gmxbench does not know (it knows {', '.join(sorted(known))}): "
                    "a newer gmxbench wrote it. Upgrade gmxbench, or set ORCH_DATABASE_URL to "
                    "another database; nothing was written."
                )
            config.attributes["connection"] = conn
            command.upgrade(config, revision)
        self._ready = revision == "head"

    def revision(self) -> str | None:
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    def record(self, items: Iterable[tuple[Path, RunResult, Breakdown | None, RunState]]) -> int:
        """Insert or replace runs with their categories, kernels and metrics; how many."""
        rows = [_rows(path, result, breakdown, state) for path, result, breakdown, state in items]
        if not rows:
            return 0
        ids = [run["run_id"] for run, _ in rows]
        with self.begin() as conn:
            for child in (categories, kernels, metrics):
                for chunk in _chunks(ids, 500):
                    conn.execute(delete(child).where(child.c.run_id.in_(chunk)))
            insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
            for chunk in _chunks(rows, 500):
                stmt = insert(runs)
                columns = {c.name: stmt.excluded[c.name] for c in runs.c if c.name != "run_id"}
                conn.execute(
                    stmt.on_conflict_do_update(index_elements=["run_id"], set_=columns),
                    [run for run, _ in chunk],
                )
                for child in (categories, kernels, metrics):
                    children = [r for _, of in chunk for r in of[child.name]]
                    if children:
                        conn.execute(child.insert(), children)
        return len(rows)

    def count(self) -> int:
        self.migrate()
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(runs)).scalar_one())

    def query(self, statement: Any) -> list[Any]:
        """Rows of a read-only statement on an up-to-date schema (for `results.*`)."""
        self.migrate()
        with self._errors(), self.engine.connect() as conn:
            return list(conn.execute(statement))

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except OperationalError as exc:
            why = str(exc.orig).strip() or type(exc.orig).__name__
            fix = (
                "Free space on the disk that holds it (SQLite: the results folder's)"
                if _NO_ROOM.search(why)
                else "Check that the server answers and the URL is right (ORCH_DATABASE_URL), "
                "or unset it for the SQLite file in the results folder"
            )
            raise UserError(
                f"The results database {shown(self.url)} cannot be used: {why}. {fix}; the "
                "run directories are unaffected and `gmxbench db import` fills the database "
                "from them later."
            ) from None


#: SQLite's SQLITE_FULL and PostgreSQL's ENOSPC, as their messages say them.
_NO_ROOM = re.compile(r"database or disk is full|no space left on device", re.IGNORECASE)


def _connect(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UsageError(
            "ORCH_DATABASE_URL is not a database URL. Use postgresql://user@host/dbname "
            "(or postgresql+psycopg://…), or sqlite:////absolute/path.sqlite."
        ) from None
    try:
        if parsed.get_backend_name() == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
            return create_engine(parsed, pool_pre_ping=True)
        if parsed.get_backend_name() != "sqlite":
            raise UsageError(
                f"ORCH_DATABASE_URL names a {parsed.get_backend_name()} database; gmxbench "
                "keeps its results in SQLite (the default) or PostgreSQL (postgresql://…)."
            )
    except (NoSuchModuleError, ModuleNotFoundError):
        raise UsageError(
            "ORCH_DATABASE_URL names a PostgreSQL server, but its driver is not installed: "
            "pip install 'gmxbench[postgres]' (psycopg)."
        ) from None
    if parsed.database:
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, connect_args={"timeout": 120})
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    return engine


def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    """Transactions are ours (BEGIN IMMEDIATE takes the write lock, or waits for it)."""
    dbapi_conn.isolation_level = None
    cursor = dbapi_conn.cursor()
    for pragma in ("journal_mode=WAL", "foreign_keys=ON", "busy_timeout=120000"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _rows(
    path: Path, result: RunResult, breakdown: Breakdown | None, state: RunState
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The run's row, and its rows of each child table by table name."""
    labels = result.image.labels
    headline = result.headline if result.kind == MICROBENCH_KIND else None
    run = {
        "run_id": result.run_id, "group_name": result.group, "build": result.build,
        "system": result.system, "tag": result.tag, "repeat": result.repeat,
        "role": result.role, "bench": result.bench, "kind": result.kind,
        "platform": result.platform, "state": state, "image_tag": result.image.tag,
        "image_id": result.image.id, "compiler": result.compiler,
        "compiler_version": result.compiler_version, "llvm_commit": result.llvm_commit,
        "gromacs_commit": labels.get(label("gromacs_commit")),
        "gmx_version": result.gmx_version, "host": result.host.hostname,
        "started": result.timestamp, "finished": result.finished, "failure": result.failure,
        "ns_per_day": result.ns_per_day if state == "finished" else None,
        "headline": headline,
        "headline_value": result.headline_value() if state == "finished" else None,
        "duration_seconds": result.duration_seconds, "cpu_only": result.cpu_only,
        "profile_mode": result.profile_mode, "path": str(path),
        "record": result.model_dump_json(), "recorded_at": datetime.now(UTC).isoformat(),
    }  # fmt: skip
    finished = state == "finished"
    cats = breakdown.categories.items() if breakdown and finished else ()
    rows = breakdown.kernels if breakdown and finished else []
    return run, {
        "categories": [
            {"run_id": result.run_id, "category": name, "total_ms": c.total_ms,
             "percent": c.percent, "calls": c.calls}
            for name, c in cats
        ],
        "kernels": [
            {"run_id": result.run_id, "name": k.name, "category": k.category, "calls": k.calls,
             "total_ms": k.total_ms, "median_us": k.median_us}
            for k in {k.name: k for k in rows}.values()
        ],
        "metrics": [
            {"run_id": result.run_id, "name": name, "value": m.value, "unit": m.unit,
             "better": m.better}
            for name, m in ((result.metrics or {}).items() if finished else ())
        ],
    }  # fmt: skip


@dataclass
class Imported:
    """What `db import` did: runs written, and what it left out with why."""

    written: int
    left_out: list[str]


def import_runs(db: Database, store: RunStore, batch: int = 1000) -> Imported:
    """Index every run directory that has ended (finished, failed or abandoned); idempotent.

    Runs still in progress are left for the runner to record when they end; unreadable
    records are named with why.
    """
    written, left_out = 0, []
    pending: list[tuple[Path, RunResult, Breakdown | None, RunState]] = []
    for path in store.runs():
        status = store.status(path)
        if status.result is None or status.state in ("running", "unreadable"):
            left_out.append(f"{path.name}: {status.state}{': ' + status.why if status.why else ''}")
            continue
        pending.append((path, status.result, _breakdown(store, path, status.state), status.state))
        if len(pending) >= batch:
            written += db.record(pending)
            pending = []
    return Imported(written + db.record(pending), left_out)


def _breakdown(store: RunStore, path: Path, state: RunState) -> Breakdown | None:
    if state != "finished":
        return None
    try:
        return store.breakdown(path)
    except UserError:  # a damaged breakdown: the run is indexed, its categories are not
        return None


def record_quietly(
    settings: Settings, run_dir: Path, result: RunResult, emit: Emit = ignore
) -> None:
    """Index a run that just ended; a database that fails is a caution, never a lost run."""
    state: RunState = "finished" if result.finished and result.headline_value() else "failed"
    try:
        breakdown = RunStore.breakdown(run_dir) if state == "finished" else None
        Database.of(settings).record([(run_dir, result, breakdown, state)])
    except UserError as exc:
        emit(Caution(f"{result.run_id} is not in the results database: {exc.message}"))


class BenchRecord(BaseModel):
    """One bench's outcome: a verdict on its runs, or `nothing measured` (no kernel
    changed); `bench_id` and `started` are filled when it is recorded."""

    bench_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    started: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())
    baseline: str
    candidate: str
    llvm_commit: str | None = None
    system: str
    verdict: Literal["faster", "slower", "no change", "too busy", "nothing measured"]
    headline: str
    changed_kernels: int | None = None
    runs: int = 0
    elapsed_seconds: float
    baseline_group: str | None = None
    candidate_group: str | None = None


def record_bench(settings: Settings, record: BenchRecord, emit: Emit = ignore) -> None:
    """Write one bench outcome; a database that fails is a caution, never a lost verdict
    (the verdict was printed and its runs are in their directories)."""
    try:
        with Database.of(settings).begin() as conn:
            conn.execute(benches.insert().values(**record.model_dump()))
    except UserError as exc:
        emit(Caution(f"bench {record.bench_id} is not in the results database: {exc.message}"))
