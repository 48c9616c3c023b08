"""The native executor: runs on this host from native builds' prefixes, no container
engine (the lent GPU host, many HPC sites); builds are made by `images.native`."""

from __future__ import annotations

from typing import Any

from orchestrator.core.events import Emit
from orchestrator.runs import runner
from orchestrator.runs.executors.base import Job
from orchestrator.runs.executors.local import LocalExecutor
from orchestrator.runs.native import launch_native, plan_native
from orchestrator.store import layout
from orchestrator.store.records import RunResult


class NativeExecutor(LocalExecutor):
    """The local executor's order, each run from its build's prefix, not a container."""

    name = "native"
    #: No container engine is asked for anything (`cli` connects to none).
    needs_engine = False

    def run_one(self, job: Job, emit: Emit) -> RunResult:
        plan = plan_native(self.settings, job.request)
        return runner.execute(None, self.settings, plan, emit, launch_native)

    def preview(self, job: Job) -> dict[str, Any]:
        plan = plan_native(self.settings, job.request)
        return {**plan.container, "run_dir": str(plan.run_dir), layout.SCRIPT_FILE: plan.script,
                **({"preflight_problems": plan.problems} if plan.problems else {})}  # fmt: skip
