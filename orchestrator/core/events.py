"""What library code has to say, as typed events: the one channel to the person.

Builds, runs and workflows never print. They call an `Emit` with an event, and the
front door (`orchestrator.cli.console`) decides what a person sees and what goes to
the webhook. Tests pass a list's `append` and look at what was said.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Event:
    """Something worth telling; `text` is what a terminal shows."""

    text: str


@dataclass(frozen=True)
class Message(Event):
    """A line of our own, or of a tool we drive (a build step, debootstrap)."""


@dataclass(frozen=True)
class Output(Event):
    """A raw chunk of a container's live output (mdrun's progress uses `\\r`)."""


@dataclass(frozen=True)
class Step(Event):
    """A workflow step begins; the console prefixes the elapsed time."""


@dataclass(frozen=True)
class Folded:
    """Runs shown as one line in a summary: a bench's interleaved pair, a matrix's repeat.

    The line is said when the last of its `parts` runs ends, so a console's length follows
    pairs, not runs; `part` is this run's name on it (`baseline`, a build).
    """

    title: str
    part: str
    parts: int


@dataclass(frozen=True)
class RunNext(Step):
    """An executor's next run, by its job's label (and its line, when it shares one)."""

    folded: Folded | None = None


@dataclass(frozen=True)
class Caution(Event):
    """Something that makes numbers less trustworthy (an unpinned governor)."""


@dataclass(frozen=True)
class Transfer(Event):
    """Progress of a download or copy: `done` of `total` bytes (None: unknown)."""

    done: int = 0
    total: int | None = None
    finished: bool = False


@dataclass(frozen=True)
class BuildStarted(Event):
    """An image build (or a debootstrap) begins; its whole log goes to `log`.

    A build without a log (a label-only build, seconds) is not worth a person's attention.
    """

    what: str = ""
    log: Path | None = None


@dataclass(frozen=True)
class BuildOutput(Message):
    """One line of a build's log, already written to its log file."""


@dataclass(frozen=True)
class BuildStep(BuildOutput):
    """A build's line that begins a step (a Dockerfile instruction, a BuildKit vertex)."""


@dataclass(frozen=True)
class BuildEnded(Message):
    """A build ended: `ok` (`text` says what it made), or failed (the error raised says why)."""

    what: str = ""
    log: Path | None = None
    ok: bool = True
    seconds: float = 0.0


Emit = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The default sink: library calls say nothing unless the caller listens."""
