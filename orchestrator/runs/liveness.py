"""Is the process that started a run still there? (abandoned runs)

A run record is written when its container starts and again when it ends. Between the
two it says `finished: false` with no failure, which is also what a record says after
its process died without a word (SIGKILL, OOM killer, power loss). Two signs tell them
apart: the owner (host, boot, pid and the pid's start time, so a reused pid is not
mistaken for ours) when the reader is on the same machine, and a heartbeat file the
runner touches every few seconds when it is not (a shared results folder on a cluster).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
HEARTBEAT_SECONDS = 5.0
#: A heartbeat older than this means its writer is gone.
STALE_SECONDS = 60.0


class Owner(BaseModel):
    """The process that runs a run; `alive()` says whether it still does."""

    host: str
    boot_id: str | None = None
    pid: int
    #: Start time of `pid` in clock ticks since boot (/proc/<pid>/stat, field 22).
    started: int | None = None

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(host=socket.gethostname(), boot_id=_boot_id(), pid=pid, started=_started(pid))

    def alive(self) -> bool | None:
        """True or False when this machine can tell (same host and boot), else None."""
        if self.host != socket.gethostname() or self.boot_id is None:
            return None
        if self.boot_id != _boot_id():
            return False  # the machine rebooted since
        started = _started(self.pid)
        return started is not None and (self.started is None or started == self.started)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def _boot_id() -> str | None:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return None


def _started(pid: int) -> int | None:
    """The start time of `pid`, or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces
    return int(fields[19]) if fields[0] not in ("Z", "X") else None


def heartbeat_age(path: Path) -> float | None:
    """Seconds since the heartbeat file was last touched; None when there is none."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except OSError:
        return None


@contextlib.contextmanager
def heartbeat(path: Path, every: float = HEARTBEAT_SECONDS) -> Iterator[None]:
    """Touch `path` every `every` seconds while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while True:
            with contextlib.suppress(OSError):
                path.touch()
            if stop.wait(every):
                return

    thread = threading.Thread(target=beat, name="gmxbench-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every)
