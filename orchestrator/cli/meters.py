"""What the console reads out of a build's log and a run's output to show progress.

Pure bookkeeping, no printing: `BuildMeter` follows ninja's `[n/N]` (or make's `[ p%]`)
lines and the build's current step; `RunMeter` follows mdrun's `step N` lines. Both give
the fraction done and a linear estimate of the time left, from the first counted line on
(configure steps and downloads before it say nothing about the compile's pace).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.core.events import Folded

#: BuildKit's plain log prefixes a step's output with `#<vertex> <seconds> `.
_PREFIX = r"^(?:#\d+ \d+(?:\.\d+)? )?"
_NINJA = re.compile(_PREFIX + r"\[(\d+)/(\d+)\] (?!STEP )")
_MAKE = re.compile(_PREFIX + r"\[\s*(\d+)%\] ")
_VERTEX = re.compile(r"^#\d+ ")
_MDRUN_STEP = re.compile(r"\bstep (\d+), (?:will finish|remaining)")
#: ninja's runs are counted when they are this long: a short second run (an install
#: that finds little to do) should not restart a bar.
_COUNTED = 20


def clock(seconds: float) -> str:
    """`4:05`, or `1:02:03` past an hour."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def short_step(text: str, width: int = 60) -> str:
    """A build step's first line, without BuildKit's vertex number, on one short line."""
    flat = " ".join(_VERTEX.sub("", text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass
class _Count:
    """Units done of a total, since `since` (monotonic) when `first` were done."""

    done: int = 0
    total: int | None = None
    since: float = 0.0
    first: int = 0

    def fraction(self) -> float | None:
        return min(self.done / self.total, 1.0) if self.total else None

    def left(self, now: float) -> float | None:
        """Seconds left at the pace since the first counted unit; None before a pace."""
        if not self.total or self.done <= self.first:
            return None
        pace = (now - self.since) / (self.done - self.first)
        return max(self.total - self.done, 0) * pace


@dataclass
class BuildMeter:
    """One build's progress, fed its log's lines."""

    what: str
    log: Path | None
    started: float = field(default_factory=lambda: time.monotonic())
    step: str = ""
    count: _Count = field(default_factory=_Count)
    percent: bool = False  # counting make's percentages rather than ninja's steps

    def feed_step(self, text: str) -> None:
        self.step = short_step(text)

    def feed(self, text: str, now: float | None = None) -> bool:
        """Take a log line; True when it moved the count."""
        now = time.monotonic() if now is None else now
        if (match := _NINJA.match(text)) is not None:
            done, total = int(match[1]), int(match[2])
            percent = False
        elif (match := _MAKE.match(text)) is not None:
            done, total, percent = int(match[1]), 100, True
        else:
            return False
        count = self.count
        restarted = done < count.done or percent != self.percent or count.total is None
        if restarted and (count.total is None or total >= _COUNTED):
            self.count = count = _Count(done, total, now, done)
            self.percent = percent
        elif restarted:
            return False  # a short second run: the first run's bar stays
        count.done, count.total = done, total
        return True

    def fraction(self) -> float | None:
        return self.count.fraction()

    def left(self, now: float | None = None) -> float | None:
        return self.count.left(time.monotonic() if now is None else now)

    def elapsed(self, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - self.started

    def counted(self) -> str:
        """`450/1119` (ninja), `45%` (make), or '' before either."""
        if self.count.total is None:
            return ""
        return f"{self.count.done}%" if self.percent else f"{self.count.done}/{self.count.total}"


@dataclass
class RunMeter:
    """One run's progress from mdrun's `step N` lines (`-v`), when its steps are known."""

    label: str
    run_id: str
    steps: int | None
    #: When it started, as the console stamps its lines (`[mm:ss]`).
    stamp: str = ""
    #: The line it shares with other runs (a bench's pair); None: a line of its own.
    folded: Folded | None = None
    started: float = field(default_factory=lambda: time.monotonic())
    count: _Count = field(default_factory=_Count)

    def feed(self, chunk: str, now: float | None = None) -> bool:
        found = _MDRUN_STEP.findall(chunk)
        if not found or not self.steps:
            return False
        now = time.monotonic() if now is None else now
        done = min(int(found[-1]), self.steps)
        if self.count.total is None:
            self.count = _Count(done, self.steps, now, done)
        self.count.done = done
        return True

    def left(self, now: float | None = None) -> float | None:
        return self.count.left(time.monotonic() if now is None else now)
