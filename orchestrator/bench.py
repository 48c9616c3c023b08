"""The compiler loop (the field report's bench-llvm-commit): build, run both sides, diff.

Phases: images (LLVM toolchain, GROMACS stable and dev) → runs (baseline and
candidate interleaved, N repeats each) → diff → report and webhook. Without a
compiler, the candidate is the stable image itself: an A/A comparison that shows
the noise floor of this machine.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import docker

from orchestrator import images, runner, toolchains
from orchestrator.compare import Comparison, compare_runs, load_runs
from orchestrator.errors import UsageError, UserError
from orchestrator.notify import Notifier
from orchestrator.platforms import ProfileMode
from orchestrator.provenance import ImageRecord
from orchestrator.recipes import load_recipe
from orchestrator.report import render, webhook_text
from orchestrator.runrecord import BASELINE_TAG, RunResult, run_id
from orchestrator.settings import Settings


@dataclass
class BenchRequest:
    llvm: str | None = None
    toolchain: str | None = None
    package: str | None = None
    system: str | None = None
    tag: str | None = None
    steps: int | None = None
    repeats: int = 3
    no_llvm_rebuild: bool = False
    no_gmx_rebuild: bool = False
    profile: ProfileMode = "trace"
    mdrun_args: list[str] = field(default_factory=list)
    threshold_pct: float = 2.0
    alpha: float = 0.05
    fmt: str = "simple"


class Progress:
    """One line per phase with the elapsed time, on stderr; and where the time went.

    `container_seconds` adds up the container runs (create to exit), so the rest is
    the tool's own overhead: image checks, planning, parsing, the diff.
    """

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.container_seconds = 0.0
        self.runs = 0

    def __call__(self, phase: str) -> None:
        elapsed = int(self.elapsed)
        print(f"[{elapsed // 60:02d}:{elapsed % 60:02d}] {phase}", file=sys.stderr, flush=True)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def outside_seconds(self) -> float:
        return self.elapsed - self.container_seconds

    def ran(self, result: RunResult) -> None:
        self.runs += 1
        self.container_seconds += result.duration_seconds or 0.0

    def timing(self) -> str:
        return (
            f"{self.elapsed:.1f} s in all: {self.container_seconds:.1f} s in {self.runs} "
            f"container runs, {self.outside_seconds:.1f} s outside them"
        )


def _dev_image(
    client: docker.DockerClient, settings: Settings, req: BenchRequest, progress: Progress
) -> ImageRecord | None:
    if req.no_gmx_rebuild:
        current = client.images.get(images.DEV_CURRENT)
        return ImageRecord.from_labels(images.DEV_CURRENT, current.id, current.labels)
    toolchain = req.toolchain
    if req.llvm:
        progress(f"LLVM toolchain at {req.llvm}")
        toolchain = toolchains.ensure_toolchain_llvm(
            client, settings, req.llvm, rebuild=not req.no_llvm_rebuild
        )
    elif req.package:
        progress(f"toolchain image from {req.package}")
        toolchain = toolchains.ensure_toolchain_package(client, settings, req.package)
    if toolchain is None:
        return None
    progress(f"GROMACS dev build with {toolchain}")
    return images.build_gromacs(client, settings, "dev", toolchain=toolchain)


def _run(
    client: docker.DockerClient, settings: Settings, build: str, system: str, tag: str,
    req: BenchRequest, llvm_commit: str | None, progress: Progress,
) -> RunResult:  # fmt: skip
    request = runner.RunRequest(
        build=build, system=system, tag=tag, profile=req.profile,
        mdrun_args=req.mdrun_args, steps=req.steps, llvm_commit=llvm_commit,
    )  # fmt: skip
    result = runner.execute(client, settings, runner.plan_run(client, settings, request))
    progress.ran(result)
    if not result.finished:
        raise UserError(
            f"Run {result.run_id} did not finish ({result.failure}); it is recorded as "
            f"unfinished in {settings.results / result.run_id}. No verdict without it."
        )
    return result


def bench(
    client: docker.DockerClient,
    settings: Settings,
    req: BenchRequest,
    progress: Progress | None = None,
) -> Comparison:
    if req.repeats < 1:
        raise UsageError("--repeats must be at least 1.")
    progress = progress or Progress()
    progress("GROMACS stable image")
    stable = images.build_gromacs(client, settings, "stable")
    dev = _dev_image(client, settings, req, progress)
    candidate = dev or stable
    system = load_recipe(req.system).name
    stamp_time = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    default_tag = (
        f"llvm-{dev.llvm_commit}" if dev and dev.llvm_commit else ("aa" if dev is None else "bench")
    )
    tag = req.tag or f"{default_tag}-{stamp_time}"
    baseline_group = run_id(stable.build or "", system, BASELINE_TAG)
    have_baseline = any(settings.results.glob(baseline_group + "*/result.json"))
    n = req.repeats
    total = n * (1 if have_baseline else 2)
    k = 0
    for i in range(1, n + 1):
        if not have_baseline:
            k += 1
            progress(f"run {k} of {total}: baseline {stable.build} on {system}")
            base_tag = BASELINE_TAG if n == 1 else f"{BASELINE_TAG}-r{i}"
            _run(client, settings, stable.build or "", system, base_tag, req, None, progress)
        k += 1
        progress(f"run {k} of {total}: {candidate.build} on {system}")
        cand_tag = tag if n == 1 else f"{tag}-r{i}"
        _run(
            client, settings, candidate.build or "", system, cand_tag, req,
            candidate.llvm_commit, progress,
        )  # fmt: skip
    progress("diff")
    base_runs = load_runs(settings.results, baseline_group)
    cand_runs = load_runs(settings.results, run_id(candidate.build or "", system, tag))
    comparison = compare_runs(
        base_runs, cand_runs, threshold_pct=req.threshold_pct, alpha=req.alpha
    )
    print(render(comparison, "markdown" if req.fmt == "markdown" else "simple"))
    Notifier.from_settings(settings).post(
        webhook_text(comparison), {"headline": comparison.headline}
    )
    progress(f"done: {progress.timing()}")
    return comparison
