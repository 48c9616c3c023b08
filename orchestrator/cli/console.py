"""The console: where the events of library code become lines on a terminal and posts
to the webhook. Only the CLI makes one; everything else just emits.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from orchestrator.core.events import Caution, Event, Output, Step, Transfer
from orchestrator.core.settings import Settings
from orchestrator.results.notify import Notifier
from orchestrator.runs.runner import RunEnded, RunStarted


@dataclass
class _Meter:
    started: float = field(default_factory=time.monotonic)
    next_step: int = 10
    shown: bool = False


class Console:
    """Prints events on stderr (steps with the elapsed time) and posts run events."""

    def __init__(self, settings: Settings, out: TextIO | None = None) -> None:
        self.notifier = Notifier.from_settings(settings)
        self.out = out or sys.stderr
        self.started = time.monotonic()
        self.tty = self.out.isatty()
        self._meters: dict[str, _Meter] = {}

    def __call__(self, event: Event) -> None:
        match event:
            case RunStarted(result=result):
                self.notifier.start(result.run_id, {"build": result.build, "system": result.system})
            case RunEnded(result=result, log_tail=tail):
                if result.finished:
                    self.notifier.done(result.run_id, result.ns_per_day, {"build": result.build})
                else:
                    self.notifier.failed(result.run_id, tail)
            case Step(text=text):
                elapsed = int(time.monotonic() - self.started)
                self._write(f"[{elapsed // 60:02d}:{elapsed % 60:02d}] {text}\n")
            case Caution(text=text):
                self._write(f"warning: {text}\n")
            case Output(text=text):
                self._write(text)
            case Transfer():
                self._transfer(event)
            case _:
                self._write(event.text + "\n")

    def note(self, text: str) -> None:
        self._write(text + "\n")

    def error(self, text: str) -> None:
        self._write(f"error: {text}\n")

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _transfer(self, event: Transfer) -> None:
        """A line redrawn in place on a terminal; elsewhere a line every 10%."""
        meter = self._meters.setdefault(event.text, _Meter())
        mib = event.done / 2**20
        rate = mib / max(time.monotonic() - meter.started, 1e-6)
        if event.total:
            pct = 100 * event.done // event.total
            line = (
                f"  {event.text}: {mib:.1f}/{event.total / 2**20:.1f} MiB {pct:3d}% "
                f"{rate:.1f} MiB/s"
            )
        else:
            pct, line = 0, f"  {event.text}: {mib:.1f} MiB {rate:.1f} MiB/s"
        if self.tty:
            self._write("\r" + line + ("\n" if event.finished else ""))
        elif event.total and pct >= meter.next_step:
            meter.next_step = pct // 10 * 10 + 10
            self._write(line + "\n")
        elif event.finished and not event.total:
            self._write(line + "\n")
        if event.finished:
            del self._meters[event.text]
