"""The run store: the one module that knows how runs lie on disk (asv's `results.py`).

    results/<build>__<system>__<tag>/      one run (`run_id`), mounted at /run
        result.json                        `RunResult`, written at start and at the end
        kernel_result.json                 the per-category breakdown of a finished run
        .gmxbench-heartbeat                touched by the runner while the run is on
        scheduler.json, scheduler.log      a batch job's end as its scheduler saw it
        run.sh, topol.*, stdout.log, stderr.log, inputs/, and what the profiler wrote
    results/.scheduler/<run id>.sh|.out    a batch job's script and output until it ends
    results/.asm/<candidate group>.json    a bench's changed kernels' code diffs (`codegen.asm`)

Repeats of one measurement are a group: tags `<tag>-r1`, `<tag>-r2`, …; the group is
named by `<build>__<system>__<tag>`. A run that did not finish is recorded with
`finished: false`, its failure and no ns/day: a failed run is never a number. A record
whose process died before it could say so is *abandoned* (`status`), and a record that
cannot be read is *unreadable*; readers list both and compare neither.
Everything else (runner, bench, compare, the `parse` command) asks this module.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from orchestrator.core.errors import NoSpace, UsageError, UserError, space_for
from orchestrator.core.events import Caution, Emit, ignore
from orchestrator.core.files import DamagedRecord, read_model, write_atomic
from orchestrator.core.idents import LlvmCommit
from orchestrator.parsers import detect
from orchestrator.parsers.breakdown import KernelBreakdown
from orchestrator.parsers.kernelbench import MetricValue
from orchestrator.parsers.mdlog import parse_mdlog
from orchestrator.parsers.rocprof_compute import CounterSummary
from orchestrator.parsers.rocprof_sys import SystemTrace
from orchestrator.platforms import PLATFORMS
from orchestrator.platforms.base import ProfileOutcome
from orchestrator.runs.hostinfo import HostInfo, HostNoise
from orchestrator.runs.liveness import STALE_SECONDS, Owner, heartbeat_age

RESULT_FILE = "result.json"
KERNEL_FILE = "kernel_result.json"
#: The codegen of the image the run ran (`codegen.collect`), for provenance.
CODEGEN_FILE = "codegen.json"
SCRIPT_FILE = "run.sh"
INPUTS_DIR = "inputs"
STDOUT_FILE, STDERR_FILE = "stdout.log", "stderr.log"
#: run.sh writes the start of input preparation and of mdrun here (container clock).
TIMES_FILE = ".gmxbench-times"
#: Touched every few seconds while the run's process lives (`liveness.heartbeat`).
HEARTBEAT_FILE = ".gmxbench-heartbeat"
#: mdrun's `-deffnm`: md.log is `topol.log`, the run input `topol.tpr`.
DEFFNM = "topol"
#: The md.log of a run directory: ours, or mdrun's default name in a run made by hand.
LOG_NAMES = (f"{DEFFNM}.log", "md.log")
#: A batch job's end as its scheduler saw it, and the job's own output (`SchedulerRecord`).
SCHEDULER_FILE, SCHEDULER_LOG = "scheduler.json", "scheduler.log"
#: rocprof-compute's counters per kernel, and rocprof-sys's files and top functions.
COUNTERS_FILE, SYSTRACE_FILE = "counters.json", "systrace.json"
#: Job scripts and outputs of runs handed to a batch system, beside the run directories.
SCHEDULER_DIR = ".scheduler"
#: Code diffs of a bench's changed kernels, kept for the report after the images go.
ASM_DIR = ".asm"
#: Where a run directory is mounted in its container.
CONTAINER_DIR = "/run"
#: The tag that marks the baseline runs of a build and system.
BASELINE_TAG = "kernel-baseline"


class ImageRef(BaseModel):
    tag: str
    id: str
    labels: dict[str, str] = Field(default_factory=dict)


class RunResult(BaseModel):
    """One mdrun (or kernel benchmark) of one build, with everything needed to trust or
    re-run it.

    Schema 2 added `energies`; `RunStore.finished` reads them from md.log for schema 1.
    Schema 3 added kernel runs (`kind`, `metrics`, `headline`, `facts`).
    """

    schema_version: int = 3
    run_id: str
    build: str
    system: str
    tag: str
    platform: str
    timestamp: str
    finished: bool = False
    failure: str | None = None
    return_code: int | None = None
    duration_seconds: float | None = None
    gmx_version: str | None = None
    ns_per_day: float | None = None
    hour_per_ns: float | None = None
    mdrun_wall_seconds: float | None = None
    setup_seconds: float | None = None
    profile_mode: str = "none"
    llvm_commit: LlvmCommit | None = None
    compiler: str | None = None
    compiler_version: str | None = None
    image: ImageRef
    host: HostInfo
    command: list[str]
    mdrun_args: list[str] = Field(default_factory=list)
    steps: int | None = None
    atoms: int | None = None
    ntomp: int | None = None
    device: int | None = None
    pme_grid: list[int] | None = None
    coulomb_cutoff: float | None = None
    #: Average energies of the run (kJ/mol) from md.log, for the validity check.
    energies: dict[str, float] | None = None
    #: The process that ran it: tells a run in progress from an abandoned one.
    owner: Owner | None = None
    #: A GPU build run on the host CPU only (`--cpu-only`): its numbers are host code's.
    cpu_only: bool = False
    #: What else the machine ran meanwhile (other processes, steal, containers).
    noise: HostNoise | None = None
    #: The batch job that ran it (SLURM_JOB_ID on its node); its end is `SchedulerRecord`.
    batch_job: str | None = None
    #: What a counters or systrace profiler did (its findings: `COUNTERS_FILE`, `SYSTRACE_FILE`).
    profile: ProfileOutcome | None = None
    #: mdrun on a GROMACS system, or a kernel benchmark (`runs.kernel_recipe`).
    kind: Literal["gromacs", "kernel"] = "gromacs"
    #: A kernel run's numbers, each with the unit and direction its recipe declares.
    metrics: dict[str, MetricValue] | None = None
    #: The metric a kernel run's verdict leads with.
    headline: str | None = None
    #: What a kernel run found that is not a number (device, API, best configuration).
    facts: dict[str, str] = Field(default_factory=dict)

    def headline_value(self) -> float | None:
        """ns/day for mdrun, the recipe's headline metric for a kernel run."""
        if self.kind == "kernel":
            metric = (self.metrics or {}).get(self.headline or "")
            return metric.value if metric is not None else None
        return self.ns_per_day


class SchedulerRecord(BaseModel):
    """A run's batch job as its scheduler saw it, written by the host that submitted it.

    The scheduler has the last word: a job that did not complete (cancelled, timed out,
    its node lost) makes its run failed with `failure`, whatever its own record says, since
    the node's process may have written that record before or after the job was lost.
    """

    executor: Literal["slurm"] = "slurm"
    job_id: str
    job_name: str
    #: The scheduler's final state (COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, …).
    state: str
    reason: str | None = None
    exit_code: str | None = None
    node: str | None = None
    submitted: str | None = None
    ended: str | None = None
    #: Why the run does not count, in the scheduler's words; None when the job completed.
    failure: str | None = None


RunState = Literal["finished", "failed", "running", "abandoned", "unreadable"]


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
    `--profile=counters`, its hardware counters per kernel."""

    path: Path
    result: RunResult
    breakdown: KernelBreakdown | None
    counters: CounterSummary | None = None


def run_id(build: str, system: str, tag: str) -> str:
    safe_system = system.replace(":", "-").replace("/", "-")
    return f"{build}__{safe_system}__{tag}"


def repeat_tag(tag: str, repeat: int, repeats: int) -> str:
    """The tag of repeat `repeat` (1-based) of `repeats`: the tag itself for a single run."""
    return tag if repeats == 1 else f"{tag}-r{repeat}"


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
        folder = self.root / SCHEDULER_DIR
        return folder / f"{run}.sh", folder / f"{run}.out"

    @staticmethod
    def save_breakdown(run_dir: Path, breakdown: KernelBreakdown) -> Path:
        return write_atomic(run_dir / KERNEL_FILE, breakdown.model_dump_json(indent=2) + "\n")

    @staticmethod
    def save_profile(run_dir: Path, outcome: ProfileOutcome) -> None:
        """What a profiler found, in a file of its own beside the record."""
        if outcome.counters is not None:
            write_atomic(run_dir / COUNTERS_FILE, outcome.counters.model_dump_json(indent=2))
        if outcome.trace is not None:
            write_atomic(run_dir / SYSTRACE_FILE, outcome.trace.model_dump_json(indent=2))

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
    def breakdown(run_dir: Path) -> KernelBreakdown | None:
        path = run_dir / KERNEL_FILE
        if not path.exists():
            return None
        fix = (
            f"Delete it to compare this run on ns/day alone, or run {run_dir.name} again; "
            f"`gmxbench parse {run_dir}` shows what its logs still hold."
        )
        return read_model(path, KernelBreakdown, "a kernel breakdown", fix)

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
        pattern = re.compile(re.escape(name) + r"(?:-r(\d+))?")
        found = [(m, p) for p in self.root.glob(name + "*") if (m := pattern.fullmatch(p.name))]
        # by repeat number (r2 before r10), the run of that id itself first
        return [p for m, p in sorted(found, key=lambda mp: int(mp[0].group(1) or 0))]

    def runs(self) -> list[Path]:
        """Every run directory here (those holding, or meant to hold, a record)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.is_dir() and "__" in p.name)

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
        return Run(path, result, self.breakdown(path), self.counters(path))


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
        profiled = (p.profile_breakdown(path) for p in PLATFORMS)
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


def asm_diffs_path(root: Path, candidate_group: str) -> Path:
    return root / ASM_DIR / f"{candidate_group}.json"
