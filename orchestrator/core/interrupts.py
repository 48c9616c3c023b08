"""Signals that end a command (Ctrl-C, SIGTERM, SIGHUP), handled as one.

Batch systems end jobs with SIGTERM (SLURM at its time limit, then SIGKILL after
`KillWait`, 30 s by default), CI runners and systemd cancel with SIGTERM, a closed
terminal sends SIGHUP. `handled()` turns each into `Interrupted`, a
`KeyboardInterrupt`, so every cleanup written for Ctrl-C (stop the container, record
the run, tag nothing) runs for all three, and the front door exits 128 + the signal
number, as a shell reports a process the signal ended.

A signal that arrives while cleanup runs is held back: the first one ends the
command, the cleanup it starts is short (seconds) and must not itself be cut short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from orchestrator.core.exits import SIGNALLED

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_REASONS = {
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}


class Interrupted(KeyboardInterrupt):
    """The command was asked to stop by signal `signum`."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def reason(self) -> str:
        """What a record says: `terminated (SIGTERM)`."""
        return _REASONS.get(signal.Signals(self.signum), f"stopped by signal {self.signum}")

    @property
    def exit_code(self) -> int:
        return SIGNALLED + self.signum


def of(exc: KeyboardInterrupt) -> Interrupted:
    """The `Interrupted` a KeyboardInterrupt stands for (Python's own one is Ctrl-C)."""
    return exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)


class _State:
    def __init__(self) -> None:
        self.raised = False
        self.deferring = 0
        self.pending: int | None = None


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.raised:
        return
    if _state.deferring:
        _state.pending = _state.pending or signum
        return
    _state.raised = True
    raise Interrupted(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into `Interrupted` for the duration (main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handler) for sig in SIGNALS}
    _state.raised, _state.pending = False, None
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Finish the block before a signal takes effect (tag an image *and* write its lockfile)."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1
    if not _state.deferring and _state.pending is not None and not _state.raised:
        signum, _state.pending = _state.pending, None
        _state.raised = True
        raise Interrupted(signum)
