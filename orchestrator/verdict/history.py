"""A metric over LLVM commits, from the results database, with the change points flagged.

A *point* is every finished run of one build of the compiler (an LLVM commit, else the
build's name) on one system; its value is the median of its runs, its spread their range.
Points are ordered by the commit's date in `ORCH_LLVM_SOURCE` when it is a local checkout
(the order a bisect sees), else by their first run. *Change points* are found over the
whole history at once by E-divisive means with a permutation test on every run
(`verdict.changepoints`): with no change anywhere, a history of any length shows one
with probability at most `alpha`, which testing each step against the one before (with
or without a correction) never promised. A change point is kept when its segment's runs
differ from the previous segment's by more than the marker threshold, and carries that
comparison (`compare`'s unpaired rule: the size of the change and its interval).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from sqlalchemy import select

from orchestrator.core.errors import UsageError
from orchestrator.core.idents import is_commit_id
from orchestrator.parsers.categories import CATEGORIES
from orchestrator.store.database import (
    Database,
    bisect_steps,
    bisects,
    categories,
    kernels,
    metrics,
    runs,
)  # fmt: skip
from orchestrator.verdict.changepoints import change_points
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT
from orchestrator.verdict.model import Verdict
from orchestrator.verdict.stats import compare_samples

#: The headline of GROMACS runs; a category name or a kernel recipe's metric otherwise.
NS_PER_DAY = "ns/day"


class Sample(BaseModel):
    """One finished run's value of the metric, with where it came from (a database row)."""

    run_id: str
    build: str
    image_tag: str
    image_id: str
    llvm_commit: str | None = None
    gromacs_commit: str | None = None
    compiler_version: str | None = None
    host: str
    started: str
    value: float


class Point(BaseModel):
    """Every run of one build on the system: the median, the range and the provenance."""

    key: str = Field(description="the LLVM commit (12 hex digits), else the build's name")
    llvm_commit: str | None = None
    commit_date: str | None = None
    builds: list[str]
    images: list[str]
    gromacs_commits: list[str] = Field(default_factory=list)
    hosts: list[str]
    first_run: str
    runs: int
    median: float
    low: float
    high: float
    values: list[float]
    #: The runs of this point against the previous point's (None for the first point); at a
    #: change point, the runs of its segment against the previous segment's.
    change: Verdict | None = None
    #: A change point (E-divisive, beyond the threshold).
    flagged: bool = False


class Series(BaseModel):
    """One system × metric over builds, oldest first."""

    system: str
    metric: str
    unit: str
    higher_is_better: bool
    #: The LLVM source whose commit dates order the points; None: their first run does
    #: (`report.words.ordered_by` says which).
    dated_by: str | None = None
    points: list[Point]

    @property
    def change_points(self) -> list[Point]:
        return [p for p in self.points if p.flagged]


def systems(db: Database) -> list[str]:
    """Systems with at least one finished run in the database."""
    rows = db.query(select(runs.c.system).where(runs.c.state == "finished").distinct())
    return sorted(row.system for row in rows)


def load_series(
    db: Database,
    system: str,
    metric: str | None = None,
    *,
    kernel: str | None = None,
    last: int | None = None,
    llvm_source: str | None = None,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
) -> Series:
    """`metric` (ns/day, a category, a kernel recipe's metric; default the headline) or one
    kernel's time, over every finished run of `system`."""
    columns = (
        runs.c.run_id, runs.c.build, runs.c.image_tag, runs.c.image_id, runs.c.llvm_commit,
        runs.c.gromacs_commit, runs.c.compiler_version, runs.c.host, runs.c.started,
    )  # fmt: skip
    system = _system_named(db, system)
    done = (runs.c.system == system) & (runs.c.state == "finished")
    heads = db.query(select(runs.c.kind, runs.c.headline).where(done).order_by(runs.c.started))
    if not heads:
        known = ", ".join(systems(db)) or "none yet"
        raise UsageError(
            f"No finished runs of system {system!r} in the results database. Systems with "
            f"runs: {known}. Runs made before the database existed: `gmxbench db import`."
        )
    if kernel is not None:
        name, unit, higher = f"kernel {kernel}", "ms", False
        stmt = select(*columns, kernels.c.total_ms.label("value")).join(kernels)
        stmt = stmt.where(done & (kernels.c.name == kernel))
    else:
        kind, headline = heads[-1]
        name = metric or (headline if kind == "kernel" and headline else NS_PER_DAY)
        if name == NS_PER_DAY:
            unit, higher = NS_PER_DAY, True
            stmt = select(*columns, runs.c.ns_per_day.label("value")).where(done)
        elif name in CATEGORIES:
            unit, higher = "ms", False
            stmt = select(*columns, categories.c.total_ms.label("value")).join(categories)
            # a run whose build does not use the category (0 ms: no FFT kernels on a GPU
            # run) has no value for it, as in `compare`; a ratio of 0 has no log
            stmt = stmt.where(done & (categories.c.category == name) & (categories.c.total_ms > 0))
        else:
            found = db.query(
                select(metrics.c.unit, metrics.c.better).join(runs)
                .where(done & (metrics.c.name == name)).limit(1)
            )  # fmt: skip
            if not found:
                raise UsageError(_unknown_metric(db, system, name))
            unit, higher = found[0].unit, found[0].better != "lower"
            stmt = select(*columns, metrics.c.value.label("value")).join(metrics)
            stmt = stmt.where(done & (metrics.c.name == name))
    samples = [Sample.model_validate(row._asdict()) for row in db.query(stmt)]
    if not samples:
        raise UsageError(f"No finished run of {system!r} has a value for {name!r}.")
    return build_series(
        system, name, unit, higher, samples, llvm_source=llvm_source, last=last,
        threshold_pct=threshold_pct, alpha=alpha,
    )  # fmt: skip


def _system_named(db: Database, name: str) -> str:
    """`name`, or the one recorded system it abbreviates (`bandwidth:8MiB` for the runs'
    `bandwidth:8MiB:temporal`, as recipes resolve defaults)."""
    known = systems(db)
    longer = [s for s in known if s.startswith(name + ":")]
    return longer[0] if name not in known and len(longer) == 1 else name


def _unknown_metric(db: Database, system: str, name: str) -> str:
    done = (runs.c.system == system) & (runs.c.state == "finished")
    names = {row.name for row in db.query(select(metrics.c.name).join(runs).where(done).distinct())}
    cats = {row.category for row in db.query(
        select(categories.c.category).join(runs).where(done).distinct()
    )}  # fmt: skip
    has_ns = bool(db.query(select(runs.c.run_id).where(done & runs.c.ns_per_day.is_not(None))))
    known = sorted(names | cats | ({NS_PER_DAY} if has_ns else set()))
    return (
        f"{name!r} is not measured by the runs of {system!r}. Pick one of: "
        f"{', '.join(known)}; or --kernel NAME for one kernel's time."
    )


def commit_dates(source: str, commits: Sequence[str]) -> dict[str, str]:
    """Committer dates (ISO 8601) of `commits` in a local checkout; {} for a URL or unknowns.

    Only what looks like a commit reaches git (a database row may hold anything an
    imported record held), after `--end-of-options`."""
    path = Path(source).expanduser()
    commits = [c for c in commits if is_commit_id(c) and not c.endswith("-dirty")]
    if not commits or (not (path / ".git").exists() and not (path / "HEAD").exists()):
        return {}
    found = _dates(path, commits)
    if found is None:  # one of them is unknown here: ask for each on its own
        found = {}
        for commit in commits:
            found.update(_dates(path, [commit]) or {})
    return found


def _dates(path: Path, commits: Sequence[str]) -> dict[str, str] | None:
    out = subprocess.run(
        ["git", "-C", str(path), "show", "-s", "--format=%cI", "--end-of-options",
         *(c + "^{commit}" for c in commits)],
        capture_output=True, text=True,
    )  # fmt: skip
    dates = out.stdout.split()
    if out.returncode != 0 or len(dates) != len(commits):
        return None
    return dict(zip(commits, dates, strict=True))


def build_series(
    system: str,
    metric: str,
    unit: str,
    higher_is_better: bool,
    samples: Sequence[Sample],
    *,
    llvm_source: str | None = None,
    last: int | None = None,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
) -> Series:
    """Group samples into points, order them, keep the `last` N, flag the change points."""
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        key = sample.llvm_commit[:12] if sample.llvm_commit else sample.build
        groups.setdefault(key, []).append(sample)
    commits = sorted({s.llvm_commit for s in samples if s.llvm_commit})
    dates = commit_dates(llvm_source, commits) if llvm_source else {}
    points = [_point(key, runs, dates) for key, runs in groups.items()]
    by_date = bool(dates) and all(p.commit_date or not p.llvm_commit for p in points)
    points.sort(key=lambda p: ((p.commit_date or p.first_run) if by_date else p.first_run, p.key))
    if last is not None:
        points = points[-last:]
    _flag(points, higher_is_better, threshold_pct, alpha)
    return Series(
        system=system,
        metric=metric,
        unit=unit,
        higher_is_better=higher_is_better,
        dated_by=llvm_source if by_date else None,
        points=points,
    )


def _point(key: str, runs: list[Sample], dates: dict[str, str]) -> Point:
    values = sorted(s.value for s in runs)
    n = len(values)
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    commit = runs[0].llvm_commit
    return Point(
        key=key,
        llvm_commit=commit,
        commit_date=dates.get(commit) if commit else None,
        builds=sorted({s.build for s in runs}),
        images=sorted({f"{s.image_tag} ({s.image_id[:19]})" for s in runs}),
        gromacs_commits=sorted({s.gromacs_commit for s in runs if s.gromacs_commit}),
        hosts=sorted({s.host for s in runs}),
        first_run=min(s.started for s in runs),
        runs=n,
        median=median,
        low=values[0],
        high=values[-1],
        values=values,
    )


def _flag(points: list[Point], higher_is_better: bool, threshold_pct: float, alpha: float) -> None:
    """Each point against the one before (descriptive); then the change points of the whole
    history, each with the verdict of its segment against the one before it."""

    def verdict(before: list[float], after: list[float]) -> Verdict:
        return compare_samples(before, after, higher_is_better=higher_is_better,
                               threshold_pct=threshold_pct, alpha=alpha)  # fmt: skip

    for before, after in pairwise(points):
        after.change = verdict(before.values, after.values)
    found = change_points([p.values for p in points], alpha)
    bounds = [0, *found, len(points)]
    for k, at in enumerate(found):
        change = verdict(
            [v for p in points[bounds[k] : at] for v in p.values],
            [v for p in points[at : bounds[k + 2]] for v in p.values],
        )
        if abs(change.delta_pct) > threshold_pct:
            points[at].change, points[at].flagged = change, True


#: What a step found: git is told good, bad or skip; "undecided" is measured again.
BisectVerdict = Literal["bad", "good", "skip", "undecided"]


class BisectStep(BaseModel):
    """One commit a bisect tested: what it was called and why (a database row)."""

    step: int
    commit: str
    verdict: BisectVerdict
    #: The bench's groups (`<build>__<system>__<tag>`) behind the verdict; none for a skip.
    baseline_group: str | None = None
    candidate_group: str | None = None
    delta_pct: float | None = None
    p_value: float | None = None
    pairs: int = 0
    note: str
    at: str


class Bisect(BaseModel):
    """A whole `bisect`: its bounds, what it measured, its steps and what it found."""

    bisect_id: str
    good: str
    bad: str
    system: str
    metric: str
    started: str
    first_bad: str | None = None
    #: Why it ended without one commit (only skipped commits left, or stopped).
    outcome: str = ""
    steps: list[BisectStep] = Field(default_factory=list)


def load_bisects(db: Database) -> list[Bisect]:
    """Every bisect in the database with its steps, oldest first."""
    found = {
        row.bisect_id: Bisect.model_validate({**row._asdict(), "steps": []})
        for row in db.query(select(bisects).order_by(bisects.c.started))
    }
    for row in db.query(select(bisect_steps).order_by(bisect_steps.c.step)):
        if row.bisect_id in found:
            step = {k: v for k, v in row._asdict().items() if k != "bisect_id"}
            found[row.bisect_id].steps.append(BisectStep.model_validate(step))
    return list(found.values())


def latest_bench(db: Database, system: str | None = None) -> tuple[str, str] | None:
    """The baseline and candidate groups of the newest `bench` (its re-measured baseline
    group's runs are recorded as its baseline, `role`), or None when no bench is recorded."""
    where = (runs.c.role == "baseline") & (runs.c.state == "finished")
    if system is not None:
        where &= runs.c.system == system
    newest = db.query(select(runs).where(where).order_by(runs.c.started.desc()).limit(1))
    if not newest:
        return None
    base = newest[0]
    peers = db.query(
        select(runs.c.group_name).where(
            (runs.c.system == base.system) & (runs.c.group_name != base.group_name)
            & runs.c.group_name.endswith(f"__{base.bench}")
        ).limit(1)
    )  # fmt: skip
    return (base.group_name, peers[0].group_name) if peers else None
