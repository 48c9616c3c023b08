"""Read the kernel dispatches of a rocprofv3 ``rocpd`` database (SQLite), ROCm 7.0 and later.

rocprofv3 writes ``rocpd`` by default from ROCm 7.0 (``rocprofv3.py``: no
``--output-format`` means ``rocpd``), one ``<hostname>/<pid>_results.db`` per process.
Its tables carry a per-process suffix (``rocpd_kernel_dispatch_<guid>``); the schema files
(``share/rocprofiler-sdk-rocpd/*.sql``) define suffix-free views over them, and
``data_views.sql`` defines ``kernels``, one row per dispatch with the kernel's display
name, ``start``/``end`` (ns) and the agent. That view is what upstream's own readers use
(``rocpd convert``, the ``rocpd`` package's README), so it is what this module reads:
no table name or join of ours can drift from the writer's.

A database is someone else's file: it is opened read-only (``mode=ro``), with
``trusted_schema`` off (its views may call no function with side effects) and
``query_only`` on, and a query that runs past :data:`QUERY_SECONDS` is interrupted, so a
crafted view cannot hang a bench. Anything SQLite refuses becomes one paragraph naming
the file and the fix.
"""

from __future__ import annotations

import sqlite3
import time
from array import array
from collections import Counter
from pathlib import Path

from orchestrator.core.errors import UserError

#: The first 16 bytes of every SQLite 3 database (sqlite.org/fileformat.html, 1.3).
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Longest a database may take to read: a real trace of millions of dispatches takes seconds.
QUERY_SECONDS = 600.0
#: The columns of upstream's ``kernels`` view this module reads.
COLUMNS = ("name", "start", "end", "agent_abs_index", "agent_type")
_QUERY = 'SELECT name, start, "end", agent_abs_index, agent_type FROM kernels'
_FIX = (
    "Pass the <pid>_results.db that 'rocprofv3 --kernel-trace' (ROCm 7.0 or later) "
    "wrote, or rerun the profile."
)

Durations = dict[str, "array[int]"]


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` starts like an SQLite database (whatever its name)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _connect(path: Path) -> sqlite3.Connection:
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise UserError(f"Cannot open {path} as a database ({exc}). {_FIX}") from None
    deadline = time.monotonic() + QUERY_SECONDS
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 100_000)
    return conn


def _names(conn: sqlite3.Connection) -> set[str]:
    """The database's tables and views."""
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('view', 'table')")
    return {str(name) for (name,) in rows}


def read_rocpd(path: Path) -> tuple[Durations, Counter[str]]:
    """Call durations (ns, one array per kernel name) and dispatches per agent of one file.

    Durations are ``end - start``; a negative one counts as a call of 0 ns and a row whose
    name or times are missing is skipped, as the CSV reader does with such rows.
    """
    conn = _connect(path)
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA query_only = ON")
        names = _names(conn)
        if "kernels" not in names:
            raise UserError(
                f"{path} is an SQLite database but no rocpd output of rocprofv3: it lacks "
                "the 'kernels' view (rocprofiler-sdk's data_views.sql) that every rocprofv3 "
                f"database of ROCm 7.0 or later has. {_FIX}"
            )
        durations: Durations = {}
        agents: Counter[str] = Counter()
        cursor = conn.execute(_QUERY)
        while rows := cursor.fetchmany(10_000):
            for name, start, end, index, kind in rows:
                if not isinstance(name, str) or type(start) is not int or type(end) is not int:
                    continue
                slot = durations.get(name)
                if slot is None:
                    slot = durations[name] = array("q")
                slot.append(end - start if end > start else 0)
                agents[f"{kind or 'agent'} {index}"] += 1
        return durations, agents
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise UserError(
                f"Reading {path} took longer than {QUERY_SECONDS:.0f} s, which no rocprofv3 "
                f"database does: its views were not written by rocprofv3. {_FIX}"
            ) from None
        raise UserError(
            f"{path} is not a rocpd database this tool can read ({exc}); its 'kernels' view "
            f"needs the columns {', '.join(COLUMNS)}. {_FIX}"
        ) from None
    except sqlite3.DatabaseError as exc:
        raise UserError(
            f"{path} is not a readable SQLite database ({exc}): it is corrupt, truncated or "
            f"no database at all. {_FIX}"
        ) from None
    finally:
        conn.close()


def agents_note(agents: Counter[str]) -> str | None:
    """A caveat when dispatches ran on more than one agent: the breakdown sums them."""
    if len(agents) < 2:
        return None
    listed = ", ".join(f"{agent}: {n}" for agent, n in sorted(agents.items()))
    return f"kernel dispatches on {len(agents)} agents, summed ({listed})"
