"""Executors: where runs run (`local`, `slurm`), all behind `base.Executor`.

The platforms package's shape: an interface, one module per executor, and the choice
the settings make (`ORCH_EXECUTOR`, or a command's `--executor`).
"""

from __future__ import annotations

from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.runs.executors.base import Chain, Executor, Job
from orchestrator.runs.executors.local import LocalExecutor
from orchestrator.runs.executors.slurm import SlurmExecutor

__all__ = ["Chain", "Executor", "Job", "LocalExecutor", "SlurmExecutor", "executor_for"]


def executor_for(client: Client, settings: Settings) -> Executor:
    """The executor the settings name."""
    if settings.executor == "slurm":
        return SlurmExecutor(client, settings)
    return LocalExecutor(client, settings)
