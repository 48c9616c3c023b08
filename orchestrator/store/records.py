"""Run records: what `result.json` and `scheduler.json` in a run directory say.

A run that did not finish is recorded with `finished: false`, its failure and no ns/day:
a failed run is never a number. Records are read as they were written by any earlier
version: a field added since is derived from what the old record says (`RunResult`'s
schema history).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, Field, model_validator

from orchestrator.core.idents import LlvmCommit
from orchestrator.parsers.microbench import MetricValue
from orchestrator.platforms.base import ProfileOutcome
from orchestrator.runs.hostinfo import HostInfo, HostNoise
from orchestrator.runs.liveness import Owner
from orchestrator.store import layout

#: `RunResult.kind` of a microbenchmark run: "kernel" on disk since schema 3.
MICROBENCH_KIND: Final = "kernel"


class ImageRef(BaseModel):
    tag: str
    id: str
    labels: dict[str, str] = Field(default_factory=dict)


class RunResult(BaseModel):
    """One mdrun (or microbenchmark) of one build, with everything needed to trust or
    re-run it.

    Schema 2 added `energies`; `RunStore.finished` reads them from md.log for schema 1.
    Schema 3 added microbenchmark runs (`kind`, `metrics`, `headline`, `facts`).
    Schema 4 added `group`, `repeat`, `role` and `bench`, which older records said only
    in their tag (`-r<N>`, `kernel-baseline-<bench tag>`): they are derived from it when
    read (`_placed`). The runner writes them from the run's id and tag (`placement`): a
    batch job's command line carries only the tag.
    """

    schema_version: int = 4
    run_id: str
    build: str
    system: str
    tag: str
    platform: str
    timestamp: str
    finished: bool = False
    failure: str | None = None
    return_code: int | None = None
    duration_seconds: float | None = None
    gmx_version: str | None = None
    ns_per_day: float | None = None
    hour_per_ns: float | None = None
    mdrun_wall_seconds: float | None = None
    setup_seconds: float | None = None
    profile_mode: str = "none"
    llvm_commit: LlvmCommit | None = None
    compiler: str | None = None
    compiler_version: str | None = None
    image: ImageRef
    host: HostInfo
    command: list[str]
    mdrun_args: list[str] = Field(default_factory=list)
    steps: int | None = None
    atoms: int | None = None
    ntomp: int | None = None
    device: int | None = None
    pme_grid: list[int] | None = None
    coulomb_cutoff: float | None = None
    #: Average energies of the run (kJ/mol) from md.log, for the validity check.
    energies: dict[str, float] | None = None
    #: The process that ran it: tells a run in progress from an abandoned one.
    owner: Owner | None = None
    #: A GPU build run on the host CPU only (`--cpu-only`): its numbers are host code's.
    cpu_only: bool = False
    #: What else the machine ran meanwhile (other processes, steal, containers).
    noise: HostNoise | None = None
    #: The batch job that ran it (SLURM_JOB_ID on its node); its end is `SchedulerRecord`.
    batch_job: str | None = None
    #: Run on the host from a native build's prefix, not in a container (the native
    #: executor: a host without a container engine); `image` names the build then.
    native: bool = False
    #: What a counters or systrace profiler did (its findings: `COUNTERS_FILE`, `SYSTRACE_FILE`).
    profile: ProfileOutcome | None = None
    #: mdrun on a GROMACS system, or a microbenchmark (`runs.microbench_recipe`, whose kind is
    #: `MICROBENCH_KIND`).
    kind: Literal["gromacs", "kernel"] = "gromacs"
    #: A microbenchmark run's numbers, each with the unit and direction its recipe declares.
    metrics: dict[str, MetricValue] | None = None
    #: The metric a microbenchmark run's verdict leads with.
    headline: str | None = None
    #: What a microbenchmark run found that is not a number (device, API, best configuration).
    facts: dict[str, str] = Field(default_factory=dict)
    #: The group it is a repeat of (`<build>__<system>__<tag>`), its repeat number (None
    #: for a single run), and `baseline` for a bench's re-measured baseline.
    group: str
    repeat: int | None = None
    role: Literal["baseline"] | None = None
    #: The tag of the bench whose baseline it is: its pair partners are the runs of the
    #: same repeat in that group (`results.compare.bench_pairs`).
    bench: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _placed(cls, data: Any) -> Any:
        """A record from before schema 4, without a group: placed by its id and tag."""
        if isinstance(data, dict) and "group" not in data and "run_id" in data:
            return {**placement(str(data["run_id"]), str(data.get("tag", ""))), **data}
        return data

    @property
    def group_tag(self) -> str:
        """The tag of its group: its own tag without the repeat's `-r<N>`."""
        return layout.group_tag(self.tag, self.repeat)

    def headline_value(self) -> float | None:
        """ns/day for mdrun, the recipe's headline metric for a microbenchmark run."""
        if self.kind == MICROBENCH_KIND:
            metric = (self.metrics or {}).get(self.headline or "")
            return metric.value if metric is not None else None
        return self.ns_per_day


def placement(run: str, tag: str) -> dict[str, Any]:
    """The group, repeat, role and bench a run's id and tag name (`store.layout`)."""
    group, repeat = layout.split_repeat(run)
    bench = layout.bench_of_baseline(layout.split_repeat(tag)[0])
    role = "baseline" if bench is not None else None
    return {"group": group, "repeat": repeat, "role": role, "bench": bench}


class SchedulerRecord(BaseModel):
    """A run's batch job as its scheduler saw it, written by the host that submitted it.

    The scheduler has the last word: a job that did not complete (cancelled, timed out,
    its node lost) makes its run failed with `failure`, whatever its own record says, since
    the node's process may have written that record before or after the job was lost.
    """

    executor: Literal["slurm"] = "slurm"
    job_id: str
    job_name: str
    #: The scheduler's final state (COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, …).
    state: str
    reason: str | None = None
    exit_code: str | None = None
    node: str | None = None
    submitted: str | None = None
    ended: str | None = None
    #: Why the run does not count, in the scheduler's words; None when the job completed.
    failure: str | None = None


RunState = Literal["finished", "failed", "running", "abandoned", "unreadable"]
