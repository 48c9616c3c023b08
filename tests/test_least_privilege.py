"""Run and probe containers get least privilege: the invoking user's uid and gid, no
capabilities beyond what a mode needs, `no-new-privileges`, a pids limit, and the
engine's seccomp profile except where ROCm needs it off; what they write is the user's.

The end-to-end test runs the tool as uid 1000 (`setpriv`) against the real engine, on
the stable CPU image, since on a machine run as root nothing else shows whose files a
run leaves.
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.errors import UserError
from orchestrator.core.settings import load_settings
from orchestrator.engine import EngineKind, container_user
from orchestrator.platforms.cpu import CpuPlatform
from orchestrator.platforms.rocm import RocmPlatform

REPO = Path(__file__).resolve().parent.parent
USER = 1000
DOCKER_ROOTFUL = EngineKind("docker", "20.10", rootless=False)


def _rocm(tmp_path: Path) -> RocmPlatform:
    for node in ("kfd", "dri/renderD128"):
        (tmp_path / node).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / node).touch()
    return RocmPlatform(dev_root=tmp_path)


def test_cpu_runs_drop_everything_and_keep_seccomp() -> None:
    """GROMACS on the CPU platform, `--cpu-only` and CPU microbenchmarks all get these."""
    shown = CpuPlatform().run.container_options(0, "trace").confined("1000:1000", 4096)
    assert shown.engine_kwargs() == {
        "user": "1000:1000",
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "pids_limit": 4096,
    }
    assert shown.environment == {"HOME": "/tmp"}  # no home in the images for uid 1000


def test_root_keeps_its_home() -> None:
    shown = CpuPlatform().run.container_options(0).confined("0:0", 64)
    assert shown.environment == {} and shown.engine_kwargs()["user"] == "0:0"


@pytest.mark.parametrize("profile", ["none", "trace", "counters"])
def test_rocm_runs_turn_seccomp_off_and_add_no_capability(tmp_path: Path, profile: str) -> None:
    opts = _rocm(tmp_path).run.container_options(0, profile)  # type: ignore[arg-type]
    kwargs = opts.confined("1000:1000", 4096).engine_kwargs()
    assert kwargs["security_opt"] == ["no-new-privileges", "seccomp=unconfined"]
    assert kwargs["cap_drop"] == ["ALL"] and "cap_add" not in kwargs
    assert kwargs["user"] == "1000:1000" and kwargs["pids_limit"] == 4096
    gid = str((tmp_path / "kfd").stat().st_gid)
    assert kwargs["group_add"] == [gid]  # the GPU nodes' groups stay supplementary


def test_systrace_adds_back_only_ptrace_and_perfmon(tmp_path: Path) -> None:
    kwargs = _rocm(tmp_path).run.container_options(0, "systrace").engine_kwargs()
    assert kwargs["cap_drop"] == ["ALL"] and kwargs["cap_add"] == ["SYS_PTRACE", "PERFMON"]


def test_the_container_user_is_the_invoking_one_unless_the_engine_is_rootless() -> None:
    assert container_user(DOCKER_ROOTFUL) == f"{os.getuid()}:{os.getgid()}"
    rootless = EngineKind("podman", "4.3.1", rootless=True)
    assert container_user(rootless) == "0:0"  # the engine maps its root to the user


def test_a_pids_limit_below_what_a_run_needs_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_RUN_PIDS_LIMIT", "8")
    with pytest.raises(UserError, match="ORCH_RUN_PIDS_LIMIT"):
        load_settings()


# The end-to-end run as a user other than root -----------------------------------------

CHECKS = (
    "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; "
    'touch "$HOME/.written" && echo home-writable; '
    # dash stops at the first fork the limit refuses: the last count is how far it got
    "i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); echo forked $i; done 2>/dev/null"
)
#: Plans a run as the tool does, then runs CHECKS in its container (and in a probe).
INSIDE = f"""
import json, sys
from orchestrator import engine
from orchestrator.core.settings import load_settings
from orchestrator.images import catalog
from orchestrator.runs.runner import RunRequest, plan_run
client = engine.connect()
settings = load_settings()
plan = plan_run(client, settings, RunRequest(build=sys.argv[1], system="water:3k", tag="check"))
config = {{k: v for k, v in plan.container.items() if k != "image_tag"}}
config["command"] = ["sh", "-c", {CHECKS!r}]
config["volumes"] = {{sys.argv[2]: {{"bind": "/run", "mode": "rw"}}}}
logs = (sys.argv[3] + "/out", sys.argv[3] + "/err")
from pathlib import Path
engine.run(client, config, name="gmxbench-least-priv-check", timeout=120,
           logs=(Path(logs[0]), Path(logs[1])))
code, probed = catalog.probe(client, plan.image_id, ["sh", "-c", {CHECKS!r}])
print(json.dumps({{"run": Path(logs[0]).read_text(), "probe": probed}}))
"""


def _as_user(python: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    docker_gid = grp.getgrnam("docker").gr_gid  # the engine's socket, nothing else
    return subprocess.run(
        ["setpriv", f"--reuid={USER}", f"--regid={USER}", f"--groups={docker_gid}",
         "env", "-i", *(f"{k}={v}" for k, v in env.items()), python, *args],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture
def user_home() -> Iterator[Path]:
    """A folder uid 1000 owns, with a copy of the tool it can read (a checkout below /root
    is not), outside pytest's root-only temporary folder."""
    home = Path(tempfile.mkdtemp(prefix="gmxbench-least-priv-"))
    home.chmod(0o755)
    for part in ("orchestrator", "images", "recipes"):
        shutil.copytree(REPO / part, home / "tool" / part,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for path in [home, *home.rglob("*")]:
        os.chown(path, USER, USER)
    yield home
    shutil.rmtree(home)


def _python_for_user(env: dict[str, str]) -> str:
    """This interpreter, or the system's of the same version where uid 1000 cannot read
    ours (a pyenv below /root), with this environment's packages on its path."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/python{version}"):
        probe = _as_user(python, ["-c", "import pydantic, docker"], env)
        if probe.returncode == 0:
            return python
    pytest.fail(f"no Python {version} that uid {USER} can run with this environment's packages")


@pytest.mark.engine
def test_a_run_as_a_user_leaves_that_users_files_and_holds_no_privilege(
    engine: Any, stable_image: Any, user_home: Path
) -> None:
    import site

    results = user_home / "results"
    env = {
        "HOME": str(user_home), "PATH": "/usr/bin:/bin",
        "PYTHONPATH": ":".join([str(user_home / "tool"), *site.getsitepackages()]),
        "ORCH_PLATFORM": "cpu", "ORCH_RESULTS_DIR": str(results), "ORCH_JOBS": "2",
        "ORCH_CACHE_DIR": str(user_home / "cache"),
    }  # fmt: skip
    python = _python_for_user(env)
    build = stable_image.build

    ran = _as_user(python, ["-m", "orchestrator", "run", build, "water:3k", "least-priv",
                            "--steps", "200"], env)  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    run_dir = next(results.glob("*__water-3k-pme__least-priv"))
    assert (run_dir / "topol.log").exists() and (run_dir / "result.json").exists()
    kernel = _as_user(python, ["-m", "orchestrator", "run", build, "bandwidth:8MiB", "least-priv"],
                      env)  # fmt: skip
    assert kernel.returncode == 0, kernel.stdout[-2000:] + kernel.stderr[-2000:]
    assert (next(results.glob("*__bandwidth-8MiB-*__least-priv")) / "bandwidth.json").exists()
    foreign = [
        f"{p.relative_to(results)} ({p.stat().st_uid}:{p.stat().st_gid})"
        for p in [results, *results.rglob("*")]
        if (p.stat().st_uid, p.stat().st_gid) != (USER, USER)
    ]
    assert foreign == [], "not the user's: " + ", ".join(foreign)

    checks = user_home / "checks"
    checks.mkdir()
    os.chown(checks, USER, USER)
    env["ORCH_RUN_PIDS_LIMIT"] = "64"
    inside = _as_user(python, ["-c", INSIDE, build, str(checks), str(checks)], env)
    assert inside.returncode == 0, inside.stderr[-3000:]
    said = json.loads(inside.stdout.splitlines()[-1])
    for where in ("run", "probe"):
        lines = said[where].split("\n")
        assert lines[:2] == [str(USER), str(USER)], (where, said[where])
        status = dict(line.split(":\t") for line in lines[2:6])
        assert status["CapEff"] == status["CapBnd"] == "0000000000000000", (where, status)
        assert status["NoNewPrivs"] == "1", where
        assert status["Seccomp"] == "2", where  # the engine's profile filters
        assert lines[6] == "home-writable", (where, said[where])
    forked = [line for line in said["run"].split("\n") if line.startswith("forked ")]
    assert 0 < int(forked[-1].split()[1]) < 64, said["run"]  # ORCH_RUN_PIDS_LIMIT=64 held

    # what `--dry-run` prints for the user is what the run got
    del env["ORCH_RUN_PIDS_LIMIT"]
    dry = _as_user(python, ["-m", "orchestrator", "run", build, "water:3k", "--dry-run"], env)
    assert dry.returncode == 0, dry.stderr
    shown = json.loads(dry.stdout)
    assert shown["user"] == f"{USER}:{USER}" and shown["cap_drop"] == ["ALL"]
    assert shown["security_opt"] == ["no-new-privileges"] and shown["pids_limit"] == 4096
    assert shown["environment"]["HOME"] == "/tmp"
    dry = _as_user(python, ["-m", "orchestrator", "run", build, "water:3k", "--dry-run",
                            "--cpu-only"], env)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["security_opt"] == ["no-new-privileges"]
