"""What library code has to say, as typed events: the one channel to the person.

Builds, runs and workflows never print. They call an `Emit` with an event, and the
front door (`orchestrator.cli.console`) decides what a person sees and what goes to
the webhook. Tests pass a list's `append` and look at what was said.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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
class Caution(Event):
    """Something that makes numbers less trustworthy (an unpinned governor)."""


@dataclass(frozen=True)
class Transfer(Event):
    """Progress of a download or copy: `done` of `total` bytes (None: unknown)."""

    done: int = 0
    total: int | None = None
    finished: bool = False


Emit = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The default sink: library calls say nothing unless the caller listens."""
