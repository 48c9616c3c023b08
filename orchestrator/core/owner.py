"""Which process owns something that outlives a call (a run, an LLVM build container),
and whether it is still alive: a reused pid is not mistaken for the owner."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from pydantic import BaseModel

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class Owner(BaseModel):
    """The process that started a run or a build; `alive()` says whether it still does."""

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
