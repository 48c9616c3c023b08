"""Where the test session's time went, printed at its end so the next person sees CI's budget.

Three tables: the images this session built (their lockfiles' `build_seconds` and what
the compile cache did), the time of the unit and the engine tests, and the slowest tests
(setup, call and teardown together: a session fixture's build lands on its first user).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from tabulate import tabulate

from orchestrator.images.provenance import Lockfile

SLOWEST = 15


def built_images(basetemp: Path, since: datetime) -> list[tuple[str, float, str]]:
    """(tag, build seconds, compile cache) of each image created since `since`, from the
    lockfiles the session's results folders hold (each tag once)."""
    found: dict[str, tuple[str, float, str]] = {}
    for path in basetemp.rglob("*.lock.json"):
        try:
            lock = Lockfile.model_validate_json(path.read_text())
        except (OSError, ValueError):
            continue
        created = lock.record.created
        if lock.build_seconds is None or not created:
            continue
        if datetime.fromisoformat(created.replace("Z", "+00:00")) < since:
            continue  # reused from an earlier session
        cache = lock.compile_cache
        hits = "" if cache is None else f"{cache.hits} hits, {cache.misses} misses"
        found[lock.record.tag] = (lock.record.tag, lock.build_seconds, hits)
    return sorted(found.values(), key=lambda row: -row[1])


def seconds_per_test(reports: list[Any]) -> dict[str, float]:
    """Seconds per test node id, its setup, call and teardown added up."""
    seconds: dict[str, float] = defaultdict(float)
    for report in reports:
        seconds[report.nodeid] += report.duration
    return seconds


def render(basetemp: Path, since: datetime, reports: list[Any]) -> str:
    """The three tables; a report is an engine test's when it carries the `engine` mark."""
    engine_ids = {r.nodeid for r in reports if "engine" in r.keywords}
    seconds = seconds_per_test(reports)
    builds = built_images(basetemp, since)
    engine = sum(s for nodeid, s in seconds.items() if nodeid in engine_ids)
    unit = sum(s for nodeid, s in seconds.items() if nodeid not in engine_ids)
    parts = [
        "images built in this session (lockfiles' build_seconds):",
        tabulate(
            [(tag, f"{s:.0f}", cache) for tag, s, cache in builds] or [("none", "", "")],
            headers=["image", "seconds", "compile cache"],
        ),
        "",
        tabulate(
            [
                ("unit tests", f"{unit:.0f}"),
                ("engine tests (their image builds included)", f"{engine:.0f}"),
                ("of which image builds", f"{sum(s for _, s, _ in builds):.0f}"),
            ],
            headers=["tests", "seconds"],
        ),
        "",
        f"the {SLOWEST} slowest tests (setup + call + teardown):",
        tabulate(
            [(f"{s:.0f}", nodeid) for nodeid, s in sorted(seconds.items(), key=lambda i: -i[1])][
                :SLOWEST
            ],
            headers=["seconds", "test"],
        ),
    ]
    return "\n".join(parts)
