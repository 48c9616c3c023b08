"""The run store: reads and writes the run directories of one results folder (asv's
`results.py`); where each file lies is `store.layout`'s, what a record says `store.records`.

Repeats of one measurement are a group (`RunResult.group`). A record whose process died
before it could say how the run ended is *abandoned* (`status`), and a record that cannot
be read is *unreadable*; readers list both and compare neither. Everything else (runner,
bench, compare, the `parse` command) asks this module.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.core.errors import NoSpace, UsageError, UserError, space_for
from orchestrator.core.events import Caution, Emit, ignore
from orchestrator.core.files import DamagedRecord, read_model, write_atomic
from orchestrator.parsers import detect
from orchestrator.parsers.breakdown import Breakdown
from orchestrator.parsers.instructions import InstructionCounts
from orchestrator.parsers.mdlog import parse_mdlog
from orchestrator.parsers.rocprof_compute import CounterSummary
from orchestrator.parsers.rocprof_sys import SystemTrace
from orchestrator.platforms import PLATFORMS
from orchestrator.platforms.base import ProfileOutcome
from orchestrator.runs.liveness import STALE_SECONDS, heartbeat_age
from orchestrator.store import layout
from orchestrator.store.layout import (
    BREAKDOWN_FILE,
    COUNTERS_FILE,
    DEFFNM,
    HEARTBEAT_FILE,
    INSTRUCTIONS_FILE,
    LOG_NAMES,
    RESULT_FILE,
    SCHEDULER_FILE,
    STDERR_FILE,
    STDOUT_FILE,
    SYSTRACE_FILE,
    TIMES_FILE,
)
from orchestrator.store.records import RunResult, RunState, SchedulerRecord


@dataclass
class Status:
    """What a run directory holds, as every list of runs shows it; `why` when not finished."""

    path: Path
    state: RunState
    result: RunResult | None
    why: str = ""


@dataclass
class Run:
    """A run as compare reads it: its directory, its record, its breakdown and, from
    `--profile=counters`, its hardware counters per kernel; from a profiler that counts
    them, its executed instructions per kernel."""

    path: Path
    result: RunResult
    breakdown: Breakdown | None
    counters: CounterSummary | None = None
    instructions: InstructionCounts | None = None


def log_file(run_dir: Path) -> Path | None:
    """The run's md.log, if it wrote one."""
    return next((run_dir / n for n in LOG_NAMES if (run_dir / n).is_file()), None)


def log_tail(run_dir: Path, lines: int = 20) -> str:
    """The end of the most telling log a run left: stderr, then md.log, then stdout."""
    for name in (STDERR_FILE, f"{DEFFNM}.log", STDOUT_FILE):
        path = run_dir / name
        if path.exists() and path.stat().st_size:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


def setup_seconds(run_dir: Path) -> float | None:
    """How long input preparation took inside the container (from `TIMES_FILE`)."""
    path = run_dir / TIMES_FILE
    times = path.read_text(errors="replace").split() if path.exists() else []
    try:
        return round(float(times[1]) - float(times[0]), 3) if len(times) == 2 else None
    except ValueError:  # cut short: the setup time is unknown, the run itself is not
        return None


class RunStore:
    """The run directories under one results folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, run: str) -> Path:
        return self.root / run

    def create(self, run: str) -> Path:
        """A new, empty run directory; an existing one is never reused."""
        run_dir = self.path(run)
        if run_dir.exists():
            raise UserError(
                f"Run directory {run_dir} already exists; runs are never overwritten. "
                f"Pick another tag (the third argument) or move the old run away."
            )
        with space_for(run_dir, "the run's directory"):
            run_dir.mkdir(parents=True)
        return run_dir

    @staticmethod
    def save(run_dir: Path, result: RunResult) -> Path:
        text = result.model_dump_json(indent=2) + "\n"
        return write_atomic(run_dir / RESULT_FILE, text, what="the run's record")

    @staticmethod
    def save_last(run_dir: Path, result: RunResult) -> Path:
        """The run's last record; on a disk too full for it, `NoSpace` once the directory
        holds a record that says so, or none.

        The start record must not outlive a run as `finished: false, failure: null`: the
        run becomes failed with `no space left on device: <path>`, written in the room its
        start record leaves, and if even that does not fit, the run directory goes.
        """
        try:
            return RunStore.save(run_dir, result)
        except NoSpace as exc:
            full = exc
        first = result.failure
        if not (first or "").startswith(full.failure.split(":")[0]):
            result.failure = full.failure + (f" (after: {first})" if first else "")
        result.finished, result.metrics = False, None
        result.ns_per_day = result.hour_per_ns = result.mdrun_wall_seconds = None
        (run_dir / RESULT_FILE).unlink(missing_ok=True)
        try:
            path = RunStore.save(run_dir, result)
        except NoSpace:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise full.adding(
                f"Not even a record saying so fit, so the run directory {run_dir} was removed: "
                "no record claims the run."
            ) from None
        raise full.adding(f"The run is recorded as failed in {path}.") from None

    @staticmethod
    def load(run_dir: Path) -> RunResult:
        """The run's record, failed by its batch job's end where the scheduler says so."""
        result = read_model(run_dir / RESULT_FILE, RunResult, "a run record", _fix(run_dir))
        job = RunStore.scheduler(run_dir)
        if job is not None and job.failure is not None:
            result.finished, result.failure = False, job.failure
            result.ns_per_day = result.hour_per_ns = result.mdrun_wall_seconds = None
            result.metrics = None
        return result

    @staticmethod
    def scheduler(run_dir: Path) -> SchedulerRecord | None:
        path = run_dir / SCHEDULER_FILE
        if not path.exists():
            return None
        return read_model(path, SchedulerRecord, "a batch job record", _fix(run_dir))

    @staticmethod
    def save_scheduler(run_dir: Path, job: SchedulerRecord) -> Path:
        return write_atomic(run_dir / SCHEDULER_FILE, job.model_dump_json(indent=2) + "\n")

    def job_files(self, run: str) -> tuple[Path, Path]:
        """Where a batch job's script and output go before its run directory exists."""
        return layout.job_files(self.root, run)

    @staticmethod
    def save_breakdown(run_dir: Path, breakdown: Breakdown) -> Path:
        return write_atomic(run_dir / BREAKDOWN_FILE, breakdown.model_dump_json(indent=2) + "\n")

    @staticmethod
    def save_profile(run_dir: Path, outcome: ProfileOutcome) -> None:
        """What a profiler found, in a file of its own beside the record."""
        if outcome.counters is not None:
            write_atomic(run_dir / COUNTERS_FILE, outcome.counters.model_dump_json(indent=2))
        if outcome.trace is not None:
            write_atomic(run_dir / SYSTRACE_FILE, outcome.trace.model_dump_json(indent=2))
        if outcome.instructions is not None:
            text = outcome.instructions.model_dump_json(indent=2)
            write_atomic(run_dir / INSTRUCTIONS_FILE, text)

    @staticmethod
    def instructions(run_dir: Path) -> InstructionCounts | None:
        path = run_dir / INSTRUCTIONS_FILE
        if not path.exists():
            return None
        fix = f"Delete it to compare {run_dir.name} without instruction counts, or run it again."
        return read_model(path, InstructionCounts, "an instruction count", fix)

    @staticmethod
    def system_trace(run_dir: Path) -> SystemTrace | None:
        path = run_dir / SYSTRACE_FILE
        if not path.exists():
            return None
        fix = f"Delete it and run `gmxbench run` again to trace {run_dir.name} anew."
        return read_model(path, SystemTrace, "a rocprof-sys summary", fix)

    @staticmethod
    def counters(run_dir: Path) -> CounterSummary | None:
        path = run_dir / COUNTERS_FILE
        if not path.exists():
            return None
        fix = f"Delete it to compare {run_dir.name} without counters, or run it again."
        return read_model(path, CounterSummary, "a counter summary", fix)

    @staticmethod
    def breakdown(run_dir: Path) -> Breakdown | None:
        path = run_dir / BREAKDOWN_FILE
        if not path.exists():
            return None
        fix = (
            f"Delete it to compare this run on ns/day alone, or run {run_dir.name} again; "
            f"`gmxbench parse {run_dir}` shows what its logs still hold."
        )
        return read_model(path, Breakdown, "a kernel breakdown", fix)

    def resolve(self, spec: str) -> list[Path]:
        """A run directory, a run id, or a group `<build>__<system>__<tag>` (tag, tag-rN)."""
        path = Path(spec)
        for candidate in (path, self.root / spec):
            if (candidate / RESULT_FILE).exists():
                return [candidate]
        found = self.group(path.name)
        if not found:
            raise UsageError(
                f"No runs match {spec!r} in {self.root}: give a run directory, a run id "
                f"(<build>__<system>__<tag>) or a group prefix whose runs are tagged <tag>-r<N>."
            )
        return found

    def group(self, name: str) -> list[Path]:
        """The runs of group `name`: the run of that id and its repeats, in order."""
        pattern = layout.group_pattern(name)
        found = [(m, p) for p in self.root.glob(name + "*") if (m := pattern.fullmatch(p.name))]
        # by repeat number (r2 before r10), the run of that id itself first
        return [p for m, p in sorted(found, key=lambda mp: int(mp[0].group(1) or 0))]

    def runs(self) -> list[Path]:
        """Every run directory here (those holding, or meant to hold, a record)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if layout.is_run_dir(p))

    def status(self, path: Path) -> Status:
        """Finished, failed, running, abandoned, or unreadable (with why)."""
        try:
            result = self.load(path)
        except DamagedRecord as exc:
            return Status(path, "unreadable", None, exc.message)
        if result.finished and result.headline_value() is not None:
            return Status(path, "finished", result)
        if result.failure is not None or result.return_code is not None:
            return Status(path, "failed", result, result.failure or f"exit {result.return_code}")
        return _in_flight(path, result)

    def finished(self, spec: str, emit: Emit = ignore) -> list[Run]:
        """The finished runs `spec` names, with their breakdowns.

        Every other run of the group is named in a `Caution` (failed, abandoned,
        unreadable, still running) and left out; when none is left, a `UsageError` says
        what each one was.
        """
        runs, skipped = [], []
        for path in self.resolve(spec):
            status = self.status(path)
            if status.state == "finished" and status.result is not None:
                try:
                    runs.append(self._run(path, status.result))
                except DamagedRecord as exc:
                    skipped.append(Status(path, "unreadable", status.result, exc.message))
            else:
                skipped.append(status)
        if not runs:
            listed = "; ".join(f"{s.path.name} is {s.state}: {s.why}" for s in skipped)
            hint = CLEAN_HINT if any(s.state == "abandoned" for s in skipped) else ""
            raise UsageError(f"{spec!r} has no finished runs to compare: {listed}.{hint}")
        for status in skipped:
            emit(Caution(f"left out {status.path.name}: {status.state}: {status.why}"))
        return runs

    def ceiling(self, hostname: str) -> RunResult | None:
        """The newest finished bandwidth sweep on `hostname`: its memory ceiling, measured."""
        found = [
            status.result
            for status in map(
                self.status, (p for p in self.runs() if "__bandwidth-sweep-" in p.name)
            )
            if status.state == "finished"
            and status.result is not None
            and status.result.host.hostname == hostname
            and "ro_largest" in (status.result.metrics or {})
        ]
        return max(found, key=lambda r: r.timestamp, default=None)

    def _run(self, path: Path, result: RunResult) -> Run:
        if result.schema_version < 2 and (log := log_file(path)) is not None:
            result.energies = parse_mdlog(log).energies  # recorded before schema 2
        return Run(path, result, self.breakdown(path), self.counters(path), self.instructions(path))


CLEAN_HINT = (
    " An abandoned run's process died without recording an end (SIGKILL, OOM, power "
    "loss); `gmxbench runs clean` removes the container it left and closes its record."
)


def _fix(run_dir: Path) -> str:
    return (
        f"Restore it from a copy, or move the run directory {run_dir} away and run it "
        "again; runs are never repaired by guessing."
    )


def _in_flight(path: Path, result: RunResult) -> Status:
    """A record written at start and not since: still running, or abandoned."""
    alive = result.owner.alive() if result.owner else None
    age = heartbeat_age(path / HEARTBEAT_FILE)
    if alive or (alive is None and age is not None and age < STALE_SECONDS):
        return Status(path, "running", result)
    if alive is False and result.owner is not None:
        why = f"its process ({result.owner.describe()}) ended without recording an end"
    elif age is not None:
        why = f"no sign of life for {age:.0f} s"
    else:
        why = "it was never finished and no process is known to own it"
    return Status(path, "abandoned", result, why)


def inspect(path: Path) -> dict[str, Any]:
    """Whatever `path` holds (md.log, rocprof CSV or folder, run directory) as a JSON dict."""
    if not path.exists():
        raise UsageError(
            f"{path} does not exist. Pass an md.log, a rocprof CSV, a rocprof output "
            "directory or a run directory (with topol.log)."
        )
    if path.is_file():
        return detect.parse_file(path)
    if not path.is_dir():
        raise UsageError(
            f"{path} is neither a file nor a directory. Pass a log, CSV, rocpd .db or folder."
        )
    log = log_file(path)
    if log is not None:
        profiled = (p.profiler.profile_breakdown(path) for p in PLATFORMS)
        gpu = next((b for b in profiled if b is not None), None)
        return {
            "kind": "run",
            "path": str(path),
            **detect.mdlog_dict(log),
            "gpu_breakdown": gpu.model_dump(mode="json") if gpu else None,
        }
    profile = detect.parse_profile_dir(path)
    if profile is not None:
        return profile
    raise UserError(
        f"{path} holds neither a run (topol.log or md.log) nor rocprofv3 output (rocpd "
        "*.db, *kernel_trace.csv, *kernel_stats.csv, results.stats.csv). Pass one of those."
    )
