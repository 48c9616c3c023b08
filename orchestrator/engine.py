"""The Docker Engine: connect, build with live output, run short commands, clean up.

docker-py drives everything but BuildKit builds (cache mounts), which go through the
`docker` CLI of the same version as the daemon (`DOCKER_BUILDKIT=1 docker build`).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from orchestrator import LABEL_PREFIX
from orchestrator.errors import UserError

Log = Callable[[str], None]

START_HINT = (
    "Start one: on Debian/Ubuntu `apt-get install -y docker.io` then `dockerd &` "
    "(or `systemctl start docker`), or point DOCKER_HOST at a running engine."
)


def stderr_log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def connect() -> docker.DockerClient:
    """A client that has answered a ping, or a `UserError` that says how to start an engine."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        reason = str(exc).split("\n")[0][:200]
        raise UserError(f"No Docker Engine answers at {where} ({reason}). {START_HINT}") from None
    return client


def cli_binary() -> str:
    """The CLI matching the daemon: Debian's /usr/bin/docker speaks BuildKit without buildx."""
    for candidate in ("/usr/bin/docker", shutil.which("docker")):
        if candidate and Path(candidate).exists():
            return candidate
    raise UserError(
        "This template needs BuildKit (cache mounts) and no `docker` CLI was found. "
        "Install Debian's docker.io package, which ships /usr/bin/docker."
    )


@dataclass
class BuildFailure:
    step: str
    tail: list[str]


ContextFiles = Mapping[str, "bytes | Path"]


def _context_tar(dockerfile: str, files: ContextFiles) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, item in {"Dockerfile": dockerfile.encode(), **files}.items():
            data = item.read_bytes() if isinstance(item, Path) else item
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


_STEP = re.compile(r"^(Step \d+/\d+ : .*|#\d+ \[[^\]]+\] .*)")


def _failure_message(what: str, failure: BuildFailure, error: str) -> str:
    tail = "\n".join("    " + line for line in failure.tail[-25:])
    return (
        f"Building {what} failed at {failure.step or 'an unknown step'}: {error.strip()}. "
        f"Nothing was tagged. Last lines of the build log:\n{tail}"
    )


def build(
    client: docker.DockerClient,
    dockerfile: str,
    *,
    what: str,
    labels: Mapping[str, str] | None = None,
    files: ContextFiles | None = None,
    target: str | None = None,
    buildkit: bool = False,
    nocache: bool = False,
    log: Log = stderr_log,
) -> str:
    """Build `dockerfile` and return the image id; stream the log; tag nothing.

    Tagging is the caller's job, after its own checks pass, so a failed check never
    leaves a tag behind. Intermediate containers are always removed (`forcerm`).
    `nocache` runs every step again (a rebuild that proves something).
    """
    started = time.monotonic()
    if buildkit:
        image_id = _build_cli(
            dockerfile, what=what, labels=labels, files=files or {}, target=target,
            nocache=nocache, log=log,
        )  # fmt: skip
    else:
        image_id = _build_api(
            client, dockerfile, what=what, labels=labels, files=files or {}, target=target,
            nocache=nocache, log=log,
        )  # fmt: skip
    log(f"built {what} as {image_id[:19]} in {time.monotonic() - started:.1f} s")
    return image_id


def _build_api(
    client: docker.DockerClient,
    dockerfile: str,
    *,
    what: str,
    labels: Mapping[str, str] | None,
    files: ContextFiles,
    target: str | None,
    nocache: bool,
    log: Log,
) -> str:
    failure = BuildFailure(step="", tail=[])
    tail: deque[str] = deque(maxlen=40)
    image_id = ""
    try:
        stream = client.api.build(
            fileobj=_context_tar(dockerfile, files),
            custom_context=True,
            rm=True,
            forcerm=True,
            decode=True,
            labels=dict(labels or {}),
            target=target,
            nocache=nocache,
        )
        for chunk in stream:
            if "stream" in chunk:
                for line in str(chunk["stream"]).splitlines():
                    if not line.strip():
                        continue
                    if _STEP.match(line):
                        failure.step = line
                    tail.append(line)
                    log(line)
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = str(chunk["aux"]["ID"])
            if "error" in chunk:
                failure.tail = list(tail)
                raise UserError(_failure_message(what, failure, str(chunk["error"])))
    except docker.errors.APIError as exc:
        failure.tail = list(tail)
        raise UserError(_failure_message(what, failure, str(exc.explanation or exc))) from None
    if not image_id:
        failure.tail = list(tail)
        raise UserError(_failure_message(what, failure, "the engine reported no image id"))
    return image_id


def _build_cli(
    dockerfile: str,
    *,
    what: str,
    labels: Mapping[str, str] | None,
    files: ContextFiles,
    target: str | None,
    nocache: bool,
    log: Log,
) -> str:
    failure = BuildFailure(step="", tail=[])
    tail: deque[str] = deque(maxlen=40)
    with tempfile.TemporaryDirectory(prefix="gmxbench-ctx-") as ctx:
        Path(ctx, "Dockerfile").write_text(dockerfile)
        for name, item in files.items():
            if isinstance(item, Path):
                shutil.copyfile(item, Path(ctx, name))
            else:
                Path(ctx, name).write_bytes(item)
        iidfile = Path(ctx, ".iid")
        cmd = [cli_binary(), "build", "--progress=plain", "--iidfile", str(iidfile)]
        for key, value in (labels or {}).items():
            cmd += ["--label", f"{key}={value}"]
        if target:
            cmd += ["--target", target]
        if nocache:
            cmd.append("--no-cache")
        cmd.append(ctx)
        env = {**os.environ, "DOCKER_BUILDKIT": "1"}
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            if _STEP.match(line) and "CACHED" not in line and "DONE" not in line:
                failure.step = line
            tail.append(line)
            log(line)
        if proc.wait() != 0 or not iidfile.exists():
            failure.tail = list(tail)
            raise UserError(
                _failure_message(what, failure, f"docker build exited {proc.returncode}")
            )
        return iidfile.read_text().strip()


def run_capture(
    client: docker.DockerClient,
    image: str,
    command: list[str],
    *,
    timeout: float = 120,
    environment: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """Run a short command in a throw-away container; return (exit code, stdout+stderr)."""
    container = client.containers.create(
        image,
        command,
        environment=dict(environment or {}),
        labels={LABEL_PREFIX + "role": "probe"},
        network_disabled=True,
    )
    try:
        container.start()
        try:
            status = container.wait(timeout=timeout)
        except requests.exceptions.RequestException:
            container.kill()
            raise UserError(
                f"`{' '.join(command)}` in {image} did not finish within {timeout:.0f} s."
            ) from None
        output = container.logs(stdout=True, stderr=True).decode(errors="replace")
        return int(status.get("StatusCode", -1)), output
    finally:
        remove_container(container)


def remove_container(container: Any) -> None:
    """Remove a container whatever state it is in; a container already gone is fine."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise


def image_or_none(client: docker.DockerClient, ref: str) -> Any | None:
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:  # e.g. an invalid reference format
        raise UserError(f"{ref!r} is not a usable image reference: {exc.explanation}.") from None


def project_images(client: docker.DockerClient, **label_filters: str) -> list[Any]:
    """Images carrying our labels, optionally narrowed by `key=value` label filters."""
    filters = [f"{LABEL_PREFIX}kind"] + [f"{LABEL_PREFIX}{k}={v}" for k, v in label_filters.items()]
    return list(client.images.list(filters={"label": filters}))
