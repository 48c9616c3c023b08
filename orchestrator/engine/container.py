"""Containers: run one to its end, run a short probe, list and remove ours.

Every container is made by `create` (the engine's differences: `podman`) and removed
before the call that made it returns: containers never outlive the call.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import docker.types
import requests.exceptions

from orchestrator.core.errors import NoSpace, UserError
from orchestrator.core.events import Emit, Output, ignore
from orchestrator.core.files import write_atomic
from orchestrator.engine.client import Client, EngineKind
from orchestrator.engine.podman import (
    KEEP_GROUPS_ANNOTATION,
    adapted,
    check_keeps_groups,
    create_annotated,
)

#: The most processes and threads a probe container may hold: it runs one tool.
PROBE_PIDS_LIMIT = 1024


def gpu_request(driver: str, device: int) -> dict[str, Any]:
    """What `docker run --gpus device=<n>` sends: GPU `device` by the engine's device
    driver (`nvidia`: NVIDIA's container toolkit), as a run's `device_requests` entry."""
    request: dict[str, Any] = docker.types.DeviceRequest(
        driver=driver, device_ids=[str(device)], capabilities=[["gpu"]]
    )
    return request


def container_user(engine_kind: EngineKind) -> str:
    """The `uid:gid` run and probe containers run as: the invoking user's, so that what a
    run writes into results/ is theirs, as the files the tool writes there itself are. On
    a rootless engine that is the container's root, which the engine maps to the invoking
    user: any other uid would land on a subordinate id of the host."""
    if engine_kind.rootless:
        return "0:0"
    return f"{os.getuid()}:{os.getgid()}"


def run_capture(
    client: Client,
    image: str,
    command: list[str],
    *,
    timeout: float = 120,
    environment: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    stderr: bool = True,
    volumes: Mapping[str, Mapping[str, str]] | None = None,
    user: str | None = None,
) -> tuple[int, str]:
    """Run a short command in a throw-away container; return (exit code, stdout+stderr),
    or stdout alone without `stderr` (a command whose stdout is data).

    It gets no capabilities, `no-new-privileges` and a pids limit; `user` (`uid:gid`)
    where given, else the image's user.
    """
    env = dict(environment or {})
    if user is not None and user.split(":")[0] != "0":
        env.setdefault("HOME", "/tmp")  # no home in the images for an arbitrary uid
    config: dict[str, Any] = {
        "image": image,
        "command": command,
        "environment": env,
        "labels": dict(labels or {}),
        "network_disabled": True,
        "volumes": {name: dict(bind) for name, bind in (volumes or {}).items()},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": PROBE_PIDS_LIMIT,
    }
    if user is not None:
        config["user"] = user
    container = create(client, config)
    try:
        container.start()
        try:
            status = container.wait(timeout=timeout)
        except requests.exceptions.RequestException:
            container.kill()
            shown = " ".join(command)
            shown = shown if len(shown) < 120 else shown[:117] + "..."
            raise UserError(
                f"`{shown}` in {image} did not finish within {timeout:.0f} s."
            ) from None
        output = container.logs(stdout=True, stderr=stderr).decode(errors="replace")
        return int(status.get("StatusCode", -1)), output
    finally:
        discard(container)


class EngineGone(UserError):
    """The engine stopped answering while it ran a container (restarted, stopped, crashed)."""


def run(
    client: Client,
    config: Mapping[str, Any],
    *,
    name: str,
    timeout: float,
    logs: tuple[Path, Path],
    emit: Emit = ignore,
) -> int | None:
    """Run one container to its end and return its exit code; None when killed at `timeout`.

    `config` is docker-py's `containers.create` keyword arguments, exactly as
    `--dry-run` shows them. Output streams live to `emit`; stdout and stderr land in
    the two `logs` files whatever happens, Ctrl-C included, and the container is
    removed before this returns or raises. If the engine goes away meanwhile, this
    raises `EngineGone` at once instead of waiting for an engine that may not return.
    """
    try:
        container = create(client, {**config, "name": name[:120]})
    except docker.errors.APIError as exc:
        if exc.status_code != 409:
            raise
        raise UserError(
            f"A container named {name[:120]} already exists on this engine: a run of the same "
            "run id is going on (from another results folder?) or a dead run left it. Give this "
            "run another tag, or see `gmxbench runs clean` once that run is over."
        ) from None
    except requests.exceptions.ConnectionError as exc:  # the engine went while creating it
        raise _gone(exc) from None
    streamer = None
    try:
        container.start()
        streamer = threading.Thread(target=_stream, args=(container, emit), daemon=True)
        streamer.start()
        code = wait(container, timeout)
        _save_logs(container, logs)
        return code
    except NoSpace:
        raise  # the logs do not fit: trying again would not help
    except BaseException:
        with contextlib.suppress(
            docker.errors.APIError, requests.exceptions.RequestException, NoSpace
        ):
            _save_logs(container, logs)  # Ctrl-C: the logs so far
        raise
    finally:
        with contextlib.suppress(requests.exceptions.RequestException):
            discard(container)  # else the engine is gone: `runs clean` does it later
        if streamer is not None:
            streamer.join(timeout=2)


def create(client: Client, config: Mapping[str, Any]) -> Any:
    """`containers.create(**config)`, said so that the engine at hand does what it says
    (`podman.adapted`); one that must keep the user's groups is removed again when it
    would not."""
    options, keep_groups = adapted(client, config)
    if not keep_groups:
        return client.containers.create(**options)
    container = create_annotated(client, options, {KEEP_GROUPS_ANNOTATION: "1"})
    try:
        check_keeps_groups(client, container.id)
    except BaseException:
        discard(container)
        raise
    return container


def wait(container: Any, timeout: float) -> int | None:
    """The container's exit code; None when it ran past `timeout` (then it is killed).

    Over a unix socket a wait that runs out of time surfaces as a ConnectionError ("Read
    timed out"), as an engine that went away does; the engine answering tells them apart.
    """
    started = time.monotonic()
    try:
        status = container.wait(timeout=timeout)
    except requests.exceptions.RequestException as exc:
        if time.monotonic() - started >= timeout and _answers(container):
            container.kill()
            return None
        raise _gone(exc) from None
    return int(status.get("StatusCode", -1))


def _answers(container: Any) -> bool:
    try:
        container.reload()
    except (docker.errors.APIError, requests.exceptions.RequestException):
        return False
    return True


def _save_logs(container: Any, logs: tuple[Path, Path]) -> None:
    """The container's stdout and stderr, each whole or not at all (`NoSpace` when the
    disk is full: no log is left cut short)."""
    try:
        for path, out in zip(logs, (True, False), strict=True):
            what = f"the container's {'stdout' if out else 'stderr'}"
            write_atomic(path, container.logs(stdout=out, stderr=not out), what=what)
    except requests.exceptions.RequestException as exc:
        raise _gone(exc) from None


def _gone(exc: BaseException) -> EngineGone:
    return EngineGone(
        f"the Docker Engine stopped answering mid-run ({_first_line(exc)}); an engine "
        "that stops or restarts stops its containers, so the run cannot be trusted"
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).split("\n")[0][:160]


@dataclass(frozen=True)
class Container:
    """A container of ours as `runs clean` sees it."""

    id: str
    name: str
    status: str
    labels: dict[str, str]


def containers(client: Client, label: str) -> list[Container]:
    """Containers in any state that carry `label` (`key` or `key=value`)."""
    return _listed(client, all=True, label=label)


def _listed(client: Client, **filters: Any) -> list[Container]:
    """Containers as the engine lists them, in one call: `containers.list` inspects each
    one after listing it, and one that ends in between (a short reader of a workspace)
    would fail the whole listing with a 404."""
    rows = client.api.containers(all=filters.pop("all", False), filters=filters or None)
    return [
        Container(row["Id"], (row.get("Names") or ["/"])[0].lstrip("/"), row.get("State", ""),
                  dict(row.get("Labels") or {}))
        for row in rows
    ]  # fmt: skip


def containers_on(client: Client, volume: str) -> list[Container]:
    """Containers in any state that mount the volume `volume`."""
    return _listed(client, all=True, volume=volume)


def running_containers(client: Client) -> dict[str, str] | None:
    """Id to name of every running container, anyone's; None when the engine does not answer."""
    try:
        return {c.id: c.name for c in _listed(client)}
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return None


def remove_container(client: Client, container_id: str) -> None:
    """Stop (SIGKILL) and remove a container; one already gone is fine."""
    with contextlib.suppress(docker.errors.NotFound):
        discard(client.containers.get(container_id))


def _stream(container: Any, emit: Emit) -> None:
    try:
        for chunk in container.logs(stream=True, follow=True):
            emit(Output(chunk.decode(errors="replace")))
    except (docker.errors.APIError, requests.exceptions.RequestException, ValueError):
        pass


def discard(container: Any) -> None:
    """Remove a container whatever state it is in; a container already gone is fine."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise


def stream_lines(container: Any, line: Any) -> None:
    """Whole lines of a container's output (chunks split anywhere), `\r` updates dropped."""
    pending = ""
    try:
        for chunk in container.logs(stream=True, follow=True):
            pending += chunk.decode(errors="replace")
            *done, pending = pending.split("\n")
            for text in done:
                line(text.rsplit("\r", 1)[-1])
    except (docker.errors.APIError, requests.exceptions.RequestException, ValueError):
        pass
    if pending:
        line(pending)
