"""Builds: a Dockerfile through the API or BuildKit's CLI, or a script run in a container
and committed; an image id comes back and nothing is tagged."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import docker.errors
import requests.exceptions

from orchestrator.core.errors import NoSpace, UserError, space_for
from orchestrator.core.events import BuildEnded, BuildOutput, BuildStarted, BuildStep, Emit, ignore
from orchestrator.engine.build_log import (
    NO_SPACE,
    STEP,
    Failure,
    engine_full,
    failure_message,
    log_sink,
)
from orchestrator.engine.client import Client, cli_binary, kind
from orchestrator.engine.container import create, discard, stream_lines, wait

ContextFiles = Mapping[str, "bytes | Path"]


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
    failure = Failure()
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(log_sink(log, what)) if log is not None else None
        emit(BuildStarted(f"building {what}", what=what, log=log))

        def line(text: str) -> None:
            if sink is not None:
                sink(text)
            if STEP.match(text) and "CACHED" not in text and "DONE" not in text:
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
            if NO_SPACE.search(str(exc)) or failure.ran_out_of_space():
                raise engine_full(client, what, failure, str(exc)) from None
            raise BuildFailed(failure_message(what, failure, str(exc), log)) from None
    seconds = time.monotonic() - started
    text = f"built {what} as {image_id[:19]} in {seconds:.1f} s"
    emit(BuildEnded(text, what=what, log=log, seconds=seconds))
    return image_id


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
    failure = Failure()
    log_full: list[NoSpace] = []  # the log's disk filled up, said by the streaming thread
    container = create(client, config)
    try:
        if files:
            container.put_archive(put_at, _tar(files))
        if archive is not None:
            with archive.open("rb") as data:
                container.put_archive(put_at, data)
        with log_sink(log, what) as sink:
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
            streamer = threading.Thread(target=stream_lines, args=(container, line), daemon=True)
            streamer.start()
            code = wait(container, timeout)
            streamer.join(timeout=10)
            if log_full:
                seconds = time.monotonic() - started
                emit(BuildEnded(f"{what} failed", what=what, log=log, ok=False, seconds=seconds))
                raise log_full[0].adding("Nothing was tagged.")
        seconds = time.monotonic() - started
        if code != 0:
            emit(BuildEnded(f"{what} failed", what=what, log=log, ok=False, seconds=seconds))
            if failure.ran_out_of_space():
                raise engine_full(client, what, failure, f"it exited with {code}")
            error = "it ran out of time" if code is None else f"it exited with {code}"
            raise ContainerBuildFailed(failure_message(what, failure, error, log), code)
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
            discard(container)
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
