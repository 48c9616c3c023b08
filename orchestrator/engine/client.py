"""The client, and which engine answers it: Docker or Podman, rootless or not."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias
from weakref import WeakKeyDictionary

import docker
import docker.errors
import requests.exceptions

from orchestrator.core.errors import UserError

#: The client every engine function takes; nothing outside this package looks inside it.
Client: TypeAlias = docker.DockerClient

START_HINT = (
    "Start one: on Debian/Ubuntu `apt-get install -y docker.io` then `dockerd &` "
    "(or `systemctl start docker`), or point DOCKER_HOST at a running engine (Podman: "
    "`podman system service --time=0 unix://$XDG_RUNTIME_DIR/podman.sock &`)."
)


def connect() -> Client:
    """A client that has answered a ping, or a `UserError` that says how to start an engine."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        reason = str(exc).split("\n")[0][:200]
        raise UserError(f"No Docker Engine answers at {where} ({reason}). {START_HINT}") from None
    return client


@dataclass(frozen=True)
class EngineKind:
    """Which engine answers: what differs between them, and what a run record notes."""

    name: Literal["docker", "podman"]
    version: str
    #: Runs as a user in a user namespace: host group ids mean nothing in its containers.
    rootless: bool


_KINDS: WeakKeyDictionary[Client, EngineKind] = WeakKeyDictionary()


def kind(client: Client) -> EngineKind:
    """Docker or Podman, its version, and whether it is rootless (asked once per client).

    Podman names itself among the version's components. A rootless Docker lists
    `name=rootless` among its security options; Podman 4.3 does not, so its own API says.
    """
    if client not in _KINDS:
        version = client.version()
        components = {str(c.get("Name")) for c in version.get("Components") or []}
        name: Literal["docker", "podman"] = "podman" if PODMAN in components else "docker"
        if name == "podman":
            rootless = bool(libpod(client, "info")["host"]["security"]["rootless"])
        else:
            rootless = "name=rootless" in (client.info().get("SecurityOptions") or [])
        _KINDS[client] = EngineKind(name, str(version.get("Version", "")), rootless)
    return _KINDS[client]


PODMAN = "Podman Engine"
#: The version of Podman's own API asked for: the oldest Podman 4.3 serves (MinAPIVersion).
LIBPOD_API = "4.0.0"


def libpod(client: Client, path: str) -> Any:
    """GET `path` of Podman's own API (`/libpod/…`), for what its Docker API leaves out.

    `APIClient` is a `requests.Session` on the engine's address (see `transfer.save`).
    """
    api = client.api
    res = api.get(f"{api.base_url}/v{LIBPOD_API}/libpod/{path}")
    res.raise_for_status()
    return res.json()


def cli_binary() -> str:
    """The CLI matching the daemon: Debian's /usr/bin/docker speaks BuildKit without buildx."""
    for candidate in ("/usr/bin/docker", shutil.which("docker")):
        if candidate and Path(candidate).exists():
            return candidate
    raise UserError(
        "This template needs BuildKit (cache mounts) and no `docker` CLI was found. "
        "Install Debian's docker.io package, which ships /usr/bin/docker."
    )
