"""Codegen per offload target: two builds that may each hold code for several GPUs.

A HIP build for ``--offload-arch=gfx1201 --offload-arch=gfx942`` holds every kernel twice,
once per target, and a compiler change may alter one target's code and not the other's.
So two builds are compared target by target (:func:`diff_targets`): each target's kernels
alone, keyed as a one-target build keys them (`codegen.diff.target_view`), so a
one-target stable build and a two-target dev build match on the target they share, and a
target only one build holds is said in a word, not as hundreds of changed kernels.

A timing is the code of one target, the one the GPU that ran it executes: the verdict
and everything tied to it (nothing to measure, the controlled verdict, placement, the
kept code diffs) use that target's diff alone (:meth:`TargetsDiff.for_verdict`), and
the other targets are summarised beside it (:func:`targets_line`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from orchestrator.codegen.diff import (
    CodegenDiff,
    TargetSummary,
    diff,
    primary_target,
)
from orchestrator.codegen.model import Codegen
from orchestrator.core.errors import UsageError

__all__ = [
    "TargetsDiff",
    "changed_elsewhere",
    "diff_targets",
    "nothing_to_measure",
    "summarise",
    "targets_line",
]


class TargetsDiff(BaseModel):
    """Two builds compared on every target either holds."""

    model_config = ConfigDict(frozen=True)

    baseline: str
    candidate: str
    baseline_archs: list[str]
    candidate_archs: list[str]
    #: Target -> its diff (each with `targets` set): the baseline's targets first, then
    #: the candidate's others.
    diffs: dict[str, CodegenDiff]

    @property
    def summaries(self) -> list[TargetSummary]:
        return [summarise(d, arch in self.baseline_archs, arch in self.candidate_archs)
                for arch, d in self.diffs.items()]  # fmt: skip

    @property
    def several(self) -> bool:
        """More than one target in either build: the per-target summary says something."""
        return len(self.diffs) > 1

    def target(self, arch: str) -> CodegenDiff:
        """One target's diff; an unknown target is one clear paragraph naming each
        build's targets."""
        if arch in self.diffs:
            return self.diffs[arch]
        raise UsageError(
            f"--arch {arch}: neither build holds code for {arch}. The baseline "
            f"({self.baseline}) holds {', '.join(self.baseline_archs) or 'no GPU target'}; "
            f"the candidate ({self.candidate}) holds "
            f"{', '.join(self.candidate_archs) or 'no GPU target'}. Give one of those, or leave "
            "--arch out for this host's target (or the primary one) and every target's summary."
        )

    def verdict_target(self, host: str | None, preferred: Sequence[str] = ()) -> tuple[str, bool]:
        """The target whose code the timings are: the host GPU's when either build holds
        it (True), else the primary one (`codegen.diff.primary_target`, False)."""
        if host is not None and host in self.diffs:
            return host, True
        return primary_target(self.baseline_archs, self.candidate_archs, preferred), False

    def for_verdict(self, host: str | None, preferred: Sequence[str] = ()) -> CodegenDiff:
        """The diff of the target the timings are judged on, marked host or primary."""
        arch, is_host = self.verdict_target(host, preferred)
        return self.diffs[arch].model_copy(update={"host": is_host})


def summarise(d: CodegenDiff, in_baseline: bool = True, in_candidate: bool = True) -> TargetSummary:
    """One target's diff in the numbers its summary line shows."""
    return TargetSummary(
        arch=d.arch or "unknown",
        in_baseline=in_baseline,
        in_candidate=in_candidate,
        changed=len(d.changed),
        total=sum(c.total for c in d.categories.values()),
        occupancy_drops=sum(1 for k in d.changed if k.occupancy_drop),
        more_spills=sum(1 for k in d.changed if k.spill_increase),
    )


def diff_targets(baseline: Codegen, candidate: Codegen) -> TargetsDiff:
    """The baseline's codegen and the candidate's compared on each target either holds,
    every target's diff carrying the summary of all of them."""
    archs = [*baseline.archs, *(arch for arch in candidate.archs if arch not in baseline.archs)]
    plain = {arch: diff(baseline, candidate, arch) for arch in archs}
    summaries = [summarise(d, arch in baseline.archs, arch in candidate.archs)
                 for arch, d in plain.items()]  # fmt: skip
    return TargetsDiff(
        baseline=baseline.build or "baseline",
        candidate=candidate.build or "candidate",
        baseline_archs=list(baseline.archs),
        candidate_archs=list(candidate.archs),
        diffs={arch: d.model_copy(update={"targets": summaries}) for arch, d in plain.items()},
    )


def targets_line(d: CodegenDiff) -> str | None:
    """``gfx1201 (this host): 4 changed of 566; gfx942: 0 changed of 566; gfx90a: only in
    the candidate (566 kernels)``, the diff's own target first; None for a one-target pair."""
    if len(d.targets) < 2:
        return None
    mine = [t for t in d.targets if t.arch == d.arch]
    others = [t for t in d.targets if t.arch != d.arch]
    return "; ".join(t.text(host=d.host and t.arch == d.arch) for t in [*mine, *others])


def verdict_note(d: CodegenDiff) -> str:
    """Which target the verdict is of, and why: ``gfx1201 (this host's GPU)``."""
    why = "this host's GPU" if d.host else "the primary target: no GPU of a target held here"
    return f"{d.arch} ({why})"


def changed_elsewhere(d: CodegenDiff) -> list[TargetSummary]:
    """The other targets whose code changed (or that only one build holds)."""
    return [
        t for t in d.targets
        if t.arch != d.arch and (t.changed or not (t.in_baseline and t.in_candidate))
    ]  # fmt: skip


def nothing_to_measure(d: CodegenDiff, base: str) -> str:
    """`bench`'s word when the verdict target's code did not change: `base` alone, or
    with where the change is: ``gfx1201 (this host): …; gfx942: 4 changed of 566 —
    measure on a gfx942 host``."""
    elsewhere = changed_elsewhere(d)
    if len(d.targets) < 2 or not elsewhere:
        return base
    where = "this host" if d.host else "primary target"
    parts = [f"{d.arch} ({where}): {base} here"]
    for t in elsewhere:  # a target one build lacks cannot be compared on any host
        both = t.in_baseline and t.in_candidate
        parts.append(f"{t.text()} — measure on a {t.arch} host" if both else t.text())
    return "; ".join(parts)
