"""A one-node SLURM cluster from Debian's `slurm-wlm` and `munge` packages, started for the tests.

munged, slurmctld and slurmd run as root on 127.0.0.1 (slurmd as the machine's short host
name, the node), all under one temporary folder: the munge key and socket, slurm.conf,
state, spool, pid files and logs. Nothing under /etc, /run or /var is read or written, and
the two ports are free ones picked at start, so a second cluster (or another SLURM on the
machine) does not clash. Client commands reach this cluster through `Cluster.env`
(SLURM_CONF, and no inherited SLURM_*/SBATCH_*/SQUEUE_* variables); they and the daemons
find munged's socket through `AuthInfo=socket=…` in that slurm.conf.

Without systemd or cgroups, a job's processes are its batch script's process group
(proctrack/pgid): scancel, a time limit and the end of the job signal the group, and a job
ends only once the group is gone, as with proctrack/cgroup on a real cluster, except that a
process that left the group (setsid) is neither signalled nor killed. (proctrack/linuxproc,
`ProctrackType="proctrack/linuxproc"`, signals every descendant instead, setsid or not, but
loses track of a child whose parent exited: the job ends when the script does, and what it
left behind lives on.)

No accounting: `sacct` answers "Slurm accounting storage is disabled". A job's final state,
reason and exit code come from `scontrol show job` (or `squeue -t all`) for MinJobAge after
it ends, and from the job completion log, `Cluster.completions()`.

    with cluster() as c:
        job = c.sbatch("#!/bin/sh\\necho hi\\n", f"--output={c.top}/out")
        c.wait_job(job)["JobState"]  # "COMPLETED"

Leaving the `with` cancels what still runs, stops the daemons, kills what they left behind
(slurmstepd and job processes: they carry this cluster's SLURM_CONF) and removes the folder.
Docker containers a job started are the test's to remove: killing the `docker` client does
not stop its container.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("munge", "sbatch", "squeue", "scontrol", "scancel", "sinfo")

#: Job states after which nothing changes (with --no-requeue: NODE_FAIL is final then).
FINISHED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
     "BOOT_FAIL", "DEADLINE", "PREEMPTED", "SPECIAL_EXIT"}
)  # fmt: skip
#: Node states (sinfo's %T) in which the node takes jobs; `*` would mean "not responding".
UP = frozenset({"idle", "mixed", "allocated"})

#: SlurmdTimeout. Once slurmd stops, the node shows `*` (not responding) after ~8 s and is
#: DOWN, its jobs NODE_FAIL, after ~16 s. Measured: SlurmdTimeout 3, 6, 12 s gave 15, 16,
#: 18 s; MessageTimeout counts more (5 s here; 2 s gave ~10 s).
SLURMD_TIMEOUT = 6
#: KillWait. A cancelled or timed-out job's processes get SIGCONT and SIGTERM, then SIGKILL
#: after max(KillWait, 5 s) (slurmd waits at least 5 s; ~4.7 s measured).
KILL_WAIT = 2

# Variables that change what client commands do (SBATCH_PARTITION, SQUEUE_FORMAT, an
# enclosing job's SLURM_JOB_ID …): none of them reach this cluster's commands.
_FOREIGN = ("SLURM_", "SBATCH_", "SQUEUE_", "SALLOC_", "SRUN_", "SINFO_", "SCANCEL_", "SCONTROL_")
_SBIN = ":/usr/sbin:/sbin"


def _which(name: str) -> str | None:
    return shutil.which(name, path=os.environ.get("PATH", "") + _SBIN)


def missing_binaries() -> list[str]:
    """The daemons and client commands that are not installed (empty when all are)."""
    return [name for name in (*DAEMONS, *CLIENTS) if _which(name) is None]


def require() -> None:
    """Fail under CI (the SLURM tests must run there), skip elsewhere, when anything is missing."""
    absent = missing_binaries()
    if not absent:
        return
    message = f"SLURM is not installed: no {', '.join(absent)} (.ci/setup-tests installs them)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + ": the SLURM tests must run in CI")
    pytest.skip(message)


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports nothing listens on at the moment (the kernel's pick)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def parse_record(line: str) -> dict[str, str]:
    """The `Key=Value Key=Value …` line of `scontrol show job|node -o`. A value may hold
    spaces (Comment=a b c) but not ` word=` (it would be split there)."""
    fields = re.split(r"\s+(?=[A-Za-z][A-Za-z0-9_:/]*=)", line.strip())
    return dict(field.split("=", 1) for field in fields if "=" in field)


def _clean_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}


def _hardware(slurmd: str) -> tuple[str, str]:
    """The node's name and hardware as `slurmd -C` sees them (CPUs, sockets, cores, memory):
    a node configured with more than it has would be drained."""
    out = subprocess.run(
        [slurmd, "-C"], capture_output=True, text=True, check=True, timeout=30,
        env=_clean_environ(),
    ).stdout  # fmt: skip
    first = out.split()
    assert first and first[0].startswith("NodeName="), f"slurmd -C said: {out}"
    hardware = [f for f in first[1:] if not f.startswith("UpTime=")]
    return first[0].removeprefix("NodeName="), " ".join(hardware)


class Cluster:
    """A one-node cluster (see the module's docstring): `start()`, then `stop()`.

    `conf` is its slurm.conf, `env` the environment of its client commands, `node` the
    node's name, `partition` the default partition, `top` the temporary folder (jobs run as
    root and may write there; `top / "jobs"` holds the scripts `sbatch` writes), `logs` the
    daemons' logs. `overrides` replace or add slurm.conf settings (`KillWait="10"`).
    """

    partition = "debug"

    def __init__(self, **overrides: str) -> None:
        # A short path: munged's socket and slurmd's spool sockets must fit in 108 bytes.
        self.top = Path(tempfile.mkdtemp(prefix="gmxs-", dir="/tmp"))
        self.top.chmod(0o755)  # munged wants every folder above its socket searchable
        self.logs = self.top / "log"
        for folder in ("munge", "state", "spool", "log", "jobs"):
            (self.top / folder).mkdir(mode=0o755)
        self.munge_socket = self.top / "munge" / "munge.sock"
        self.conf = self.top / "slurm.conf"
        self.ctld_port, self.slurmd_port = free_ports(2)
        #: The environment of client commands (and of the daemons, hence of jobs).
        self.env = {**_clean_environ(), "SLURM_CONF": str(self.conf)}
        self.node, hardware = _hardware(self._binary("slurmd"))
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._expected: set[str] = set()  # the daemons that should be running
        self._outs: list[IO[bytes]] = []
        self._write_config(hardware, overrides)

    @staticmethod
    def _binary(name: str) -> str:
        found = _which(name)
        assert found is not None, f"{name} is not installed"
        return found

    # -- configuration ---------------------------------------------------------------

    def settings(self) -> dict[str, str]:
        """slurm.conf's settings, except the node and partition lines."""
        top, logs = self.top, self.logs
        return {
            "ClusterName": "gmxbench",
            "SlurmctldHost": f"{self.node}(127.0.0.1)",
            "SlurmctldPort": str(self.ctld_port),
            "SlurmdPort": str(self.slurmd_port),
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={self.munge_socket}",  # client commands read it here too
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "StateSaveLocation": f"{top}/state",
            "SlurmdSpoolDir": f"{top}/spool",
            "SlurmctldPidFile": f"{top}/slurmctld.pid",
            "SlurmdPidFile": f"{top}/slurmd.pid",
            "SlurmctldLogFile": f"{logs}/slurmctld.log",
            "SlurmdLogFile": f"{logs}/slurmd.log",
            "SlurmctldDebug": "info",
            "SlurmdDebug": "info",
            "PlugStackConfig": f"{top}/plugstack.conf",  # not /etc/slurm/plugstack.conf
            "MailProg": "/bin/true",
            # No systemd, no cgroups: a job is its script's process group; no task binding.
            "ProctrackType": "proctrack/pgid",
            "TaskPlugin": "task/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "AccountingStorageType": "accounting_storage/none",  # no slurmdbd, so no sacct
            "JobCompType": "jobcomp/filetxt",  # a line per finished job: completions()
            "JobCompLoc": f"{logs}/jobcomp.log",
            "SwitchType": "switch/none",
            "MpiDefault": "none",
            # Cores are what a job takes; memory is not counted (a job needs no --mem).
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core",
            "SchedulerType": "sched/backfill",
            # Start batch jobs at once: by default (3 s) a job, or a job whose dependency
            # was just met, waits up to 3 s (measured: ~3 s a job in a chain; ~1 s with 0).
            "SchedulerParameters": "batch_sched_delay=0",
            # A node DOWN for not answering takes jobs again once its slurmd registers.
            "ReturnToService": "2",
            "SlurmdTimeout": str(SLURMD_TIMEOUT),
            "SlurmctldTimeout": "10",
            # The RPC timeout: 2 s would notice a stopped slurmd sooner (~10 s, not ~16 s)
            # but leave a busy machine little slack.
            "MessageTimeout": "5",
            "KillWait": str(KILL_WAIT),
            # Finished jobs stay known to `squeue -t all` and `scontrol show job` an hour.
            "MinJobAge": "3600",
            "InactiveLimit": "0",
        }

    def _write_config(self, hardware: str, overrides: dict[str, str]) -> None:
        key = self.top / "munge" / "munge.key"
        key.touch(mode=0o600)  # munged refuses a key others may read
        key.write_bytes(os.urandom(1024))
        (self.top / "plugstack.conf").write_text("")
        lines = [f"{k}={v}" for k, v in {**self.settings(), **overrides}.items()]
        lines += [
            f"NodeName={self.node} NodeAddr=127.0.0.1 {hardware} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE"
            " State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n")

    # -- daemons ---------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = (self.logs / f"{name}.out").open("ab")  # what comes before the log file opens
        self._outs.append(out)
        self._procs[name] = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=self.env, start_new_session=True,
        )  # fmt: skip
        self._expected.add(name)

    def start(self, timeout: float = 60) -> Cluster:
        """Start munged, slurmctld and slurmd; return when the node takes jobs (~1 s)."""
        munge = self.top / "munge"
        self._spawn("munged", [
            self._binary("munged"), "--foreground",
            f"--key-file={munge / 'munge.key'}", f"--socket={self.munge_socket}",
            f"--pid-file={munge / 'munged.pid'}", f"--log-file={self.logs / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        ])  # fmt: skip
        self._wait(self.munge_socket.exists, "munged's socket", timeout)
        self._spawn("slurmctld", [self._binary("slurmctld"), "-D", "-f", str(self.conf)])
        self._wait(
            lambda: self.run("scontrol", "ping", check=False).returncode == 0,
            "slurmctld to answer", timeout,
        )  # fmt: skip
        self.start_slurmd(timeout)
        return self

    def start_slurmd(self, timeout: float = 60) -> None:
        """Start slurmd (again); return once it registered and the node takes jobs (after
        a failure: ReturnToService=2 puts it back at once; its orphaned jobs are killed)."""
        slurmd = self._procs.get("slurmd")
        assert slurmd is None or slurmd.poll() is not None, "slurmd runs already"
        before = self.node_info().get("SlurmdStartTime")
        self._spawn("slurmd", [self._binary("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])

        def registered() -> bool:
            info = self.node_info()
            return info.get("SlurmdStartTime") != before and self.node_state() in UP

        self._wait(registered, f"slurmd on {self.node} to register and take jobs", timeout)

    def stop_slurmd(self, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        """Signal slurmd (SIGTERM: an orderly stop; SIGKILL: a crash) and wait for it to
        end. Its jobs' slurmstepd and processes go on; slurmctld notices ~15 s later."""
        self._expected.discard("slurmd")
        proc = self._procs.get("slurmd")
        assert proc is not None and proc.poll() is None, "slurmd does not run"
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def log_tails(self, chars: int = 3000) -> str:
        """The end of every daemon's log (and output), for a failure message."""
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-chars:]}"
            for path in sorted(self.logs.glob("*"))
        )

    def _wait(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        """Poll `ready` every 0.2 s; fail with the logs when a daemon that should run
        exited, or after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [n for n in sorted(self._expected) if self._procs[n].poll() is not None]
            if dead:
                pytest.fail(f"SLURM: {', '.join(dead)} exited, waiting for {what}\n"
                            f"{self.log_tails()}")  # fmt: skip
            if time.monotonic() > deadline:
                pytest.fail(f"SLURM: waited {timeout} s for {what}\n{self.log_tails()}")
            time.sleep(0.2)

    # -- client commands -------------------------------------------------------------

    def run(
        self, *argv: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """A client command (`squeue`, `scontrol`, …) against this cluster; with `check`,
        a non-zero exit fails the test with its output."""
        done = subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and done.returncode != 0:
            pytest.fail(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done

    def sbatch(self, script: str | Path, *options: str, args: Sequence[str] = ()) -> str:
        """Submit `script` (a Path, or a script's text: a str starting with `#!`) with
        `--parsable` and `options`, `args` after it (the script's $1 …); the job's id."""
        if isinstance(script, str):
            if not script.startswith("#!"):
                raise ValueError(f"not a script's text (no #! line), pass a Path: {script[:60]!r}")
            fd, name = tempfile.mkstemp(prefix="job-", suffix=".sh", dir=self.top / "jobs")
            with os.fdopen(fd, "w") as f:
                f.write(script)
            script = Path(name)
        done = self.run("sbatch", "--parsable", *options, str(script), *args)
        return done.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        """A job's fields from `scontrol show job -o` (JobState, Reason, ExitCode, NodeList,
        …); empty when slurmctld does not know the job (never did, or purged)."""
        done = self.run("scontrol", "show", "job", "-o", job_id, check=False)
        lines = done.stdout.splitlines()
        return parse_record(lines[0]) if done.returncode == 0 and lines else {}

    def wait_job(
        self, job_id: str, states: Iterable[str] = FINISHED, timeout: float = 60
    ) -> dict[str, str]:
        """Poll until the job's JobState is one of `states` (default: finished); its fields."""
        wanted, last = frozenset(states), {}

        def reached() -> bool:
            nonlocal last
            last = self.job(job_id)
            return last.get("JobState") in wanted

        self._wait(reached, f"job {job_id} to be {'/'.join(sorted(wanted))}", timeout)
        return last

    def node_info(self) -> dict[str, str]:
        """The node's fields from `scontrol show node -o` (State, Reason, SlurmdStartTime, …)."""
        done = self.run("scontrol", "show", "node", "-o", self.node, check=False)
        lines = done.stdout.splitlines()
        return parse_record(lines[0]) if done.returncode == 0 and lines else {}

    def node_state(self) -> str:
        """sinfo's state of the node: `idle`, `allocated`, `mixed`, `down*`, `allocated*`
        (`*`: slurmd does not answer), `drained`, …"""
        done = self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T", check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    def wait_node(self, states: Iterable[str], timeout: float = 60) -> str:
        """Poll until the node's `node_state()` is one of `states`; that state."""
        wanted = frozenset(states)
        self._wait(lambda: self.node_state() in wanted,
                   f"node {self.node} to be {'/'.join(sorted(wanted))}", timeout)  # fmt: skip
        return self.node_state()

    def wait_idle(self, timeout: float = 60) -> None:
        """Wait until the node runs no job and takes new ones."""
        self.wait_node({"idle"}, timeout)

    def completions(self) -> list[dict[str, str]]:
        """The job completion log (jobcomp/filetxt): a record per finished job, in order
        (JobId, Name, JobState, ExitCode, NodeList, StartTime, EndTime, …)."""
        path = self.logs / "jobcomp.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [parse_record(line) for line in lines if line.strip()]

    # -- the end ---------------------------------------------------------------------

    def leftovers(self) -> list[int]:
        """Processes with this cluster's SLURM_CONF in their environment: its daemons,
        slurmstepd and the jobs' processes (those that kept their environment)."""
        needle = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
        return found

    def stop(self) -> None:
        """Cancel what still runs, stop the daemons, kill what is left, remove the folder."""
        self._expected.clear()
        if all(self._procs.get(n) is not None and self._procs[n].poll() is None for n in DAEMONS):
            with contextlib.suppress(subprocess.TimeoutExpired):
                jobs = self.run("squeue", "-h", "-o", "%i", check=False).stdout.split()
                if jobs:
                    self.run("scancel", *jobs, check=False)
                    deadline = time.monotonic() + max(KILL_WAIT, 5) + 5
                    while (
                        time.monotonic() < deadline
                        and self.run("squeue", "-h", "-o", "%i", check=False).stdout.strip()
                    ):
                        time.sleep(0.2)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for pid in self.leftovers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for out in self._outs:
            out.close()
        shutil.rmtree(self.top, ignore_errors=True)


@contextlib.contextmanager
def cluster(**overrides: str) -> Iterator[Cluster]:
    """A started `Cluster`, stopped and removed on leaving; skips (fails under CI=true)
    when SLURM or munge is not installed. `overrides`: slurm.conf settings."""
    require()
    c = Cluster(**overrides)
    try:
        c.start()
        yield c
    finally:
        c.stop()
