"""Shared fixtures. Engine tests fail (not skip) when CI=true and no engine answers."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ORCH_ENV_PREFIX = "ORCH_"


@pytest.fixture(autouse=True)
def _clean_orch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see only the ORCH_* variables they set themselves."""
    for name in list(os.environ):
        if name.startswith(ORCH_ENV_PREFIX):
            monkeypatch.delenv(name)


def _engine() -> Any | None:
    import docker

    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception:
        return None
    return client


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    """A live Docker client; without an engine: fail under CI, skip elsewhere."""
    client = _engine()
    if client is None:
        message = "no Docker Engine answers (start dockerd, see README)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + ": engine tests must run in CI")
        pytest.skip(message)
    yield client


@pytest.fixture
def cpu_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """CPU platform settings with results in a temporary directory."""
    results = tmp_path / "results"
    monkeypatch.setenv("ORCH_PLATFORM", "cpu")
    monkeypatch.setenv("ORCH_RESULTS_DIR", str(results))
    return results


@contextlib.contextmanager
def local_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 (any free port) for the duration; yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def our_containers(client: Any) -> list[Any]:
    """Containers carrying this project's labels, in any state."""
    return list(client.containers.list(all=True, filters={"label": "gmxbench.role"}))


# Images built once per test session and shared by every engine test that needs them.
# On a warm engine they are reused in seconds (inputs-keyed); cold, stable and dev each
# compile GROMACS from source (~10-15 min apiece on 2 cores).

TOOLCHAIN_PACKAGE = "clang-16"


@pytest.fixture(scope="session")
def session_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="session")
def cpu_settings(session_results: Path) -> Any:
    from orchestrator.core.settings import load_settings

    return load_settings(platform="cpu", results_dir=session_results)


@pytest.fixture(scope="session")
def stable_image(engine: Any, cpu_settings: Any) -> Any:
    from orchestrator.images.gromacs import build_gromacs

    return build_gromacs(engine, cpu_settings, "stable")


@pytest.fixture(scope="session")
def toolchain_image(engine: Any, cpu_settings: Any) -> str:
    from orchestrator.images.toolchain_package import ensure_toolchain_package

    return ensure_toolchain_package(engine, cpu_settings, TOOLCHAIN_PACKAGE)


@pytest.fixture(scope="session")
def dev_image(engine: Any, cpu_settings: Any, toolchain_image: str) -> Any:
    from orchestrator.images.gromacs import build_gromacs

    return build_gromacs(engine, cpu_settings, "dev", toolchain_tag=toolchain_image)


@pytest.fixture
def clean_engine(engine: Any) -> Iterator[Any]:
    """A second, empty Docker Engine of our own, stopped and deleted afterwards.

    It has its own data root, exec root (hence its own containerd), pid file and socket,
    no iptables rules, and a bridge of its own (a /30 of TEST-NET-1, 192.0.2.0/24): `--bridge=none`
    would make it delete the host's `docker0` at start-up, cutting the main engine's
    containers off. It reaches registries on 127.0.0.1 like any engine on the host.
    """
    import shutil
    import subprocess
    import tempfile
    import time
    import uuid

    import docker
    import docker.errors

    dockerd, ip = shutil.which("dockerd"), shutil.which("ip")
    if dockerd is None or ip is None:
        message = "a second engine needs dockerd and ip (apt-get install docker.io iproute2)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    # Short path: containerd's socket under the exec root must fit in 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="gmxd-", dir="/tmp"))
    (root / "daemon.json").write_text("{}\n")  # not /etc/docker/daemon.json
    socket = root / "docker.sock"
    bridge, net = f"gmxb{uuid.uuid4().hex[:8]}", uuid.uuid4().int % 64 * 4
    command = [
        dockerd,
        f"--config-file={root / 'daemon.json'}",
        f"--data-root={root / 'data'}",
        f"--exec-root={root / 'exec'}",
        f"--pidfile={root / 'docker.pid'}",
        f"--host=unix://{socket}",
        f"--bridge={bridge}",
        "--iptables=false",
        "--ip-masq=false",
    ]
    log = (root / "dockerd.log").open("wb")
    client, proc = None, None
    try:
        subprocess.run([ip, "link", "add", "name", bridge, "type", "bridge"], check=True)
        subprocess.run([ip, "addr", "add", f"192.0.2.{net + 1}/30", "dev", bridge], check=True)
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while client is None:
            try:  # the client asks the engine for its API version when it is made
                client = docker.DockerClient(base_url=f"unix://{socket}", timeout=600)
            except docker.errors.DockerException:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = (root / "dockerd.log").read_text(errors="replace")[-2000:]
                    pytest.fail(f"the second dockerd did not answer:\n{tail}")
                time.sleep(0.3)
        yield client
    finally:
        if client is not None:
            client.close()
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        subprocess.run([ip, "link", "delete", bridge], check=False, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
