"""LLVM builds for real on the mini llvm-project: a token in the source URL reaches no
artefact, two builds race on one workspace and both succeed, and a build whose gmxbench
was killed does not keep the workspace from the next one."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from git_http import serve_git
from mini_llvm import INITIAL_MESSAGE, make_mini_llvm

from orchestrator.core.events import Event, Message
from orchestrator.core.settings import load_settings
from orchestrator.images import llvm_workspace
from orchestrator.images.toolchain_llvm import (
    ensure_environment,
    ensure_toolchain_llvm,
    llvm_tag,
    repository_of,
    resolve_llvm,
    workspace_volume,
)

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
TOKEN = "PLANTEDTOKEN123"
USER = "gmx"


def _fresh_llvm(root: Path) -> Any:
    """A mini llvm-project whose hashes no other build had: built, never reused."""
    return make_mini_llvm(root / "llvm-project", f"{INITIAL_MESSAGE} ({uuid.uuid4().hex})")


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip


def _bridge_gateway(client: Any) -> str:
    return str(client.networks.get("bridge").attrs["IPAM"]["Config"][0]["Gateway"])


def _cleanup(client: Any, settings: Any, repository: str, tags: list[str]) -> None:
    for tag in tags:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(tag, noprune=False)
    environment = ensure_environment(client, settings)
    volume = workspace_volume(settings, environment, repository)
    for leftover in client.containers.list(all=True, filters={"volume": volume}):
        leftover.remove(force=True)
    with contextlib.suppress(docker.errors.NotFound):
        client.volumes.get(volume).remove(force=True)


@pytest.fixture
def served(engine: Any, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """The mini llvm-project, served over HTTP with basic auth to the host and containers."""
    repo = _fresh_llvm(tmp_path)
    root = tmp_path / "served"
    root.mkdir()
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo.path), str(root / "llvm.git")],
                   check=True)  # fmt: skip
    with serve_git(root, "llvm.git", _bridge_gateway(engine), USER, TOKEN) as server:
        yield repo, server


def _leaks(text: str | bytes) -> list[str]:
    """Which forms of the token `text` holds: as typed, or inside a basic-auth header."""
    data = text.encode() if isinstance(text, str) else text
    forms = {"token": TOKEN.encode(), "auth": base64.b64encode(f"{USER}:{TOKEN}".encode())}
    return [name for name, form in forms.items() if form in data]


def test_a_token_in_the_llvm_url_reaches_no_image_log_run_or_console(
    engine: Any, tmp_path: Path, served: tuple[Any, Any]
) -> None:
    repo, server = served
    commit = repo.head()
    results = tmp_path / "results"
    host = _bridge_gateway(engine)
    env = {
        **os.environ, "ORCH_PLATFORM": "cpu", "ORCH_RESULTS_DIR": str(results),
        "ORCH_LLVM_SOURCE": server.url, "NO_PROXY": host, "no_proxy": host,
        "ORCH_SLURM__PARTITION": "debug",
    }  # fmt: skip
    settings = load_settings(platform="cpu", results_dir=results, llvm_source=server.url)
    before = {image.id for image in engine.images.list(all=True)}
    tags: list[str] = []
    try:
        shown = _cli(env, "settings")
        built = _cli(env, "build", "toolchain", "--llvm", commit)
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
        tag = llvm_tag(settings, resolve_llvm(settings, commit))
        tags.append(tag)
        ran = _cli(env, "run", tag, "bandwidth:8MiB", "--no-database")
        assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
        job = _cli(env, "run", tag, "bandwidth:8MiB", "--executor", "slurm", "--dry-run")
        assert job.returncode == 0, job.stdout[-2000:] + job.stderr[-3000:]
        script = json.loads(job.stdout)["job_script"]

        # The token was needed and used: the build container fetched with it.
        fetched = [path for addr, path in server.authorized if addr != host]
        assert any("upload-pack" in path for path in fetched), server.authorized
        assert server.refused  # git asked without credentials first: they are required

        console = [shown.stdout, shown.stderr, built.stdout, built.stderr, ran.stdout,
                   ran.stderr, job.stdout, job.stderr]  # fmt: skip
        assert not [_leaks(text) for text in console if _leaks(text)], console
        assert "ORCH_LLVM_SOURCE" in script and not _leaks(script)

        made = {image.id for image in engine.images.list(all=True)} - before
        environment = ensure_environment(engine, settings)
        kernels = {"label": f"gmxbench.build=toolchain-llvm-{commit[:8]}"}
        microbench_images = [i.id for i in engine.images.list(filters=kernels)
                         if i.labels.get("gmxbench.kind") == "kernels"]  # fmt: skip
        inspected = sorted(made | {tag, environment.tag, *microbench_images})
        assert tag in inspected and microbench_images
        without = server.url.replace(f"{USER}:{TOKEN}@", "")
        for ref in inspected:
            history = subprocess.run(["docker", "history", "--no-trunc", ref],
                                     capture_output=True, text=True, check=True).stdout  # fmt: skip
            config = subprocess.run(["docker", "inspect", ref],
                                    capture_output=True, text=True, check=True).stdout  # fmt: skip
            assert not _leaks(history) and not _leaks(config), ref
        # The URL is recorded (without its user-info) where the token would have been.
        history = subprocess.run(["docker", "history", "--no-trunc", tag],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert without in history

        # Nor in any file of the toolchain image or of the workspace volume.
        repository = repository_of(settings, resolve_llvm(settings, commit))
        volume = workspace_volume(settings, environment, repository)
        grep = "grep -rlF -e {0} -e {1} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev"
        auth = base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
        out = engine.containers.run(
            tag, ["sh", "-c", grep.format(TOKEN, auth) + " || true"], remove=True,
            network_disabled=True, volumes={volume: {"bind": "/llvm", "mode": "ro"}},
        )  # fmt: skip
        assert out.decode().strip() == "", out

        # Nor in the results folder: build logs, the run folder (lockfiles are GROMACS
        # builds', whose git URL may hold no credentials: tests/test_secrets.py).
        files = [path for path in results.rglob("*") if path.is_file()]
        assert any(p.suffix == ".log" for p in files)
        assert any(p.name == "result.json" for p in files)
        assert [str(p) for p in files if _leaks(p.read_bytes())] == []
    finally:
        _cleanup(engine, settings, server.url.replace(f"{USER}:{TOKEN}@", ""), tags)


def test_two_builds_on_one_workspace_at_once_both_succeed(engine: Any, tmp_path: Path) -> None:
    repo = _fresh_llvm(tmp_path)
    first = repo.head()
    second = repo.commit("Add a host flag", host_flags=["-DGMXBENCH_RACE=1"])
    settings = load_settings(platform="cpu", results_dir=tmp_path / "results",
                             llvm_source=str(repo.path))  # fmt: skip
    ensure_environment(engine, settings)
    made: dict[str, str] = {}
    failed: dict[str, BaseException] = {}

    def build(commit: str) -> None:
        try:
            made[commit] = ensure_toolchain_llvm(docker.from_env(), settings, commit)
        except BaseException as exc:  # the failure is the test's to report
            failed[commit] = exc

    threads = [threading.Thread(target=build, args=(c,)) for c in (first, second)]
    started = time.monotonic()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=1500)
        print(f"\ntwo builds on one workspace: {time.monotonic() - started:.1f} s")
        assert not failed, failed
        assert set(made) == {first, second}
        for commit, tag in made.items():
            out = engine.containers.run(tag, ["/opt/llvm-" + commit[:8] + "/bin/clang",
                                              "--version"], remove=True)  # fmt: skip
            assert commit in out.decode()
    finally:
        _cleanup(engine, settings, str(repo.path), list(made.values()))


_ORPHAN = """
import sys
from orchestrator.engine import connect
from orchestrator.core.settings import load_settings
from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm
settings = load_settings(platform="cpu", results_dir=sys.argv[1], llvm_source=sys.argv[2])
ensure_toolchain_llvm(connect(), settings, sys.argv[3])
"""


def test_a_build_whose_gmxbench_was_killed_does_not_hold_the_workspace(
    engine: Any, tmp_path: Path
) -> None:
    repo = _fresh_llvm(tmp_path)
    first = repo.head()
    second = repo.commit("Add a host flag", host_flags=["-DGMXBENCH_ORPHAN=1"])
    results = tmp_path / "results"
    settings = load_settings(platform="cpu", results_dir=results, llvm_source=str(repo.path))
    environment = ensure_environment(engine, settings)
    volume = workspace_volume(settings, environment, str(repo.path))
    tags: list[str] = []
    orphan, container = _orphaned_build(engine, repo, first, results, volume)
    try:
        said: list[Event] = []
        started = time.monotonic()
        tags.append(ensure_toolchain_llvm(engine, settings, second, emit=said.append))
        texts = [e.text for e in said if isinstance(e, Message)]
        print(f"\nthe next build, after the orphan: {time.monotonic() - started:.1f} s")
        assert any(f"removed the LLVM build container {container.name}" in t for t in texts), texts
        with pytest.raises(docker.errors.NotFound):
            engine.containers.get(container.id)
    finally:
        if orphan.poll() is None:
            orphan.kill()
        _cleanup(engine, settings, str(repo.path), tags)


def _orphaned_build(
    engine: Any, repo: Any, first: str, results: Path, volume: str
) -> tuple[subprocess.Popen[bytes], Any]:
    """A gmxbench building `first` (or a later commit: a build from the compile cache can
    end before it is caught), killed while its build container goes on: the container is
    frozen where it is as soon as it runs, then its gmxbench is SIGKILLed."""
    for attempt in range(3):
        commit = first if attempt == 0 else repo.commit(f"again {attempt}", host_flags=[
            f"-DGMXBENCH_ORPHAN_TRY={attempt}"])  # fmt: skip
        orphan = subprocess.Popen(
            [sys.executable, "-c", _ORPHAN, str(results), str(repo.path), commit], cwd=REPO
        )
        deadline = time.monotonic() + 300
        running: list[Any] = []
        while not running and orphan.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(docker.errors.NotFound):  # one ended while listed
                found = engine.containers.list(filters={"volume": volume, "status": "running"})
                running = [c for c in found if c.name.startswith(llvm_workspace.BUILD_PREFIX)]
            time.sleep(0.2)
        try:
            if running:
                running[0].pause()  # it stays, as a build goes on after its gmxbench is gone
                orphan.send_signal(signal.SIGKILL)  # as the OOM killer would
                orphan.wait(timeout=30)
                running[0].reload()
                assert running[0].status == "paused"
                return orphan, running[0]
        except docker.errors.APIError:
            pass  # it ended between the listing and the pause: build another commit
        orphan.kill()
        orphan.wait(timeout=30)
    raise AssertionError("no build container was caught running in three builds")
