"""The records a run leaves on disk: `result.json` (and where to find run directories).

A run that did not finish is recorded with `finished: false`, its failure, and no
ns/day: a failed run is never a number.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.hostinfo import HostInfo
from orchestrator.provenance import write_json_atomic

RESULT_FILE = "result.json"
KERNEL_FILE = "kernel_result.json"
BASELINE_TAG = "kernel-baseline"


class ImageRef(BaseModel):
    tag: str
    id: str
    labels: dict[str, str] = Field(default_factory=dict)


class RunResult(BaseModel):
    """One mdrun of one build on one system, with everything needed to trust or re-run it."""

    schema_version: int = 1
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
    llvm_commit: str | None = None
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


def run_id(build: str, system: str, tag: str) -> str:
    safe_system = system.replace(":", "-").replace("/", "-")
    return f"{build}__{safe_system}__{tag}"


def save_result(run_dir: Path, result: RunResult) -> Path:
    path = run_dir / RESULT_FILE
    write_json_atomic(path, result.model_dump_json(indent=2) + "\n")
    return path


def load_result(run_dir: Path) -> RunResult:
    return RunResult.model_validate_json((run_dir / RESULT_FILE).read_text())
