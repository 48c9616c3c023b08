"""The SLURM executor: every run a batch job, waited for, collected from a shared folder.

Each run is submitted with `sbatch` to the partition, account and constraints the
settings, the recipe or a matrix's GPU type name, and its job runs the same `gmxbench
run` on its node (`--executor local --no-database`), with this process's settings
written into the job script as `ORCH_*` variables: never the secrets, since this host
posts the webhook and indexes the run. Results land in the results folder, which the
nodes share. Chains keep their order with `--dependency=afterany:<previous job>`, so a
bench's pairs still interleave.

A job is named `gmxbench:<run id>`. An orchestrator stopped and started again with the
same tag finds its jobs by that name (queued, running, or ended) instead of submitting
them twice, and takes runs that already ended as they are. The scheduler has the last
word on a job that did not complete (cancelled, timed out, node lost): the run is
recorded as unfinished with SLURM's state and reason (`records.SchedulerRecord`), whatever
the node's process wrote before or after.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.core.errors import UserError
from orchestrator.core.events import Caution, Emit, Message, RunNext, Step, ignore
from orchestrator.core.files import new_mode
from orchestrator.core.settings import Settings, SlurmResources, environment_of
from orchestrator.engine import Client
from orchestrator.runs import runner
from orchestrator.runs.executors.base import Chain, Executor, Job
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.runs.recipe import load_system
from orchestrator.runs.runner import RunEnded, RunStarted
from orchestrator.store import database
from orchestrator.store.layout import RESULT_FILE, SCHEDULER_LOG, SCHEDULER_SCRIPT
from orchestrator.store.records import (
    MICROBENCH_KIND,
    ImageRef,
    RunResult,
    SchedulerRecord,
    placement,
)
from orchestrator.store.runstore import RunStore, log_tail

JOB_PREFIX = "gmxbench:"
#: States of a job that has not ended yet (squeue's `%T`).
ACTIVE = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
    "RESV_DEL_HOLD",
})  # fmt: skip
#: What each end that is not COMPLETED means, for the run's record.
ENDS = {
    "CANCELLED": "was cancelled",
    "TIMEOUT": "reached its time limit",
    "NODE_FAIL": "lost its node",
    "FAILED": "failed",
    "OUT_OF_MEMORY": "ran out of memory",
    "PREEMPTED": "was preempted",
    "BOOT_FAIL": "could not boot its node",
    "DEADLINE": "missed its deadline",
}
#: Environment a job's script passes on from the submitting process besides `ORCH_*`.
PASSED_ON = ("PATH", "HOME", "LANG", "DOCKER_HOST", "DOCKER_CONFIG", "VIRTUAL_ENV", "PYTHONPATH")
#: What sbatch itself runs with, besides SLURM's variables (`Slurm.submit`).
BARE = ("PATH", "HOME", "LANG", "USER", "LOGNAME", "TMPDIR")
HINT = (
    "Install SLURM's client commands (Debian: `apt-get install slurm-client`) and point "
    "SLURM_CONF at the cluster's slurm.conf, or run with --executor local."
)


@dataclass(frozen=True)
class JobState:
    """One job as SLURM reports it: queued, running or ended."""

    job_id: str
    name: str
    state: str
    reason: str | None = None
    exit_code: str | None = None
    node: str | None = None

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


class Slurm:
    """SLURM's client commands (`sbatch`, `squeue`, `scontrol`, `sacct`, `scancel`)."""

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout

    def _run(
        self, argv: list[str], *, check: bool = True, env: dict[str, str] | None = None
    ) -> str:
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=self.timeout, check=False, env=env
            )
        except FileNotFoundError:
            raise UserError(
                f"`{argv[0]}` is not on PATH: the SLURM executor needs it. {HINT}"
            ) from None
        except subprocess.TimeoutExpired:
            raise UserError(
                f"`{shlex.join(argv[:3])} …` did not answer within {self.timeout:.0f} s: is "
                "slurmctld up? (`scontrol ping`)"
            ) from None
        if check and proc.returncode != 0:
            why = (proc.stderr or proc.stdout).strip().splitlines()
            raise UserError(
                f"`{shlex.join(argv[:2])} …` failed (exit {proc.returncode}): "
                f"{why[-1] if why else 'no message'}. {HINT}"
            )
        return proc.stdout if proc.returncode == 0 else ""

    def submit(self, args: list[str], script: Path) -> str:
        """The id of the job `sbatch` queued.

        sbatch runs with a bare environment (the command path, home, locale and SLURM's own
        variables), which `--export=ALL` hands to the job: the job script sets the rest, and
        nothing else of this process (a webhook URL in ORCH_WEBHOOK_URL) reaches the job or
        the controller's state. `--export=NONE` would do the same by running the user's
        login shell on the node (a second per job here); 22.05 has no `NIL`.
        """
        bare = {k: v for k, v in os.environ.items()
                if k in BARE or k.startswith(("SLURM_", "SBATCH_"))}  # fmt: skip
        out = self._run(["sbatch", "--parsable", *args, str(script)], env=bare)
        return out.strip().split(";")[0]

    def queue(self, names: Sequence[str]) -> dict[str, JobState]:
        """The newest job of each name that SLURM still knows, ended ones included."""
        if not names:
            return {}
        out = self._run(
            ["squeue", "--noheader", "--states=all", f"--name={','.join(names)}",
             "--format=%i|%j|%T|%r|%N"],
        )  # fmt: skip
        found: dict[str, JobState] = {}
        for line in out.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 5:
                continue
            job_id, name, state, reason, node = parts
            job = JobState(job_id, name, state, _none(reason), node=_none(node))
            if name not in found or int(job_id) > int(found[name].job_id):
                found[name] = job
        return found

    def final(self, job_id: str, name: str) -> JobState | None:
        """How an ended job ended (state, reason, exit code, node): from the controller
        while it remembers the job (`MinJobAge`), else from accounting if the site has it."""
        fields = _fields(self._run(["scontrol", "--oneliner", "show", "job", job_id], check=False))
        if fields.get("JobState"):
            return JobState(
                job_id, name, fields["JobState"], _none(fields.get("Reason", "")),
                _none(fields.get("ExitCode", "")), _none(fields.get("NodeList", "")),
            )  # fmt: skip
        out = self._run(
            ["sacct", "--noheader", "--parsable2", "--allocations", f"--jobs={job_id}",
             "--format=State,ExitCode,NodeList,Reason"],
            check=False,
        )  # fmt: skip
        for line in out.splitlines():
            state, exit_code, node, reason = [*line.split("|"), "", "", ""][:4]
            if state:
                words = state.split()  # "CANCELLED by 0"
                why = " ".join(words[1:]) or reason
                return JobState(job_id, name, words[0], _none(why), _none(exit_code), _none(node))
        return None

    def cancel(self, job_ids: Sequence[str]) -> None:
        if job_ids:
            self._run(["scancel", *job_ids], check=False)


def _none(text: str) -> str | None:
    text = text.strip()
    return None if text in ("", "(null)", "None", "n/a") else text


def _fields(text: str) -> dict[str, str]:
    """`Key=value` pairs of one `scontrol --oneliner` line (values may hold spaces)."""
    pairs = re.findall(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(.*?)(?=\s[A-Za-z][A-Za-z0-9_:/]*=|$)",
                       text.strip())  # fmt: skip
    return {key: value for key, value in pairs}


def job_name(run_id: str) -> str:
    return JOB_PREFIX + run_id


@dataclass
class _Slot:
    """One run of a chain while the executor follows it."""

    job: Job
    run_id: str
    job_id: str | None = None
    state: str | None = None
    node: str | None = None
    submitted: str | None = None
    result: RunResult | None = None
    #: Cancelled by this executor after a failure elsewhere: not a run if it never started.
    withdrawn: bool = False
    done: bool = False
    seen: set[str] = field(default_factory=set)


class SlurmExecutor(Executor):
    """Runs as SLURM batch jobs; see the module's docstring."""

    name = "slurm"

    def __init__(self, client: Client, settings: Settings, slurm: Slurm | None = None) -> None:
        super().__init__(client, settings)
        self.slurm = slurm or Slurm()
        self.store = RunStore(self.settings.results_dir)

    def run(
        self, chains: Sequence[Chain], emit: Emit = ignore, *, stop_on_failure: bool = False
    ) -> list[list[RunResult]]:
        slots = [[self._slot(job) for job in chain] for chain in chains]
        known = self.slurm.queue([job_name(s.run_id) for chain in slots for s in chain])
        try:
            for chain in slots:
                previous: _Slot | None = None
                for slot in chain:
                    self._start(slot, known.get(job_name(slot.run_id)), previous, emit)
                    previous = slot
            self._wait([s for chain in slots for s in chain], emit, stop_on_failure)
        except KeyboardInterrupt:
            waiting = [s for chain in slots for s in chain if s.job_id and not s.done]
            if waiting:
                emit(Caution(
                    f"{len(waiting)} SLURM jobs go on without this process (jobs "
                    f"{', '.join(s.job_id or '' for s in waiting)}): the same command with the "
                    "same --tag collects them when they end; `scancel` stops them"
                ))  # fmt: skip
            raise
        return [[s.result for s in chain if s.result is not None] for chain in slots]

    def preview(self, job: Job) -> dict[str, Any]:
        """The `sbatch` command and job script a run would get, and the container its node
        would start (planned here, on this host's engine)."""
        slot = self._slot(job)
        script, output = self.store.job_files(slot.run_id)
        return {
            "sbatch": ["sbatch", "--parsable", *self._args(slot, output), str(script)],
            "job_script": self._script(slot),
            "on_the_node": super().preview(job),
        }

    # Submitting -------------------------------------------------------------------------

    def _slot(self, job: Job) -> _Slot:
        if not job.request.tag:
            raise UserError("A run handed to the SLURM executor needs its tag (internal).")
        return _Slot(job, runner.run_id_of(self.client, self.settings, job.request))

    def _start(
        self, slot: _Slot, known: JobState | None, previous: _Slot | None, emit: Emit
    ) -> None:
        """Take a run that already ended, follow its job if SLURM has one, else submit it."""
        run_dir = self.store.path(slot.run_id)
        if known is not None and known.active:
            slot.job_id, slot.state = known.job_id, known.state
            emit(Step(f"{slot.job.label}: SLURM job {known.job_id} is {known.state.lower()} "
                      "(submitted before): following it"))  # fmt: skip
            return
        if (run_dir / RESULT_FILE).exists():
            status = self.store.status(run_dir)
            if status.state in ("finished", "failed") and status.result is not None:
                slot.result, slot.done = status.result, True
                emit(Message(f"{slot.run_id} ended before ({status.state}): taken as it is"))
                return
            if known is not None:  # ended while we were away: collect it below
                slot.job_id = known.job_id
                return
            raise UserError(
                f"Run directory {run_dir} exists and no SLURM job of it is known; runs are never "
                "overwritten. Pick another --tag, or move the run away."
            )
        slot.job_id = self._submit(slot, previous)
        slot.submitted = datetime.now(UTC).isoformat(timespec="seconds")
        emit(Step(f"{slot.job.label}: submitted as SLURM job {slot.job_id}"))

    def _submit(self, slot: _Slot, previous: _Slot | None) -> str:
        script, output = self.store.job_files(slot.run_id)
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(self._script(slot))
        script.chmod(new_mode(executable=True))
        args = self._args(slot, output)
        if previous is not None and previous.job_id and not previous.done:
            args.append(f"--dependency=afterany:{previous.job_id}")
        return self.slurm.submit(args, script)

    def _resources(self, slot: _Slot) -> SlurmResources:
        system = load_system(slot.job.request.system, self.settings.recipes_dirs)
        return self.settings.slurm.narrowed(system.slurm).narrowed(slot.job.resources)

    def _args(self, slot: _Slot, output: Path) -> list[str]:
        wanted = self._resources(slot)
        minutes = wanted.time_limit_minutes or math.ceil(slot.job.request.timeout / 60) + 10
        args = [
            f"--job-name={job_name(slot.run_id)}",
            f"--comment=gmxbench run {slot.run_id}",
            f"--output={output}",
            f"--chdir={self.store.root.resolve()}",
            "--export=ALL",  # sbatch's own bare environment (`Slurm.submit`): no login shell
            "--no-requeue",  # a lost node ends the run as failed, never silently reruns it
            "--nodes=1",
            "--ntasks=1",
            f"--cpus-per-task={self.settings.jobs}",
            f"--time={minutes}",
        ]
        for flag in ("partition", "account", "qos", "constraint", "gres"):
            if (value := getattr(wanted, flag)) is not None:
                args.append(f"--{flag}={value}")
        if wanted.exclusive:
            args.append("--exclusive")
        return args + list(self.settings.slurm.extra_args)

    def _script(self, slot: _Slot) -> str:
        """The job: `gmxbench run` of the same request, with these settings, on its node."""
        req = slot.job.request
        python = self.settings.slurm.python or sys.executable
        argv = [python, "-m", "orchestrator", "run", req.build, req.system or "", req.tag or "",
                "--executor", "local", "--no-database", "--profile", req.profile,
                "--device", str(req.device), "--timeout", str(req.timeout)]  # fmt: skip
        if req.steps is not None:
            argv += ["--steps", str(req.steps)]
        if req.cpu_only:
            argv.append("--cpu-only")
        if req.inputs_dir is not None:
            argv += ["--inputs-dir", str(req.inputs_dir.resolve())]
        if req.mdrun_args:
            argv += ["--", *req.mdrun_args]
        env = {k: os.environ[k] for k in PASSED_ON if k in os.environ}
        env |= environment_of(self.settings, frozenset({"executor", "slurm"}))
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
        return (
            f"#!/bin/sh\n# gmxbench run {slot.run_id}: a SLURM job written by "
            f"{socket.gethostname()} at {datetime.now(UTC).isoformat(timespec='seconds')}.\n"
            "# The node runs what `--executor local` runs, with the submitter's settings\n"
            "# (secrets are never written here: the submitting host posts and indexes).\n"
            f"{exports}exec {shlex.join(argv)}\n"
        )

    # Waiting and collecting ---------------------------------------------------------------

    def _wait(self, slots: list[_Slot], emit: Emit, stop_on_failure: bool) -> None:
        poll = self.settings.slurm.poll_seconds
        while waiting := [s for s in slots if not s.done]:
            states = self.slurm.queue([job_name(s.run_id) for s in waiting])
            failed = False
            for slot in waiting:
                now = states.get(job_name(slot.run_id))
                if now is not None and now.job_id == slot.job_id and now.active:
                    self._progress(slot, now, emit)
                    continue
                self._collect(slot, now, emit)
                failed |= slot.result is not None and not slot.result.finished
            if failed and stop_on_failure:
                self._withdraw([s for s in slots if not s.done], emit)
            if any(not s.done for s in slots):
                time.sleep(poll)

    def _progress(self, slot: _Slot, now: JobState, emit: Emit) -> None:
        if now.state == slot.state:
            return
        slot.state, slot.node = now.state, now.node or slot.node
        if now.state == "RUNNING":
            emit(RunNext(f"{slot.job.label}: running on {now.node} (SLURM job {now.job_id})",
                         slot.job.folded))  # fmt: skip
            record = self.store.path(slot.run_id) / RESULT_FILE
            if record.exists():
                emit(RunStarted(f"{slot.run_id} started", self.store.load(record.parent)))

    def _withdraw(self, slots: list[_Slot], emit: Emit) -> None:
        """A run failed and the caller stops there: cancel the jobs still to come."""
        ids = [s.job_id for s in slots if s.job_id and not s.withdrawn]
        if ids:
            emit(Caution(f"a run did not finish: cancelling SLURM jobs {', '.join(ids)}"))
            self.slurm.cancel(ids)
        for slot in slots:
            slot.withdrawn = True

    def _collect(self, slot: _Slot, seen: JobState | None, emit: Emit) -> None:
        """The job ended: its record, failed by the scheduler's word where it did not complete."""
        assert slot.job_id is not None
        end = self.slurm.final(slot.job_id, job_name(slot.run_id)) or seen
        if end is None:
            gone = "SLURM no longer knows the job (MinJobAge) and keeps no accounting"
            end = JobState(slot.job_id, job_name(slot.run_id), "UNKNOWN", gone)
        slot.done = True
        run_dir = self.store.path(slot.run_id)
        started = (run_dir / RESULT_FILE).exists()
        if not started and slot.withdrawn and end.state == "CANCELLED":
            return  # withdrawn before it began: it was never a run
        if not started:
            run_dir.mkdir(parents=True, exist_ok=True)
            self.store.save(run_dir, self._never_started(slot, end))
        script, output = self.store.job_files(slot.run_id)
        for source, name in ((output, SCHEDULER_LOG), (script, SCHEDULER_SCRIPT)):
            if source.exists():
                shutil.move(source, run_dir / name)
        record = SchedulerRecord(
            job_id=end.job_id, job_name=end.name, state=end.state, reason=end.reason,
            exit_code=end.exit_code, node=end.node or slot.node, submitted=slot.submitted,
            ended=datetime.now(UTC).isoformat(timespec="seconds"),
            failure=None if end.state == "COMPLETED" else self._failure(end, run_dir, started),
        )  # fmt: skip
        self.store.save_scheduler(run_dir, record)
        slot.result = result = self.store.load(run_dir)
        database.record_quietly(self.settings, run_dir, result, emit)
        tail = "" if result.finished else log_tail(run_dir)
        emit(RunEnded(f"{slot.run_id} ended (SLURM job {end.job_id} {end.state})", result, tail))

    def _failure(self, end: JobState, run_dir: Path, started: bool) -> str:
        what = ENDS.get(end.state, f"ended {end.state}")
        where = f" on {end.node}" if end.node else ""
        text = f"SLURM job {end.job_id}{where} {what} ({end.state}"
        text += f", {end.reason}" if end.reason and end.reason != "None" else ""
        text += f", exit {end.exit_code})" if end.exit_code else ")"
        if not started:
            return text + " before the run started"
        own = self.store.status(run_dir)
        if own.why:
            text += f"; the run itself said: {own.why}"
        return text

    def _never_started(self, slot: _Slot, end: JobState) -> RunResult:
        req = slot.job.request
        system = load_system(req.system, self.settings.recipes_dirs)
        return RunResult(
            run_id=slot.run_id, build=slot.run_id.split("__")[0],
            system=system.name, tag=req.tag or "", platform=self.settings.platform,
            timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
            profile_mode=req.profile, image=ImageRef(tag=req.build, id=""),
            host=HostInfo(hostname=end.node or "(no node)", kernel=""), command=[],
            kind=MICROBENCH_KIND if isinstance(system, ResolvedMicrobench) else "gromacs",
            batch_job=end.job_id, **placement(slot.run_id, req.tag or ""),
        )  # fmt: skip
