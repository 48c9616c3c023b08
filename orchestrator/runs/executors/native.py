"""The native executor: runs on this host from native builds' prefixes, no container
engine (the lent GPU host, many HPC sites); builds are made by `images.native`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.core.events import Emit, RunNext, ignore
from orchestrator.runs import runner
from orchestrator.runs.executors.base import Chain, Executor, Job
from orchestrator.runs.native import launch_native, plan_native
from orchestrator.store import layout
from orchestrator.store.records import RunResult


class NativeExecutor(Executor):
    """One run after another in this process, each from its build's prefix."""

    name = "native"
    #: No container engine is asked for anything (`cli` connects to none).
    needs_engine = False

    def run(
        self, chains: Sequence[Chain], emit: Emit = ignore, *, stop_on_failure: bool = False
    ) -> list[list[RunResult]]:
        done: list[list[RunResult]] = []
        for chain in chains:
            done.append([])
            for job in chain:
                emit(RunNext(job.label, job.folded))
                plan = plan_native(self.settings, job.request)
                result = runner.execute(None, self.settings, plan, emit, launch_native)
                done[-1].append(result)
                if stop_on_failure and not result.finished:
                    return done
        return done

    def preview(self, job: Job) -> dict[str, Any]:
        plan = plan_native(self.settings, job.request)
        return {**plan.container, "run_dir": str(plan.run_dir), layout.SCRIPT_FILE: plan.script,
                **({"preflight_problems": plan.problems} if plan.problems else {})}  # fmt: skip
