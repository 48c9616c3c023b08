"""A build's log: written as it comes, and read for what a failure's message shows
(the failing step, the lines that explain it, a disk that filled up)."""

from __future__ import annotations

import contextlib
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors
import requests.exceptions

from orchestrator.core.errors import NoSpace, space_for
from orchestrator.engine.client import Client


@dataclass
class Failure:
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
        return any(NO_SPACE.search(text) for text in list(self.tail)[-_TAIL_LINES:])

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


#: A step's first line: Docker's classic builder, BuildKit, and Podman's buildah.
STEP = re.compile(r"^(Step \d+/\d+ : .*|#\d+ \[[^\]]+\] .*|(\[\d+/\d+\] )?STEP \d+/\d+: .*)")
#: A tool saying why it stopped: ninja, a compiler, CMake, make, apt.
_EXPLAINS = re.compile(
    r"FAILED: |\b(fatal )?error: |CMake Error|make(\[\d+\])?: \*\*\*|^(#\d+ [\d.]+ )?E: "
)
_WHY_LINES, _TAIL_LINES, _MOST_LINES = 15, 25, 30


def failure_message(what: str, failure: Failure, error: str, log: Path | None) -> str:
    """The paragraph a failed build raises: where it failed, why, and the log's lines."""
    tail = "\n".join("    " + line for line in failure.shown())
    where = f"\nThe whole log: {log}" if log is not None else ""
    return (
        f"Building {what} failed at {failure.step or 'an unknown step'}: {error.strip()}. "
        f"Nothing was tagged. Last lines of the build log:\n{tail}{where}"
    )


@contextlib.contextmanager
def log_sink(log: Path, what: str) -> Iterator[Callable[[str], None]]:
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
NO_SPACE = re.compile(r"no space left on device|disk quota exceeded", re.IGNORECASE)


def engine_full(client: Client, what: str, failure: Failure, error: str) -> NoSpace:
    """A build that failed for want of disk space, in one paragraph: the engine's disk."""
    said = next((t for t in [error, *reversed(failure.tail)] if NO_SPACE.search(t)), error)
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
