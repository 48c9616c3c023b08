"""`matrix`: systems × builds × repeats (× GPU types) from one TOML file, through an executor.

Ramble and Benchpark describe such experiments declaratively and hand them to the
site's scheduler; this is the small version of that, for one question a compiler team
asks every night: how do these builds do on these systems (on these GPU types)?

    name = "nightly"                    # optional: the file's stem
    systems = ["water:6k", "bandwidth:64MiB"]
    builds = ["stable-cpu-gcc12", "dev-current"]
    repeats = 3
    steps = 2000                        # optional, as for `run`
    [[gpus]]                            # optional: one chain per GPU type
    name = "mi300x"
    constraint = "mi300x"               # any SLURM resource: partition, gres, …
    builds = ["stable-rocm7.12"]        # optional: this type's builds (images are per target)

Each system × GPU type is one chain: repeat after repeat, every build once, the order
reversed each repeat (ABBA for two builds), so a drift of the machine cancels between
builds as in `bench`. Chains may run side by side on a cluster. The summary compares
each build with the first one of its chain, by `compare`'s rules for unpaired groups
(a cell's runs share their tags across builds, so they are not `bench`'s pairs).
"""

from __future__ import annotations

import statistics
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Emit, Folded, Step, ignore
from orchestrator.core.settings import Settings, SlurmResources
from orchestrator.engine import Client
from orchestrator.platforms.base import ProfileMode
from orchestrator.runs.executors import Job, executor_for
from orchestrator.runs.recipe import load_system
from orchestrator.runs.runner import RunRequest
from orchestrator.store import layout
from orchestrator.store.records import RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT
from orchestrator.verdict.groups import compare_groups


class GpuType(SlurmResources):
    """One GPU type of a matrix: the SLURM resources that select it, and its own builds."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    builds: list[str] | None = Field(None, min_length=1)


class MatrixSpec(BaseModel):
    """One matrix file."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    systems: list[str] = Field(min_length=1)
    builds: list[str] = Field(min_length=1)
    repeats: int = Field(3, ge=1, le=100)
    steps: int | None = Field(None, gt=0)
    profile: ProfileMode = "none"
    mdrun_args: list[str] = Field(default_factory=list)
    cpu_only: bool = False
    timeout: float = Field(3600.0, gt=0)
    gpus: list[GpuType] = Field(default_factory=list)


def load_matrix(path: Path) -> MatrixSpec:
    """The matrix in `path`, or a `UsageError` naming the file and what is wrong."""
    try:
        spec = MatrixSpec.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UsageError(
            f"Matrix file {path} does not exist. Give the path of a TOML file."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"Matrix file {path} is not valid TOML: {exc}. Fix the file.") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'file'}: "
            f"{str(err['msg']).removeprefix('Value error, ')}"
            for err in exc.errors(include_url=False)
        )
        raise UsageError(
            f"Matrix file {path} is not a matrix: {problems}. It needs `systems` and `builds` "
            "lists; see `gmxbench matrix --help`."
        ) from None
    return spec.model_copy(update={"name": spec.name or path.stem})


@dataclass
class Cell:
    """One build on one system (and GPU type): its runs, and how it compares."""

    system: str
    gpu: str | None
    build: str
    #: The tag of its runs (`<tag>-r<N>` each); its group is named once a run has its build.
    tag: str
    group: str = ""
    results: list[RunResult] = field(default_factory=list)
    #: Against the chain's first build; None for that build, or when either side has no
    #: finished run.
    comparison: Comparison | None = None
    note: str | None = None

    @property
    def finished(self) -> list[RunResult]:
        return [r for r in self.results if r.finished and r.headline_value() is not None]

    def median(self) -> float | None:
        values = [r.headline_value() or 0.0 for r in self.finished]
        return statistics.median(values) if values else None


@dataclass
class MatrixOutcome:
    name: str
    tag: str
    executor: str
    cells: list[Cell]
    elapsed: float = 0.0


def matrix(
    client: Client, settings: Settings, spec: MatrixSpec, tag: str | None = None,
    emit: Emit = ignore, *, threshold_pct: float = THRESHOLD_PCT, alpha: float = ALPHA,
) -> MatrixOutcome:  # fmt: skip
    """Dispatch every cell's runs through the configured executor and summarise them."""
    started = datetime.now(UTC)
    tag = tag or f"{spec.name}-{started.strftime('%Y%m%d-%H%M%S')}"
    chains, cells = _plan(settings, spec, tag)
    emit(Step(f"matrix {spec.name}: {sum(map(len, chains))} runs in {len(chains)} chains, "
              f"tag {tag} (the same --tag collects them again)"))  # fmt: skip
    executor = executor_for(client, settings)
    ran = executor.run([[job for job, _ in chain] for chain in chains], emit)
    for chain, records in zip(chains, ran, strict=True):
        for (_, cell), result in zip(chain, records, strict=True):
            cell.results.append(result)
            cell.group = cell.group or layout.run_id(result.build, cell.system, cell.tag)
    _compare_cells(cells, RunStore(settings.results_dir), threshold_pct, alpha, emit)
    elapsed = (datetime.now(UTC) - started).total_seconds()
    return MatrixOutcome(spec.name or "", tag, executor.name, cells, elapsed)


def _plan(
    settings: Settings, spec: MatrixSpec, tag: str
) -> tuple[list[list[tuple[Job, Cell]]], list[Cell]]:
    """One chain per system × GPU type, each job with the cell it belongs to."""
    chains: list[list[tuple[Job, Cell]]] = []
    cells: list[Cell] = []
    types: list[GpuType | None] = list(spec.gpus) or [None]
    for gpu in types:
        builds = (gpu.builds if gpu else None) or spec.builds
        where = f" on {gpu.name}" if gpu else ""
        for system_name in spec.systems:
            system = load_system(system_name, settings.recipes_dirs).name
            cell_tag = f"{tag}-{gpu.name}" if gpu else tag
            row = {b: Cell(system, gpu.name if gpu else None, b, cell_tag) for b in builds}
            cells += row.values()
            chain: list[tuple[Job, Cell]] = []
            for repeat in range(1, spec.repeats + 1):
                for build in builds if repeat % 2 else builds[::-1]:
                    request = RunRequest(
                        build=build, system=system, profile=spec.profile,
                        tag=layout.repeat_tag(cell_tag, repeat, spec.repeats),
                        mdrun_args=spec.mdrun_args, steps=spec.steps, timeout=spec.timeout,
                        cpu_only=spec.cpu_only,
                    )  # fmt: skip
                    title = f"{system}{where}, repeat {repeat} of {spec.repeats}"
                    folded = Folded(title, build, len(builds))
                    job = Job(f"{title}: {build}", request, _resources(gpu), folded)
                    chain.append((job, row[build]))
            chains.append(chain)
    return chains, cells


def _resources(gpu: GpuType | None) -> SlurmResources | None:
    """The SLURM resources a GPU type names (its name and builds are the matrix's)."""
    if gpu is None:
        return None
    return SlurmResources.model_validate(gpu.model_dump(include=set(SlurmResources.model_fields)))


def _compare_cells(
    cells: list[Cell], results: RunStore, threshold_pct: float, alpha: float, emit: Emit
) -> None:
    """Each cell against the first build of its system (and GPU type)."""
    first: dict[tuple[str, str | None], Cell] = {}
    for cell in cells:
        base = first.setdefault((cell.system, cell.gpu), cell)
        if base is cell or not cell.finished or not base.finished:
            continue
        try:
            cell.comparison = compare_groups(
                results.finished(base.group, emit), results.finished(cell.group, emit),
                threshold_pct=threshold_pct, alpha=alpha,
                paired=False, store=results,
            )  # fmt: skip
        except UserError as exc:
            cell.note = exc.message
