"""The console: where the events of library code become lines for a person, and posts to
the webhook. Only the CLI makes one; everything else just emits.

Two ways to show the same events. Summarised (the CLI's default): a build is one bar fed
by ninja's `[n/N]` lines (elapsed time and an estimate of what is left) and its whole log
goes to the file it names; a run is one line with its ns/day and whether the machine was
shared while it ran, and the runs of a bench's pair (`Folded`) are one line between them,
so the console's length follows pairs, not runs; repeated warnings are said once.
`verbose` (`--verbose`, and any console made outside the CLI) streams every line of every
build and run as it comes.

On a terminal the summary draws its bars with `rich`, in place. Anywhere else (CI, a
pipe, a file) it writes plain lines without control codes: a build says where it is
every 10 % of its compile, or every few minutes while nothing is counted.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TextIO

from rich.console import Console as RichConsole
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from orchestrator.cli.meters import BuildMeter, RunMeter, clock
from orchestrator.core.events import (
    BuildEnded,
    BuildOutput,
    BuildStarted,
    BuildStep,
    Caution,
    Event,
    Folded,
    Output,
    RunNext,
    Step,
    Transfer,
)
from orchestrator.core.settings import Settings
from orchestrator.report.notify import Notifier
from orchestrator.runs.runner import RunEnded, RunStarted
from orchestrator.store import layout
from orchestrator.store.records import MICROBENCH_KIND, RunResult

#: Off a terminal, a build without a counted step says where it is this often.
QUIET_SECONDS = 300.0
#: How long a step may wait for the run it announces (then it is a line of its own).
HOLD_SECONDS = 2.0
#: Lines of a failed run's log shown under it.
TAIL_LINES = 20


@dataclass
class _Meter:
    started: float = field(default_factory=lambda: time.monotonic())
    next_step: int = 10
    shown: bool = False


@dataclass(frozen=True)
class _Part:
    """A finished run waiting for the rest of its line, and when its line began."""

    folded: Folded
    result: RunResult
    stamp: str


@dataclass
class _Said:
    """When a build last said where it was, off a terminal, and at which tenth."""

    at: float = field(default_factory=lambda: time.monotonic())
    tenth: int = 0


class Console:
    """Shows events on stderr (steps with the elapsed time) and posts run events.

    `verbose` streams everything as it comes; the CLI passes its `--verbose` flag. `tty`
    (default: whether `out` is a terminal) draws bars in place; without it no control
    code is written.
    """

    def __init__(
        self,
        settings: Settings,
        out: TextIO | None = None,
        *,
        verbose: bool = True,
        tty: bool | None = None,
    ) -> None:
        self.notifier = Notifier.from_settings(settings)
        self.out = out or sys.stderr
        self.started = time.monotonic()
        self.tty = self.out.isatty() if tty is None else tty
        self.verbose = verbose
        self.results_dir = settings.results_dir
        self._meters: dict[str, _Meter] = {}
        self._lock = threading.RLock()
        self._builds: dict[str, BuildMeter] = {}
        self._said: dict[str, _Said] = {}
        self._runs: dict[str, RunMeter] = {}
        self._warned: set[str] = set()
        #: A step's text, its time stamp, and the line its run shares (`RunNext`).
        self._pending: tuple[str, str, Folded | None] | None = None
        self._parts: dict[str, list[_Part]] = {}  # by line title, until the line is said
        self._timer: threading.Timer | None = None
        self._runs_shown = False
        self._rich: RichConsole | None = None
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        if self.tty and not verbose:
            self._rich = RichConsole(
                file=self.out, force_terminal=True, highlight=False, emoji=False, soft_wrap=True
            )

    # The front door ---------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._notify(event)
            if self.verbose:
                self._stream(event)
            else:
                self._summarise(event)

    def __enter__(self) -> Console:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Say a held step, end what is still drawn (a build stopped by Ctrl-C)."""
        with self._lock:
            self._flush()
            for what in list(self._builds):
                meter = self._builds.pop(what)
                self._drop(f"build:{what}")
                where = f"; its log: {meter.log}" if meter.log else ""
                self._line(f"  {what}: stopped after {clock(meter.elapsed())}{where}")
            for run_id in list(self._runs):
                self._runs.pop(run_id)
                self._drop(f"run:{run_id}")
            for title in list(self._parts):
                self._say_parts(title)
            for key in list(self._tasks):
                self._drop(key)
            if self._progress is not None:
                self._progress.stop()
                self._progress = None

    def note(self, text: str) -> None:
        with self._lock:
            self._flush()
            self._line(text)

    def error(self, text: str) -> None:
        with self._lock:
            self._flush()
            self._line(f"error: {text}", "red")

    # What is said -----------------------------------------------------------------------

    def _notify(self, event: Event) -> None:
        match event:
            case RunStarted(result=result):
                self.notifier.start(result.run_id, {"build": result.build, "system": result.system})
            case RunEnded(result=result, log_tail=tail):
                if result.finished:
                    self.notifier.done(result.run_id, result.ns_per_day, {"build": result.build})
                else:
                    self.notifier.failed(result.run_id, tail)

    def _stream(self, event: Event) -> None:
        """Everything, as it comes (`--verbose`)."""
        match event:
            case RunStarted() | RunEnded():
                pass
            case Step(text=text):
                self._write(f"{self._stamp()} {text}\n")
            case Caution(text=text):
                self._write(f"warning: {text}\n")
            case Output(text=text):
                self._write(text)
            case Transfer():
                self._transfer(event)
            case BuildStarted(log=log):
                if log is not None:
                    self._write(f"  log: {log}\n")
            case _:
                self._write(event.text + "\n")

    def _summarise(self, event: Event) -> None:
        """A line per thing that happened, a bar per thing that takes long."""
        match event:
            case RunStarted(result=result):
                self._run_started(result)
                return
            case Output(text=text):
                self._run_output(text)
                return
            case Caution(text=text):
                if text not in self._warned:
                    self._warned.add(text)
                    self._line(f"warning: {text}", "yellow")
                return
            case Transfer():
                self._flush()
                self._transfer(event)
                return
        self._flush()
        match event:
            case RunEnded(result=result, log_tail=tail):
                self._run_ended(result, tail)
            case Step():
                self._hold(event)
            case BuildStarted():
                self._build_started(event)
            case BuildStep(text=text):
                if (meter := self._builds.get(self._building() or "")) is not None:
                    meter.feed_step(text)
                    self._show_build(meter)
            case BuildOutput(text=text):
                if (meter := self._builds.get(self._building() or "")) is not None:
                    meter.feed(text)
                    self._show_build(meter)
            case BuildEnded():
                self._build_ended(event)
            case _:
                self._line(event.text)

    # Builds -----------------------------------------------------------------------------

    def _building(self) -> str | None:
        """The build whose lines come now: the latest begun (builds nest, never overlap)."""
        return next(reversed(self._builds), None)

    def _build_started(self, event: BuildStarted) -> None:
        if event.log is None:
            return  # a label-only build: seconds, and nothing to read
        self._line(f"  log: {event.log}")
        self._builds[event.what] = BuildMeter(event.what, event.log)
        self._said[event.what] = _Said()
        if self._rich is not None:
            self._task(f"build:{event.what}", event.what)

    def _show_build(self, meter: BuildMeter) -> None:
        now = time.monotonic()
        fraction, left = meter.fraction(), meter.left(now)
        estimate = f"about {clock(left)} left" if left is not None else ""
        if self._rich is not None:
            self._update(
                f"build:{meter.what}", completed=meter.count.done, total=meter.count.total,
                count=meter.counted(), left=estimate,
                status=meter.step if fraction is None else "",
            )  # fmt: skip
            return
        said = self._said.setdefault(meter.what, _Said())
        tenth = int(fraction * 10) if fraction is not None else said.tenth
        if tenth <= said.tenth and now - said.at < QUIET_SECONDS:
            return
        said.at, said.tenth = now, max(tenth, said.tenth)
        where = (
            f"{int(100 * fraction)}% [{meter.counted()}]" if fraction is not None else meter.step
        )
        parts = [where, f"{clock(meter.elapsed(now))} elapsed", estimate]
        self._line(f"  {meter.what}: " + ", ".join(p for p in parts if p))

    def _build_ended(self, event: BuildEnded) -> None:
        meter = self._builds.pop(event.what, None)
        self._said.pop(event.what, None)
        if meter is None:
            return
        self._drop(f"build:{event.what}")
        if event.ok:
            self._line(event.text)
        else:
            self._line(f"{event.what} failed after {clock(event.seconds)}", "red")

    # Runs -------------------------------------------------------------------------------

    def _hold(self, step: Step) -> None:
        """A step waits a moment: when a run starts next, it is that run's label."""
        folded = step.folded if isinstance(step, RunNext) else None
        self._pending = (step.text, self._stamp(), folded)
        self._timer = threading.Timer(HOLD_SECONDS, self._flush_locked)
        self._timer.daemon = True
        self._timer.start()

    def _flush_locked(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending is not None:
            (text, stamp, _), self._pending = self._pending, None
            self._line(f"{stamp} {text}")

    def _run_started(self, result: RunResult) -> None:
        label, stamp, folded = result.run_id, self._stamp(), None
        if self._pending is not None:  # the step that announced this run: its label
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            (label, stamp, folded), self._pending = self._pending, None
        if not self._runs_shown:
            self._runs_shown = True
            files = f"{layout.STDOUT_FILE}, {layout.STDERR_FILE}, {layout.LOG_NAMES[0]}"
            self._line(f"  run logs: {self.results_dir}/<run id>/ ({files})")
        meter = RunMeter(label, result.run_id, result.steps, stamp, folded)
        self._runs[result.run_id] = meter
        if self._rich is not None:
            self._task(f"run:{result.run_id}", label, total=meter.steps)

    def _run_output(self, text: str) -> None:
        for meter in self._runs.values():
            if meter.feed(text) and self._rich is not None:
                left = meter.left()
                self._update(
                    f"run:{meter.run_id}", completed=meter.count.done,
                    count=f"step {meter.count.done}/{meter.steps}",
                    left=f"about {clock(left)} left" if left is not None else "",
                )  # fmt: skip

    def _run_ended(self, result: RunResult, tail: str) -> None:
        meter = self._runs.pop(result.run_id, None)
        self._drop(f"run:{result.run_id}")
        label = meter.label if meter is not None else result.run_id
        stamp = meter.stamp if meter is not None else self._stamp()
        folded = meter.folded if meter is not None else None
        if folded is not None and result.finished:
            parts = self._parts.setdefault(folded.title, [])
            parts.append(_Part(folded, result, parts[0].stamp if parts else stamp))
            if len(parts) >= folded.parts:
                self._say_parts(folded.title)
            return
        if folded is not None:  # its line will not be whole: what ran of it, on its own
            self._say_parts(folded.title)
        named = "" if label == result.run_id else f" [{result.run_id}]"
        if not result.finished:
            seconds = result.duration_seconds or 0.0
            self._line(f"{stamp} {label}: FAILED after {clock(seconds)}: "
                       f"{result.failure or 'no reason recorded'}{named}", "red")  # fmt: skip
            lines = tail.splitlines()[-TAIL_LINES:]
            for line in lines:
                self._line(f"    {line}")
            self._line(f"  its logs: {self.results_dir / result.run_id}/")
            return
        noisy = _noise(result)
        flag = f"noisy: {noisy}" if noisy else "quiet"
        self._line(f"{stamp} {label}: {_measured(result)}, {flag}{named}",
                   "yellow" if noisy else None)  # fmt: skip

    def _say_parts(self, title: str) -> None:
        """The line of runs that share one (a pair), with what each measured; a line not
        whole (a run failed, the command stopped) says the runs it has."""
        parts = self._parts.pop(title, [])
        if not parts:
            return
        said = ", ".join(f"{p.folded.part} {_measured(p.result)}" for p in parts)
        noisy = [f"{p.folded.part}: {why}" for p in parts if (why := _noise(p.result))]
        flag = "noisy: " + "; ".join(noisy) if noisy else "quiet"
        if len(parts) < parts[0].folded.parts:
            flag += f" ({len(parts)} of {parts[0].folded.parts} runs)"
        ids = ", ".join(p.result.run_id for p in parts)
        self._line(f"{parts[0].stamp} {title}: {said}; {flag} [{ids}]",
                   "yellow" if noisy else None)  # fmt: skip

    # Drawing ----------------------------------------------------------------------------

    def _stamp(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        return f"[{elapsed // 60:02d}:{elapsed % 60:02d}]"

    def _line(self, text: str, style: str | None = None) -> None:
        if self._rich is not None:
            self._rich.print(Text(text, style=style or ""), soft_wrap=True)
        else:
            self._write(text + "\n")

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _task(self, key: str, description: str, total: int | None = None) -> None:
        if self._progress is None:
            assert self._rich is not None
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(bar_width=30),
                TextColumn("{task.fields[count]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[left]}"),
                TextColumn("{task.fields[status]}", style="dim"),
                console=self._rich, transient=True, refresh_per_second=4,
                redirect_stdout=False, redirect_stderr=False,
            )  # fmt: skip
            self._progress.start()
        self._tasks[key] = self._progress.add_task(
            description, total=total, count="", left="", status=""
        )

    def _update(
        self, key: str, completed: int | None = None, total: int | None = None, **fields: str
    ) -> None:
        """Move a drawn task (None leaves a number as it is)."""
        if self._progress is not None and key in self._tasks:
            shown: dict[str, Any] = dict(fields)  # rich's own keywords are not among them
            self._progress.update(self._tasks[key], completed=completed, total=total, **shown)

    def _drop(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        if task is None or self._progress is None:
            return
        self._progress.remove_task(task)
        if not self._tasks:
            self._progress.stop()
            self._progress = None

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
        if self._rich is not None:
            key = f"transfer:{event.text}"
            if key not in self._tasks and not event.finished:
                self._task(key, event.text, total=event.total)
            self._update(
                key, completed=event.done, count=f"{mib:.1f} MiB", left=f"{rate:.1f} MiB/s"
            )
            if event.finished:
                self._drop(key)
                self._line(line)
        elif self.tty:
            self._write("\r" + line + ("\n" if event.finished else ""))
        elif event.total and pct >= meter.next_step:
            meter.next_step = pct // 10 * 10 + 10
            self._write(line + "\n")
        elif event.finished and not event.total:
            self._write(line + "\n")
        if event.finished:
            del self._meters[event.text]


def _measured(result: RunResult) -> str:
    """`12.35 ns/day in 0:41`: what a finished run measured, and how long it took."""
    return f"{_headline(result)} in {clock(result.duration_seconds or 0.0)}"


def _noise(result: RunResult) -> str:
    """Why a run shared the machine, in short (its first reason); '' when it had it alone."""
    warnings = result.noise.warnings if result.noise is not None else []
    return warnings[0].split(" (")[0] if warnings else ""


def _headline(result: RunResult) -> str:
    """`12.34 ns/day`, or a microbenchmark run's headline metric with its unit."""
    if result.kind == MICROBENCH_KIND:
        metric = (result.metrics or {}).get(result.headline or "")
        if metric is not None:
            return f"{result.headline} {metric.value:.4g} {metric.unit}"
    value = result.ns_per_day
    return f"{value:.4g} ns/day" if value is not None else "no ns/day"
