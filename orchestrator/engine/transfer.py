"""Moving images between engines and registries: save, load, push, and the tags a load
may not change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import docker.errors
import requests.exceptions

from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.engine.client import Client
from orchestrator.engine.podman import familiar

CHUNK = 1 << 20


def save(client: Client, ids: list[str]) -> Iterator[bytes]:
    """`docker save` of several images as one tar stream.

    docker-py's `get_image` saves one image; the API's `/images/get` takes several.
    `APIClient` is a `requests.Session` on the engine's address, so its public
    `get` reaches that endpoint without docker-py internals.
    """
    api = client.api
    url = f"{api.base_url}/v{api.api_version}/images/get"
    try:
        res = api.get(url, params={"names": ids}, stream=True)
        res.raise_for_status()
        while chunk := res.raw.read(CHUNK):
            yield chunk
    except requests.exceptions.RequestException as exc:
        raise UserError(f"The engine could not save {', '.join(ids)}: {exc}.") from None


def tags(client: Client) -> dict[str, str]:
    """Every tag the engine holds and the image id it names: what a load may not change."""
    return {familiar(t): str(i.id) for i in client.images.list() for t in i.tags}


def load(client: Client, archive: IO[bytes] | Iterator[bytes], where: str) -> set[str]:
    """`docker load` of a file or a stream of chunks; the ids it reports (docker-py's
    `images.load` misses some).

    Docker says `Loaded image ID: <id>` per image; Podman `Loaded image: <id>,<id>`.
    """
    loaded: set[str] = set()
    try:
        for chunk in client.api.load_image(archive):
            if "errorDetail" in chunk:
                raise UserError(f"The engine refused {where}: {chunk['errorDetail']}.")
            for text in str(chunk.get("stream", "")).splitlines():
                text = text.removeprefix("Loaded image ID: ").removeprefix("Loaded image: ")
                loaded.update(i.strip() for i in text.split(",") if i.strip())
    except docker.errors.APIError as exc:
        raise UserError(f"The engine refused {where}: {exc.explanation}.") from None
    return loaded


class PushError(Exception):
    """The registry or the engine refused a push; the message is their reason."""


def push(client: Client, repo: str, version: str, emit: Emit = ignore) -> str | None:
    """Push `repo:version`; the digest the registry gave it (None if it named none)."""
    digest = None
    try:
        for chunk in client.api.push(repo, tag=version, stream=True, decode=True):
            if "errorDetail" in chunk or "error" in chunk:
                reason = chunk.get("errorDetail", {}).get("message") or chunk.get("error")
                raise PushError(str(reason))
            digest = chunk.get("aux", {}).get("Digest") or digest
            if chunk.get("status") and not chunk.get("progressDetail"):
                emit(Message(" ".join(str(chunk[k]) for k in ("id", "status") if k in chunk)))
    except docker.errors.APIError as exc:
        raise PushError(str(exc.explanation or exc)) from None
    return digest
