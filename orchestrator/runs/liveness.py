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
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from orchestrator.core.owner import Owner

__all__ = ["STALE_SECONDS", "Owner", "heartbeat", "heartbeat_age"]

HEARTBEAT_SECONDS = 5.0
#: A heartbeat older than this means its writer is gone.
STALE_SECONDS = 60.0


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
