"""CI's budget table of the images a session built: on a warm engine it has no row (every
image was reused), so its rows are only made on a cold one; here they are made every time,
from lockfiles as the builds write them, and a failure in it would break every CI's end."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import ci_budget
import pytest

from orchestrator.images.provenance import ImageRecord, Lockfile
from orchestrator.platforms.base import CompileCacheStats


def _lock(folder: Path, tag: str, created: datetime, seconds: float | None) -> None:
    record = ImageRecord(tag=tag, id="sha256:0", created=created.strftime("%Y-%m-%dT%H:%M:%SZ"))
    lock = Lockfile(
        record=record, template="t", context={}, dockerfile_sha256="0", build_seconds=seconds,
        compile_cache=CompileCacheStats(hits=1150, misses=52),
    )  # fmt: skip
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "images" / f"{tag.replace(':', '__')}.lock.json").write_text(lock.model_dump_json())


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A folder outside pytest's basetemp: the session's own budget table reads that one."""
    with tempfile.TemporaryDirectory(prefix="ci-budget-") as folder:
        yield Path(folder)


def test_only_the_images_this_session_built_are_rows(elsewhere: Path) -> None:
    tmp_path, since = elsewhere, datetime.now(UTC)
    _lock(tmp_path / "results0", "gromacs:stable-cpu-gcc12", since + timedelta(minutes=12), 744.0)
    _lock(tmp_path / "results1", "gromacs:dev-x", since + timedelta(minutes=30), 200.0)
    _lock(tmp_path / "results1", "gromacs:old", since - timedelta(days=1), 900.0)  # reused
    _lock(tmp_path / "results1", "gromacs:labels", since + timedelta(minutes=1), None)
    (tmp_path / "results1" / "images" / "base.lock.json").write_text('{"suite": "sid"}')
    assert ci_budget.built_images(tmp_path, since) == [
        ("gromacs:stable-cpu-gcc12", 744.0, "1150 hits, 52 misses"),
        ("gromacs:dev-x", 200.0, "1150 hits, 52 misses"),
    ]
    report = SimpleNamespace(nodeid="tests/test_x.py::test_y", duration=950.0, keywords={"engine"})
    table = ci_budget.render(tmp_path, since, [report])
    assert re.search(r"^gromacs:stable-cpu-gcc12\s+744\s+1150 hits, 52 misses$", table, re.M)
    assert re.search(r"^of which image builds\s+944$", table, re.M), table
    assert "gromacs:old" not in table
