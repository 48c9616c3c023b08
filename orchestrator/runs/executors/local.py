"""The local executor: one run after another in this process, on this machine's engine."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.core.events import Emit, RunNext, ignore
from orchestrator.runs import runner
from orchestrator.runs.executors.base import Chain, Executor, Job
from orchestrator.store.records import RunResult


class LocalExecutor(Executor):
    """One run after another in this process, on this machine's engine."""

    name = "local"

    def run(
        self, chains: Sequence[Chain], emit: Emit = ignore, *, stop_on_failure: bool = False
    ) -> list[list[RunResult]]:
        done: list[list[RunResult]] = []
        for chain in chains:
            done.append([])
            for job in chain:
                emit(RunNext(job.label, job.folded))
                result = self.run_one(job, emit)
                done[-1].append(result)
                if stop_on_failure and not result.finished:
                    return done
        return done

    def run_one(self, job: Job, emit: Emit) -> RunResult:
        """One run, planned and executed here (a container of this machine's engine)."""
        plan = runner.plan_run(self.client, self.settings, job.request, emit=emit)
        return runner.execute(self.client, self.settings, plan, emit)
