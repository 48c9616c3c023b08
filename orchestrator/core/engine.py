"""The container engine (Docker, or Podman's Docker API), and the only module that talks to it.

docker-py drives everything but Docker's BuildKit builds (cache mounts), which go through
the `docker` CLI of the same version as the daemon (`DOCKER_BUILDKIT=1 docker build`).
Images come back as `Image` values, so no other module holds a docker-py object or
calls its API; containers never outlive the call that made them.

Podman (`podman system service`) answers the same API with a few differences, handled
here (`kind` tells the engines apart): its builder (buildah) runs `RUN --mount=type=cache`
itself, so every build goes through the API; it names images `docker.io/...`; it ignores
`network_disabled`, the `tag` of an import and (before 5.1) container annotations; `load`
reports ids its own way; and `keep-groups` (a rootless container keeps the user's groups,
the way to a GPU's device nodes) is an annotation that crun reads.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, TypeAlias
from weakref import WeakKeyDictionary

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import RUN_HOST_CONFIG_KWARGS

from orchestrator.core.errors import NoSpace, UsageError, UserError, space_for
from orchestrator.core.events import (
    BuildEnded,
    BuildOutput,
    BuildStarted,
    BuildStep,
    Emit,
    Message,
    Output,
    ignore,
)
from orchestrator.core.files import write_atomic

#: The client every engine function takes; nothing outside this module looks inside it.
Client: TypeAlias = docker.DockerClient

START_HINT = (
    "Start one: on Debian/Ubuntu `apt-get install -y docker.io` then `dockerd &` "
    "(or `systemctl start docker`), or point DOCKER_HOST at a running engine (Podman: "
    "`podman system service --time=0 unix://$XDG_RUNTIME_DIR/podman.sock &`)."
)
CHUNK = 1 << 20


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
            rootless = bool(_libpod(client, "info")["host"]["security"]["rootless"])
        else:
            rootless = "name=rootless" in (client.info().get("SecurityOptions") or [])
        _KINDS[client] = EngineKind(name, str(version.get("Version", "")), rootless)
    return _KINDS[client]


PODMAN = "Podman Engine"
#: The version of Podman's own API asked for: the oldest Podman 4.3 serves (MinAPIVersion).
LIBPOD_API = "4.0.0"


def _libpod(client: Client, path: str) -> Any:
    """GET `path` of Podman's own API (`/libpod/…`), for what its Docker API leaves out.

    `APIClient` is a `requests.Session` on the engine's address (see `save`).
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


# Images -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Image:
    """What the engine knows of one image, as plain values."""

    id: str
    tags: tuple[str, ...]
    labels: dict[str, str]
    layers: tuple[str, ...]
    created: str
    repo_digests: tuple[str, ...]

    @classmethod
    def _of(cls, image: Any) -> Image:
        attrs = image.attrs
        return cls(
            id=str(image.id),
            tags=tuple(_familiar(t) for t in image.tags),
            labels=dict(image.labels or {}),
            layers=tuple(attrs.get("RootFS", {}).get("Layers", [])),
            created=str(attrs.get("Created", "")),
            repo_digests=tuple(attrs.get("RepoDigests") or ()),
        )


def _familiar(ref: str) -> str:
    """A name as Docker shows it: Podman says `docker.io/library/gromacs:x` for `gromacs:x`."""
    for prefix in ("docker.io/library/", "docker.io/"):
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return ref


def image(client: Client, ref: str) -> Image | None:
    """The image `ref` (tag or id) names, or None when the engine has none."""
    try:
        return Image._of(client.images.get(ref))
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:  # e.g. an invalid reference format
        raise UserError(f"{ref!r} is not a usable image reference: {exc.explanation}.") from None


def images(client: Client, labels: list[str], name: str | None = None) -> list[Image]:
    """Images carrying every `key` or `key=value` label in `labels` (and named `name`).

    The engine filters by the first label, this function by the others: Podman 4.3
    answers nothing at all when asked for two labels at once.
    """
    found = client.images.list(name=name, filters={"label": labels[:1]} if labels else None)
    return [
        image
        for image in map(Image._of, found)
        if all(_carries(image.labels, wanted) for wanted in labels[1:])
    ]


def _carries(labels: Mapping[str, str], wanted: str) -> bool:
    key, sep, value = wanted.partition("=")
    return key in labels and (not sep or labels[key] == value)


def tag(client: Client, image_id: str, ref: str) -> None:
    """Point `ref` (`repo:tag`) at an image; a colon before the last `/` is a port."""
    repo, sep, version = ref.rpartition(":")
    if not sep or "/" in version:
        repo, version = ref, "latest"
    try:
        client.images.get(image_id).tag(repo, tag=version)
    except docker.errors.APIError as exc:
        raise UsageError(f"{ref!r} is not a registry/repository: {exc.explanation}.") from None


def remove_image(client: Client, ref: str, *, force: bool = False, noprune: bool = False) -> None:
    """Remove `ref`; an image with other tags only loses this one."""
    client.images.remove(ref, force=force, noprune=noprune)


def pull(client: Client, ref: str) -> Image:
    try:
        return Image._of(client.images.pull(ref))
    except docker.errors.APIError as exc:
        raise UserError(str(exc.explanation or exc).split("\n")[0][:160]) from None


def import_tarball(client: Client, tarball: Path, ref: str, changes: list[str]) -> Image | None:
    """`docker import` a root filesystem tarball as `ref` with Dockerfile `changes`.

    Imported untagged, then tagged by the id the engine reports: Podman ignores an
    import's `tag` (it would name the image `:latest`).
    """
    answer = client.api.import_image_from_file(str(tarball), changes=changes)
    ids = [
        str(json.loads(text).get("status", ""))
        for text in str(answer).splitlines()
        if text.strip().startswith("{")
    ]
    image_id = next((i for i in reversed(ids) if i.startswith("sha256:")), None)
    if image_id is None:
        return None
    tag(client, image_id, ref)
    return image(client, ref)


# Builds -------------------------------------------------------------------------------


@dataclass
class _Failure:
    """What a failed build's message shows: the failing step, the lines that explain the
    failure (from a tool's first error on), and the log's last lines."""

    step: str = ""
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))
    why: list[str] = field(default_factory=list)
    why_at: int = 0
    lines: int = 0

    def add(self, text: str) -> None:
        self.lines += 1
        self.tail.append(text)
        if self.why and len(self.why) < _WHY_LINES:
            self.why.append(text)
        elif not self.why and _EXPLAINS.search(text):
            self.why, self.why_at = [text], self.lines

    def ran_out_of_space(self) -> bool:
        """The build's last lines say a disk or a quota was full."""
        return any(_NO_SPACE.search(text) for text in list(self.tail)[-_TAIL_LINES:])

    def shown(self) -> list[str]:
        """At most about 30 lines: the first error's and the last ones, once each."""
        last = list(self.tail)[-_TAIL_LINES:]
        first_of_last = self.lines - len(last) + 1
        if not self.why or self.why_at >= first_of_last:
            return last
        stretch = self.why[: first_of_last - self.why_at] + last
        if self.why_at + len(self.why) >= first_of_last and len(stretch) <= _MOST_LINES:
            return stretch  # the two meet: one stretch
        return [*self.why, "…", *last[-(_MOST_LINES - _WHY_LINES - 1) :]]


ContextFiles = Mapping[str, "bytes | Path"]
#: A step's first line: Docker's classic builder, BuildKit, and Podman's buildah.
_STEP = re.compile(r"^(Step \d+/\d+ : .*|#\d+ \[[^\]]+\] .*|(\[\d+/\d+\] )?STEP \d+/\d+: .*)")
#: A tool saying why it stopped: ninja, a compiler, CMake, make, apt.
_EXPLAINS = re.compile(
    r"FAILED: |\b(fatal )?error: |CMake Error|make(\[\d+\])?: \*\*\*|^(#\d+ [\d.]+ )?E: "
)
_WHY_LINES, _TAIL_LINES, _MOST_LINES = 15, 25, 30


def _tar(files: ContextFiles) -> io.BytesIO:
    """A tar of `files` (a build context, or what a container gets before it starts),
    every entry dated 0 and mode 0644 so the same files make the same archive; a `Path`
    is streamed from disk (a bundle of LLVM's history is hundreds of MB)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, item in files.items():
            info = tarfile.TarInfo(name)
            info.mtime, info.mode = 0, 0o644
            if isinstance(item, Path):
                info.size = item.stat().st_size
                with item.open("rb") as data:
                    tar.addfile(info, data)
            else:
                info.size = len(item)
                tar.addfile(info, io.BytesIO(item))
    buf.seek(0)
    return buf


def _context_tar(dockerfile: str, files: ContextFiles) -> io.BytesIO:
    return _tar({"Dockerfile": dockerfile.encode(), **files})


def _failure_message(what: str, failure: _Failure, error: str, log: Path | None) -> str:
    tail = "\n".join("    " + line for line in failure.shown())
    where = f"\nThe whole log: {log}" if log is not None else ""
    return (
        f"Building {what} failed at {failure.step or 'an unknown step'}: {error.strip()}. "
        f"Nothing was tagged. Last lines of the build log:\n{tail}{where}"
    )


def build(
    client: Client,
    dockerfile: str,
    *,
    what: str,
    labels: Mapping[str, str] | None = None,
    files: ContextFiles | None = None,
    target: str | None = None,
    buildkit: bool = False,
    nocache: bool = False,
    build_args: Mapping[str, str] | None = None,
    log: Path | None = None,
    emit: Emit = ignore,
) -> str:
    """Build `dockerfile` and return the image id; stream the log; tag nothing.

    Tagging is the caller's job, after its own checks pass, so a failed check never
    leaves a tag behind. Intermediate containers are always removed (`forcerm`).
    `nocache` runs every step again, and under BuildKit also empties every cache mount
    the build uses (buildah keeps them); `build_args` set the Dockerfile's `ARG`s.
    Podman's API builds cache mounts itself, so `buildkit` needs the CLI on Docker only.
    Every line of the build's output goes to `log` (when given) as it comes, and to
    `emit` as a `BuildOutput` (`BuildStep` for a step's first line), between a
    `BuildStarted` and a `BuildEnded`.
    """
    started = time.monotonic()
    builder = _build_cli if buildkit and kind(client).name == "docker" else _build_api
    failure = _Failure()
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(_log_sink(log, what)) if log is not None else None
        emit(BuildStarted(f"building {what}", what=what, log=log))

        def line(text: str) -> None:
            if sink is not None:
                sink(text)
            if _STEP.match(text) and "CACHED" not in text and "DONE" not in text:
                failure.step = text
                emit(BuildStep(text))
            else:
                emit(BuildOutput(text))
            failure.add(text)

        try:
            image_id = builder(
                client, dockerfile, labels=dict(labels or {}), files=files or {},
                target=target, nocache=nocache, build_args=dict(build_args or {}), line=line,
            )  # fmt: skip
        except (_BuildError, NoSpace) as exc:
            seconds = time.monotonic() - started
            emit(BuildEnded(f"{what} failed", what=what, log=log, ok=False, seconds=seconds))
            if isinstance(exc, NoSpace):
                raise exc.adding("Nothing was tagged.") from None
            if _NO_SPACE.search(str(exc)) or failure.ran_out_of_space():
                raise _engine_full(client, what, failure, str(exc)) from None
            raise BuildFailed(_failure_message(what, failure, str(exc), log)) from None
    seconds = time.monotonic() - started
    text = f"built {what} as {image_id[:19]} in {seconds:.1f} s"
    emit(BuildEnded(text, what=what, log=log, seconds=seconds))
    return image_id


@contextlib.contextmanager
def _log_sink(log: Path, what: str) -> Iterator[Callable[[str], None]]:
    """Write lines to a build's log as they come; a disk that fills up raises `NoSpace`
    and takes the log it cut short away."""
    about = f"the build log of {what}"
    with space_for(log, about):
        log.parent.mkdir(parents=True, exist_ok=True)
        sink = log.open("w", encoding="utf-8", buffering=1)

    def write(text: str) -> None:
        with space_for(log, about):
            sink.write(text + "\n")

    try:
        yield write
    except NoSpace as exc:
        with contextlib.suppress(OSError):
            sink.close()  # its last line may still be in the buffer, and not fit either
        if exc.path == log:
            log.unlink(missing_ok=True)
        raise
    with space_for(log, about):
        sink.close()


#: How an engine, a tool in a build or the kernel says a disk (or a quota) is full.
_NO_SPACE = re.compile(r"no space left on device|disk quota exceeded", re.IGNORECASE)


def _engine_full(client: Client, what: str, failure: _Failure, error: str) -> NoSpace:
    """A build that failed for want of disk space, in one paragraph: the engine's disk."""
    said = next((t for t in [error, *reversed(failure.tail)] if _NO_SPACE.search(t)), error)
    try:
        root = str(client.info().get("DockerRootDir") or "")
    except (docker.errors.APIError, requests.exceptions.RequestException):
        root = ""
    where = f"its data root {root}" if root else "its data root"
    return NoSpace(
        f"No space left on device: the engine ran out of disk space building {what} "
        f"({said.strip()[:200]}){f' at {failure.step}' if failure.step else ''}. Free space on "
        f"{where}: `docker system df` shows what uses it, `gmxbench prune` untags old LLVM "
        "toolchains, `docker builder prune` empties the build cache; then build again. "
        "Nothing was tagged.",
        root or "the engine's data root",
    )


class _BuildError(Exception):
    """The engine's reason a build failed; `build` adds the step and the log tail."""


class BuildFailed(UserError):
    """A Dockerfile step failed: the inputs do not build (a bisect skips such a commit)."""


class ContainerBuildFailed(BuildFailed):
    """A build run in a container (`build_in_container`) exited with `code`."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message)
        self.code = code


def build_in_container(
    client: Client,
    config: Mapping[str, Any],
    *,
    what: str,
    files: ContextFiles,
    put_at: str,
    changes: list[str] | None,
    log: Path,
    emit: Emit = ignore,
    timeout: float = 24 * 3600,
    archive: Path | None = None,
    absent: tuple[str, ...] = (),
) -> str:
    """Run a build in a container, then commit it as an image; return the image id
    (with `changes` None nothing is committed and the id is "").

    For builds whose state outlives them in a volume (LLVM's tree), which `docker build`
    cannot mount. `files` are put at `put_at` before the start, and so is the content of
    `archive`, a tar made by the caller (links and modes kept, streamed from disk: an
    imported LLVM is gigabytes); the output streams line
    by line to `log` and `emit` as `build` streams its own, and a failure raises
    `ContainerBuildFailed` with the exit code. `changes` are `docker commit --change`
    lines. The container is removed whatever happens, so nothing half-built is left.
    `absent` are paths (credentials) the build must have removed: one still there is
    an error, and nothing is committed, so it never reaches an image.
    """
    started = time.monotonic()
    failure = _Failure()
    log_full: list[NoSpace] = []  # the log's disk filled up, said by the streaming thread
    container = _create(client, config)
    try:
        if files:
            container.put_archive(put_at, _tar(files))
        if archive is not None:
            with archive.open("rb") as data:
                container.put_archive(put_at, data)
        with _log_sink(log, what) as sink:
            emit(BuildStarted(f"building {what}", what=what, log=log))

            def line(text: str) -> None:
                if log_full:
                    return
                try:
                    sink(text)
                except NoSpace as exc:
                    log_full.append(exc)
                    with contextlib.suppress(docker.errors.APIError):
                        container.kill()
                emit(BuildOutput(text))
                failure.add(text)

            container.start()
            streamer = threading.Thread(target=_stream_lines, args=(container, line), daemon=True)
            streamer.start()
            code = _wait(container, timeout)
            streamer.join(timeout=10)
            if log_full:
                seconds = time.monotonic() - started
                emit(BuildEnded(f"{what} failed", what=what, log=log, ok=False, seconds=seconds))
                raise log_full[0].adding("Nothing was tagged.")
        seconds = time.monotonic() - started
        if code != 0:
            emit(BuildEnded(f"{what} failed", what=what, log=log, ok=False, seconds=seconds))
            if failure.ran_out_of_space():
                raise _engine_full(client, what, failure, f"it exited with {code}")
            error = "it ran out of time" if code is None else f"it exited with {code}"
            raise ContainerBuildFailed(_failure_message(what, failure, error, log), code)
        left = [path for path in absent if _exists_in(container, path)]
        if left:
            raise UserError(
                f"The build of {what} left {', '.join(left)} in its container, which must "
                "be removed before the commit (credentials): nothing was committed. This is "
                "a fault of the build script; report it."
            )
        image_id = "" if changes is None else str(container.commit(changes="\n".join(changes)).id)
    finally:
        with contextlib.suppress(requests.exceptions.RequestException):
            _remove_container(container)
    made = f" as {image_id[:19]}" if image_id else ""
    text = f"built {what}{made} in {time.monotonic() - started:.1f} s"
    emit(BuildEnded(text, what=what, log=log, seconds=time.monotonic() - started))
    return image_id


def _exists_in(container: Any, path: str) -> bool:
    """Whether `path` exists in a (stopped) container's file system."""
    try:
        stream, _stat = container.get_archive(path)
    except docker.errors.NotFound:
        return False
    for _chunk in stream:  # drained, so the connection is released
        pass
    return True


def _stream_lines(container: Any, line: Any) -> None:
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


def _build_api(
    client: Client,
    dockerfile: str,
    *,
    labels: dict[str, str],
    files: ContextFiles,
    target: str | None,
    nocache: bool,
    build_args: dict[str, str],
    line: Any,
) -> str:
    image_id = ""
    try:
        stream = client.api.build(
            fileobj=_context_tar(dockerfile, files), custom_context=True, rm=True, forcerm=True,
            decode=True, labels=labels, target=target, nocache=nocache, buildargs=build_args,
        )  # fmt: skip
        for chunk in stream:
            for text in str(chunk.get("stream", "")).splitlines():
                if text.strip():
                    line(text)
            if "ID" in chunk.get("aux", {}):
                image_id = str(chunk["aux"]["ID"])
            if "error" in chunk:
                raise _BuildError(str(chunk["error"]))
    except docker.errors.APIError as exc:
        raise _BuildError(str(exc.explanation or exc)) from None
    if not image_id:
        raise _BuildError("the engine reported no image id")
    return image_id


def _build_cli(
    client: Client,
    dockerfile: str,
    *,
    labels: dict[str, str],
    files: ContextFiles,
    target: str | None,
    nocache: bool,
    build_args: dict[str, str],
    line: Any,
) -> str:
    with tempfile.TemporaryDirectory(prefix="gmxbench-ctx-") as ctx:
        with space_for(Path(ctx), "the build context"):
            Path(ctx, "Dockerfile").write_text(dockerfile)
            for name, item in files.items():
                if isinstance(item, Path):
                    shutil.copyfile(item, Path(ctx, name))
                else:
                    Path(ctx, name).write_bytes(item)
        iidfile = Path(ctx, ".iid")
        cmd = [cli_binary(), "build", "--progress=plain", "--iidfile", str(iidfile)]
        for key, value in labels.items():
            cmd += ["--label", f"{key}={value}"]
        for key, value in build_args.items():
            cmd += ["--build-arg", f"{key}={value}"]
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
        try:
            for text in proc.stdout:
                line(text.rstrip())
            code = proc.wait()
        finally:
            _end(proc)  # interrupted: BuildKit cancels the build when its client goes
        if code != 0 or not iidfile.exists():
            raise _BuildError(f"docker build exited {code}")
        return iidfile.read_text().strip()


def _end(proc: subprocess.Popen[str]) -> None:
    """Stop a child that is still running: SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# Containers ---------------------------------------------------------------------------


#: The most processes and threads a probe container may hold: it runs one tool.
PROBE_PIDS_LIMIT = 1024


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
    container = _create(client, config)
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
        _remove_container(container)


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
        container = _create(client, {**config, "name": name[:120]})
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
        code = _wait(container, timeout)
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
            _remove_container(container)  # else the engine is gone: `runs clean` does it later
        if streamer is not None:
            streamer.join(timeout=2)


#: `group_add` value asking that a rootless container keep the user's own groups (crun).
KEEP_GROUPS = "keep-groups"
KEEP_GROUPS_ANNOTATION = "run.oci.keep_original_groups"
KEEP_GROUPS_CONF = f'annotations = ["{KEEP_GROUPS_ANNOTATION}=1"]'


def _create(client: Client, config: Mapping[str, Any]) -> Any:
    """`containers.create(**config)`, said so that the engine at hand does what it says.

    Podman's Docker API ignores `network_disabled` (the container would get a network),
    so it gets `network_mode="none"` too. `keep-groups` in `group_add` is Podman's: its
    API takes it as a group name, so it goes as the annotation crun reads instead, and
    the container is checked to carry it (Podman before 5.1 drops annotations sent this
    way; containers.conf can set it for every container).
    """
    options, engine_kind = dict(config), kind(client)
    groups = [str(g) for g in options.get("group_add") or []]
    if engine_kind.name == "podman" and options.get("network_disabled"):
        options["network_mode"] = "none"
    if KEEP_GROUPS not in groups:
        return client.containers.create(**options)
    if engine_kind.name != "podman" or groups != [KEEP_GROUPS]:
        raise UsageError(
            f"group_add {groups}: `{KEEP_GROUPS}` is Podman's, and goes alone; "
            f"this engine is {engine_kind.name} {engine_kind.version}."
        )
    del options["group_add"]
    container = _create_annotated(client, options, {KEEP_GROUPS_ANNOTATION: "1"})
    try:
        _check_keeps_groups(client, container.id)
    except BaseException:
        _remove_container(container)
        raise
    return container


def _create_annotated(client: Client, options: dict[str, Any], annotations: dict[str, str]) -> Any:
    """`containers.create` through docker-py's low-level API, with HostConfig.Annotations
    (split as `containers.create` splits its arguments; volumes in its dict form)."""
    volumes = dict(options.pop("volumes", None) or {})
    host = {key: options.pop(key) for key in RUN_HOST_CONFIG_KWARGS if key in options}
    host_config = client.api.create_host_config(binds=volumes or None, **host)
    host_config["Annotations"] = annotations
    made = client.api.create_container(
        options.pop("image"), options.pop("command", None), host_config=host_config,
        volumes=[v["bind"] for v in volumes.values()] or None, **options,
    )  # fmt: skip
    return client.containers.get(made["Id"])


def _check_keeps_groups(client: Client, container_id: str) -> None:
    """Refuse a container that would not keep the user's groups (its GPU access)."""
    state = _libpod(client, f"containers/{container_id}/json")
    annotations = (state.get("Config") or {}).get("Annotations") or {}
    if annotations.get(KEEP_GROUPS_ANNOTATION) != "1":
        raise UserError(
            f"Podman {kind(client).version} dropped the `{KEEP_GROUPS}` annotation that its "
            "Docker API takes from Podman 5.1 on. Set it for every container: add "
            f"`{KEEP_GROUPS_CONF}` under [containers] in containers.conf "
            "(~/.config/containers/containers.conf when rootless), then restart "
            "`podman system service`."
        )
    runtime = str(state.get("OCIRuntime", ""))
    if runtime != "crun":
        raise UserError(
            f"`{KEEP_GROUPS}` needs the crun runtime, and this container would run under "
            f"{runtime or 'an unnamed runtime'}, which drops the user's groups: set "
            '`runtime = "crun"` under [engine] in containers.conf.'
        )


def _wait(container: Any, timeout: float) -> int | None:
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
        _remove_container(client.containers.get(container_id))


def _stream(container: Any, emit: Emit) -> None:
    try:
        for chunk in container.logs(stream=True, follow=True):
            emit(Output(chunk.decode(errors="replace")))
    except (docker.errors.APIError, requests.exceptions.RequestException, ValueError):
        pass


def _remove_container(container: Any) -> None:
    """Remove a container whatever state it is in; a container already gone is fine."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise


# Moving images: save, load, push -----------------------------------------------------


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
    return {_familiar(t): str(i.id) for i in client.images.list() for t in i.tags}


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


# Volumes, and untagging that says why not (for `prune`) -------------------------------


@dataclass(frozen=True)
class Volume:
    """A volume as plain values; `size` in bytes when asked for and the engine knows it."""

    name: str
    labels: dict[str, str]
    created: str
    size: int | None = None


def volumes(client: Client, label: str, *, sizes: bool = False) -> list[Volume]:
    """Volumes carrying `label` (`key` or `key=value`), by name. With `sizes`, each one's
    size from the engine's disk usage (`docker system df -v`), which walks the files of
    every volume: 1.3 s for one 186,000-file LLVM workspace, +0.6 s per 200,000 files."""
    found = client.volumes.list(filters={"label": label})
    usage: dict[str, Any] = {}
    if sizes and found:
        usage = {v["Name"]: v.get("UsageData") or {} for v in client.df().get("Volumes") or []}
    out = []
    for v in sorted(found, key=lambda v: str(v.name)):
        size = usage.get(v.name, {}).get("Size")
        out.append(Volume(
            str(v.name), dict(v.attrs.get("Labels") or {}), str(v.attrs.get("CreatedAt", "")),
            size if isinstance(size, int) and size >= 0 else None,  # -1: not computed
        ))  # fmt: skip
    return out


def ensure_volume(client: Client, name: str, labels: Mapping[str, str]) -> bool:
    """Create volume `name` with `labels` unless it exists; True when it was created."""
    try:
        client.volumes.get(name)
        return False
    except docker.errors.NotFound:
        client.volumes.create(name, labels=dict(labels))
        return True


def untag(client: Client, ref: str) -> str | None:
    """`remove_image(ref)`: None once `ref` is gone (the image too, when it was its last
    tag and no image is built on it), else the engine's reason (a container uses it)."""
    try:
        remove_image(client, ref)
    except docker.errors.NotFound:
        return None
    except docker.errors.APIError as exc:
        if image(client, ref) is not None:
            return str(exc.explanation or exc).split("\n")[0][:200]
    return None
