"""rocprofv3's rocpd databases: built from rocprofiler-sdk's own schema, read like the CSVs.

Each database is made by running upstream's schema files (``tests/data/rocpd_schema/``
says which, and pins them by sha256) with the writer's substitutions, then filled with the
dispatches of a real public kernel_trace.csv, row for row. The rocpd reader must give the
breakdown the CSV reader gives for that CSV.
"""

from __future__ import annotations

import csv
import hashlib
import os
import sqlite3
import uuid
from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.parsers import rocpd
from orchestrator.parsers.detect import parse_file
from orchestrator.parsers.rocprof import find_rocprof_files, parse_kernel_csv, parse_rocprof
from orchestrator.platforms.rocm import RocmPlatform
from orchestrator.store.layout import TRACE_DIR

DATA = Path(__file__).parent / "data"
SAMPLES = DATA / "samples"
PINS = DATA / "rocpd_schema" / "SHA256SUMS"
#: Upstream's order (generateRocpd.cpp): tables, then views and data views, then indexes.
SCHEMA_FILES = ("rocpd_tables.sql", "rocpd_views.sql", "data_views.sql", "rocpd_indexes.sql")
TRACES = [
    "ROCm_rocprofiler-sdk__source_docs_data_kernel_trace.csv",
    "ROCm_rocprofiler-sdk__source_docs_data_kernel_trace__amd-staging-b5f1d70.csv",
    "ROCm_rocm-systems__projects_rocprofiler-sdk_source_docs_how-to_using-rocprofv3.rst"
    "__kernel_trace_demangled__rocprofiler-sdk-7.0.csv",
]


def schema_dir() -> Path:
    """``shared/research/rocpd-schema/`` beside the checkout, or GMXBENCH_ROCPD_SCHEMA_DIR."""
    if "GMXBENCH_ROCPD_SCHEMA_DIR" in os.environ:
        return Path(os.environ["GMXBENCH_ROCPD_SCHEMA_DIR"])
    for folder in Path(__file__).resolve().parents[1:]:
        candidate = folder / "shared" / "research" / "rocpd-schema"
        if (candidate / SCHEMA_FILES[0]).is_file():
            return candidate
    return Path(__file__).resolve().parents[2] / "shared" / "research" / "rocpd-schema"


@pytest.fixture(scope="module")
def schema() -> dict[str, str]:
    """The upstream schema files, each checked against its pinned sha256."""
    folder = schema_dir()
    if not (folder / SCHEMA_FILES[0]).is_file():
        # upstream's files are kept only in shared/ (never committed): a machine whose
        # shared/ was laid without them cannot run these checks, whatever CI says
        pytest.skip(f"no rocpd schema: {folder} is missing (see {PINS.parent / 'README.md'})")
    pins = dict(reversed(line.split()) for line in PINS.read_text().splitlines())
    texts = {}
    for name in SCHEMA_FILES:
        data = (folder / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == pins[name], f"{name} is not upstream's"
        texts[name] = data.decode()
    return texts


def _create(conn: sqlite3.Connection, schema: dict[str, str], guid: str) -> None:
    """Upstream's schema with the writer's substitutions (sql.cpp, load_schema)."""
    suffix = "_" + guid.replace("-", "_")
    for name in SCHEMA_FILES:
        text = schema[name].replace("{{uuid}}", suffix).replace("{{guid}}", guid)
        conn.executescript(text)


def _agent(cell: str) -> int:
    return int(cell.removeprefix("Agent "))


def make_db(path: Path, schema: dict[str, str], trace: Path, agents: int = 1) -> Path:
    """A rocpd database holding the dispatches of ``trace`` (a rocprofv3 kernel_trace.csv).

    With ``agents`` > 1, dispatch i runs on GPU agent (its own + i % agents).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    guid = str(uuid.uuid4())
    with trace.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    conn = sqlite3.connect(path)
    try:
        _create(conn, schema, guid)

        def insert(view: str, **values: object) -> int:
            table = f"{view}_{guid.replace('-', '_')}"
            columns = ", ".join(f'"{key}"' for key in values)
            marks = ", ".join("?" for _ in values)
            cursor = conn.execute(
                f"INSERT INTO `{table}` ({columns}) VALUES ({marks})", tuple(values.values())
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

        def string(text: str) -> int:
            found = conn.execute("SELECT id FROM rocpd_string WHERE string = ?", (text,)).fetchone()
            return int(found[0]) if found else insert("rocpd_string", string=text)

        nid = insert("rocpd_info_node", hash=1, machine_id="test-machine", hostname="node-a")
        pid = insert("rocpd_info_process", nid=nid, pid=4242, command="gmx mdrun")
        made: dict[tuple[str, int], int] = {}

        def once(view: str, key: int, **values: object) -> int:
            if (view, key) not in made:
                made[view, key] = insert(view, **values)
            return made[view, key]

        for i, row in enumerate(rows):
            index = _agent(row["Agent_Id"]) + i % agents
            agent = once(
                "rocpd_info_agent", index, nid=nid, pid=pid, type="GPU", absolute_index=index,
                logical_index=index, type_index=index, name="gfx1201",
            )  # fmt: skip
            tid = once("rocpd_info_thread", int(row["Thread_Id"]), nid=nid, pid=pid,
                       tid=int(row["Thread_Id"]))  # fmt: skip
            queue = once("rocpd_info_queue", int(row["Queue_Id"]), nid=nid, pid=pid, name="q")
            stream_id = int(row.get("Stream_Id", 0))  # the 18-column layout has none
            stream = once("rocpd_info_stream", stream_id, nid=nid, pid=pid, name="s")
            code = once("rocpd_info_code_object", 0, nid=nid, pid=pid, agent_id=agent)
            kernel = once(
                "rocpd_info_kernel_symbol", int(row["Kernel_Id"]), nid=nid, pid=pid,
                code_object_id=code, kernel_name=row["Kernel_Name"],
                display_name=row["Kernel_Name"],
            )  # fmt: skip
            event = insert(
                "rocpd_event", category_id=string(row["Kind"]),
                correlation_id=int(row["Correlation_Id"]),
            )  # fmt: skip
            insert(
                "rocpd_kernel_dispatch", nid=nid, pid=pid, tid=tid, agent_id=agent,
                kernel_id=kernel, dispatch_id=int(row["Dispatch_Id"]), queue_id=queue,
                stream_id=stream, start=int(row["Start_Timestamp"]),
                end=int(row["End_Timestamp"]), workgroup_size_x=int(row["Workgroup_Size_X"]),
                workgroup_size_y=int(row["Workgroup_Size_Y"]),
                workgroup_size_z=int(row["Workgroup_Size_Z"]),
                grid_size_x=int(row["Grid_Size_X"]), grid_size_y=int(row["Grid_Size_Y"]),
                grid_size_z=int(row["Grid_Size_Z"]), region_name_id=string(row["Kernel_Name"]),
                event_id=event,
            )  # fmt: skip
        conn.commit()
        assert conn.execute("SELECT COUNT(*) FROM kernels").fetchone()[0] == len(rows)
    finally:
        conn.close()
    return path


def _same(left: object, right: object) -> dict[str, object]:
    """The parts of two breakdowns that must agree whatever file they came from."""
    keys = ("total_ms", "categories", "kernels", "unknown", "excluded", "excluded_ms")
    dumps = [b.model_dump(include=set(keys)) for b in (left, right)]  # type: ignore[attr-defined]
    assert dumps[0] == dumps[1]
    return dumps[0]


@pytest.mark.parametrize("name", TRACES)
def test_rocpd_and_csv_of_the_same_dispatches_give_the_same_breakdown(
    tmp_path: Path, schema: dict[str, str], name: str
) -> None:
    trace = SAMPLES / name
    db = make_db(tmp_path / "node-a" / "4242_results.db", schema, trace)
    from_db = parse_rocprof(db)
    from_csv = parse_kernel_csv(trace)
    same = _same(from_db, from_csv)
    assert from_db.source == "rocpd kernel dispatches"
    assert from_db.notes == []
    assert same["kernels"] and from_db.total_ms > 0
    with trace.open(newline="") as handle:
        assert sum(k.calls for k in from_db.kernels) == len(list(csv.DictReader(handle)))


def test_a_run_folder_with_databases_is_read_as_rocpd(
    tmp_path: Path, schema: dict[str, str]
) -> None:
    trace = SAMPLES / TRACES[0]
    out = tmp_path / TRACE_DIR
    make_db(out / "node-a" / "4242_results.db", schema, trace)
    make_db(out / "node-a" / "4243_results.db", schema, trace)
    (out / "node-a" / "4242_kernel_trace.csv").write_bytes(trace.read_bytes())
    assert [p.name for p in find_rocprof_files(out)] == ["4242_results.db", "4243_results.db"]
    breakdown = RocmPlatform().profiler.profile_breakdown(tmp_path)
    assert breakdown is not None
    one = parse_kernel_csv(trace)
    assert breakdown.total_ms == pytest.approx(2 * one.total_ms)
    assert [k.calls for k in breakdown.kernels] == [2 * k.calls for k in one.kernels]
    assert parse_file(out / "node-a" / "4242_results.db")["kind"] == "rocprof"


def test_dispatches_on_several_agents_are_summed_and_said(
    tmp_path: Path, schema: dict[str, str]
) -> None:
    trace = SAMPLES / TRACES[0]
    db = make_db(tmp_path / "results.db", schema, trace, agents=2)
    breakdown = parse_rocprof(db)
    _same(breakdown, parse_kernel_csv(trace))
    assert breakdown.notes == ["kernel dispatches on 2 agents, summed (GPU 2: 4, GPU 3: 4)"]


def test_the_database_is_opened_read_only(tmp_path: Path, schema: dict[str, str]) -> None:
    db = make_db(tmp_path / "results.db", schema, SAMPLES / TRACES[0])
    before = db.read_bytes()
    assert parse_rocprof(db).kernels
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db"]  # no journal left
    conn = rocpd._connect(db)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("CREATE TABLE written (i INTEGER)")
    finally:
        conn.close()


def _refused(path: Path) -> str:
    with pytest.raises(UserError) as err:
        parse_rocprof(path)
    message = err.value.message
    assert str(path) in message and "\n" not in message
    assert "rocprofv3" in message
    return message


def test_a_corrupt_database_is_one_paragraph(tmp_path: Path, schema: dict[str, str]) -> None:
    good = make_db(tmp_path / "good.db", schema, SAMPLES / TRACES[0]).read_bytes()
    torn = tmp_path / "torn.db"
    torn.write_bytes(good[:100] + bytes(len(good) - 100))  # header kept, pages zeroed
    assert "corrupt" in _refused(torn)
    magic_only = tmp_path / "results.db"
    magic_only.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    assert "corrupt" in _refused(magic_only)
    text = tmp_path / "notes.db"
    text.write_text("not a database at all\n")
    assert "corrupt" in _refused(text)


def test_a_database_that_is_not_rocpd_is_one_paragraph(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER)")
    assert "'kernels' view" in _refused(other)
    shaped = tmp_path / "shaped.db"
    with sqlite3.connect(shaped) as conn:
        conn.execute("CREATE VIEW kernels AS SELECT 1 AS id, 'k' AS name")
    assert "agent_abs_index" in _refused(shaped)


def test_a_view_that_never_ends_is_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = tmp_path / "hostile.db"
    with sqlite3.connect(hostile) as conn:
        conn.execute(
            "CREATE VIEW kernels AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
            "SELECT i + 1 FROM n) SELECT 'k' AS name, i AS start, i AS \"end\", "
            "0 AS agent_abs_index, 'GPU' AS agent_type FROM n WHERE i < 0"
        )
    monkeypatch.setattr(rocpd, "QUERY_SECONDS", 0.5)
    assert "longer than" in _refused(hostile)
