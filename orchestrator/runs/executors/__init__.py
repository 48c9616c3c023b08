"""Executors: where runs run (`local`, `slurm`, `native`), all behind `base.Executor`, and this
registry of them.

The platforms package's shape: an interface, one module per executor, one entry here,
and the choice the settings make (`ORCH_EXECUTOR`, or a command's `--executor`, both
checked against `names()`).
"""

from __future__ import annotations

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings, register_choices
from orchestrator.engine import Client
from orchestrator.runs.executors.base import Chain, Executor, Job
from orchestrator.runs.executors.local import LocalExecutor
from orchestrator.runs.executors.native import NativeExecutor
from orchestrator.runs.executors.slurm import SlurmExecutor

__all__ = [
    "EXECUTORS", "Chain", "Executor", "Job", "LocalExecutor", "NativeExecutor", "SlurmExecutor",
    "executor_for", "names",
]  # fmt: skip

#: Every executor by its name, the default (`local`) first.
EXECUTORS: dict[str, type[Executor]] = {
    executor.name: executor for executor in (LocalExecutor, SlurmExecutor, NativeExecutor)
}


def names() -> list[str]:
    return list(EXECUTORS)


def executor_for(client: Client | None, settings: Settings) -> Executor:
    """The executor the settings name."""
    if settings.executor not in EXECUTORS:
        known = ", ".join(EXECUTORS)
        raise UsageError(f"Unknown executor {settings.executor!r}; this tool knows {known}.")
    return EXECUTORS[settings.executor](client, settings)


register_choices("executor", names())
