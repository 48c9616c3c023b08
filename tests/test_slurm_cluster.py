"""The one-node SLURM cluster the executor tests start (tests/slurm.py): jobs run, their
output lands, `scancel` cancels, and a node whose slurmd stops fails its job and comes back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import slurm


@pytest.fixture(scope="module")
def cluster() -> Iterator[slurm.Cluster]:
    with slurm.cluster() as c:
        yield c


def _squeue(c: slurm.Cluster, *args: str) -> list[list[str]]:
    out = c.run("squeue", "-h", *args).stdout
    return [line.split("|") for line in out.splitlines()]


def _wait_for(path: Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.1)
    return path.read_text()


def test_jobs_run_in_order_with_names_comments_exports_and_exit_codes(
    cluster: slurm.Cluster, tmp_path: Path
) -> None:
    c, out = cluster, tmp_path / "out"
    first = c.sbatch(
        "#!/bin/sh\nsleep 1\nexit 3\n", "--job-name=gmxbench:t-first", f"--output={out}.1"
    )
    second = c.sbatch(
        '#!/bin/sh\necho "run=$GMX_RUN job=$SLURM_JOB_ID on $SLURMD_NODENAME"\n',
        "--job-name=gmxbench:t-second", "--comment=run 2 of a campaign", f"--output={out}.2",
        f"--dependency=afterany:{first}", "--no-requeue", "--time=5", "--export=ALL,GMX_RUN=r2",
    )  # fmt: skip
    waiting = _squeue(c, "--name=gmxbench:t-second", "-o", "%i|%T|%r|%k")
    assert waiting == [[second, "PENDING", "Dependency", "run 2 of a campaign"]]

    done = c.wait_job(second)
    assert (done["JobState"], done["Reason"], done["ExitCode"]) == ("COMPLETED", "None", "0:0")
    assert done["NodeList"] == c.node
    assert done["Comment"] == "run 2 of a campaign"
    assert Path(f"{out}.2").read_text() == f"run=r2 job={second} on {c.node}\n"
    failed = c.job(first)
    assert (failed["JobState"], failed["Reason"], failed["ExitCode"]) == (
        "FAILED", "NonZeroExitCode", "3:0",
    )  # fmt: skip
    # finished jobs stay visible (MinJobAge), found by name; the completion log has both
    rows = _squeue(c, "-t", "all", "--name=gmxbench:t-first,gmxbench:t-second", "-o", "%i|%T|%N")
    assert sorted(rows) == sorted([[first, "FAILED", c.node], [second, "COMPLETED", c.node]])
    assert {r["JobId"]: r["JobState"] for r in c.completions()}.items() >= {
        first: "FAILED",
        second: "COMPLETED",
    }.items()


# A batch script must outlive its child for the child to get time to clean up: once the
# script has exited, slurmstepd SIGKILLs what is left of the job's process group at once.
TRAPPING_CHILD = """\
#!/bin/sh
python3 -c '
import os, signal, sys, time
def term(*_):
    time.sleep(0.5)  # cleaning up
    open(sys.argv[1], "a").write("SIGTERM, cleaned up\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
open(sys.argv[2], "w").write(f"{os.getpid()}\\n")
time.sleep(300)
' "$1" "$2" &
child=$!
trap : TERM
while kill -0 $child 2>/dev/null; do wait $child; done
"""


def test_scancel_sends_sigterm_to_the_scripts_children_and_the_job_ends_cancelled(
    cluster: slurm.Cluster, tmp_path: Path
) -> None:
    c, log, pid = cluster, tmp_path / "term.log", tmp_path / "pid"
    job = c.sbatch(TRAPPING_CHILD, "--no-requeue", "--output=/dev/null", args=[str(log), str(pid)])
    c.wait_job(job, {"RUNNING"})
    _wait_for(pid)
    pending = c.sbatch("#!/bin/sh\ntrue\n", f"--dependency=afterok:{job}", "--output=/dev/null")
    assert c.job(pending)["Reason"] == "Dependency"
    c.run("scancel", pending)  # a pending job: cancelled at once, its reason stays
    cancelled = c.wait_job(pending, timeout=10)
    assert (cancelled["JobState"], cancelled["Reason"], cancelled["NodeList"]) == (
        "CANCELLED", "Dependency", "",
    )  # fmt: skip

    c.run("scancel", job)
    assert _wait_for(log) == "SIGTERM, cleaned up\n"  # SIGCONT, SIGTERM, time to clean up
    ended = c.wait_job(job)
    assert (ended["JobState"], ended["Reason"], ended["NodeList"]) == ("CANCELLED", "None", c.node)
    c.wait_idle()


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, killed but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_stopped_slurmd_fails_the_job_and_the_node_comes_back(
    cluster: slurm.Cluster, tmp_path: Path
) -> None:
    c, pid_file = cluster, tmp_path / "pid"
    job = c.sbatch(
        "#!/bin/sh\necho $$ > $1\nexec sleep 300\n", "--no-requeue", "--output=/dev/null",
        args=[str(pid_file)],
    )  # fmt: skip
    c.wait_job(job, {"RUNNING"})
    pid = int(_wait_for(pid_file))

    c.stop_slurmd()
    failed = c.wait_job(job, {"NODE_FAIL"}, timeout=45)  # ~15 s with SlurmdTimeout=6
    assert (failed["Reason"], failed["NodeList"]) == ("NodeDown", c.node)
    assert c.node_state() == "down*"
    assert c.node_info()["Reason"].startswith("Not responding")
    assert _alive(pid), "the job's process lives on without slurmd (slurmstepd is separate)"

    c.start_slurmd()  # registers: back in service, and it kills the orphaned job
    deadline = time.monotonic() + 20
    while _alive(pid):
        assert time.monotonic() < deadline, "the orphaned job's process was not killed"
        time.sleep(0.2)
    c.wait_idle()
    again = c.sbatch("#!/bin/sh\ntrue\n", "--output=/dev/null")
    assert c.wait_job(again)["JobState"] == "COMPLETED"


@pytest.mark.engine
def test_a_job_reaches_the_docker_engine(
    cluster: slurm.Cluster, tmp_path: Path, engine: Any
) -> None:
    c, out = cluster, tmp_path / "out"
    job = c.sbatch("#!/bin/sh\ndocker version --format '{{.Server.Version}}'\n", f"--output={out}")
    assert c.wait_job(job)["JobState"] == "COMPLETED", out.read_text()
    assert out.read_text().strip() == engine.version()["Version"]
