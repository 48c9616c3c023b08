"""Where runs run: here (`local`), or as batch jobs of the site's scheduler (`slurm`).

ReFrame, Ramble and Benchpark hand their runs to the scheduler a site already has rather
than grow one; so does this. An executor takes *chains* of runs: each chain runs in its
order, one run after the other (a bench's interleaved pairs, ABBA, so a drift cancels),
while different chains may run side by side (a matrix's systems and GPU types). It gives
back every run's record, finished or not, in the same order. What a run *is* (its plan,
container and record) stays the runner's: a SLURM job runs the same `gmxbench run` on
its node that the local executor runs here.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from orchestrator.core.events import Emit, Folded, ignore
from orchestrator.core.settings import Settings, SlurmResources
from orchestrator.engine import Client
from orchestrator.runs import runner
from orchestrator.runs.runner import RunRequest
from orchestrator.store.records import RunResult


@dataclass(frozen=True)
class Job:
    """One run handed to an executor, with what to call it while it waits and runs."""

    label: str
    request: RunRequest
    #: What its batch job asks for beyond the settings and the recipe (a GPU type).
    resources: SlurmResources | None = None
    #: The line it shares with other runs in a summary (a bench's pair); None: its own.
    folded: Folded | None = None


Chain = Sequence[Job]


class Executor(ABC):
    """Runs chains of runs; `run` returns each chain's records in the chain's order."""

    name: ClassVar[str]
    #: Whether its runs and builds need a container engine (the native executor's do not).
    needs_engine: ClassVar[bool] = True

    def __init__(self, client: Client | None, settings: Settings) -> None:
        self.client, self.settings = client, settings

    @abstractmethod
    def run(
        self, chains: Sequence[Chain], emit: Emit = ignore, *, stop_on_failure: bool = False
    ) -> list[list[RunResult]]:
        """Run every chain; with `stop_on_failure`, runs after the first unfinished one do
        not start (a bench has no verdict without every pair), and the records of those
        that ran are returned."""

    def preview(self, job: Job) -> dict[str, Any]:
        """What running `job` would do, for `--dry-run`: the exact container configuration
        (and, for a batch system, the submission and the job's script)."""
        plan = runner.plan_run(self.client, self.settings, job.request, allow_missing=True)
        shown: dict[str, Any] = json.loads(runner.dry_run_text(plan))
        return shown
