"""The code of the changed kernels: unified diffs of their normalised text, and the ones a
bench keeps for `report --html` (`AsmDiffs`, in `results/.asm/<candidate group>.json`),
saved at bench time because the images that hold the code may be gone when the report is
made. The text itself comes from the probe's ``asm`` mode (`codegen.collect`).
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.codegen.diff import CodegenDiff
from orchestrator.codegen.model import Codegen, KernelCode
from orchestrator.core.errors import UserError
from orchestrator.core.events import Caution, Emit, ignore
from orchestrator.core.files import read_model, write_atomic
from orchestrator.store.layout import asm_diffs_path

#: What `bench` keeps for the report: the most important changed kernels' code diffs,
#: each cut at this many characters, within this many seconds of probing.
ASM_KEPT, ASM_MAX_CHARS, ASM_SECONDS = 40, 60_000, 60.0


class KernelAsm(BaseModel):
    """One changed kernel's unified code diff (baseline → candidate), as `bench` kept it."""

    key: str
    name: str
    diff: str
    #: The diff was longer than the cap and ends early (`AsmDiffs.max_chars`).
    cut: bool = False


class AsmDiffs(BaseModel):
    """The code diffs of a bench's changed kernels, most important first; saved at bench
    time because the images that hold the code may be gone when the report is made."""

    schema_version: int = 1
    baseline: str  # the run groups of the bench
    candidate: str
    kernels: list[KernelAsm]
    #: Changed kernels whose diff was not kept (beyond the count or time limit, or failed).
    left_out: list[str] = Field(default_factory=list)
    max_chars: int


def save_asm_diffs(root: Path, record: AsmDiffs) -> Path:
    """Atomically, keyed by the bench's candidate group (its runs are `<group>-rN`)."""
    path = asm_diffs_path(root, record.candidate)
    return write_atomic(path, record.model_dump_json(indent=1) + "\n")


def load_asm_diffs(root: Path, candidate_group: str) -> AsmDiffs | None:
    """The kept code diffs of the bench whose candidate group is this, or None (an older
    bench, a microbenchmark, or nothing changed)."""
    path = asm_diffs_path(root, candidate_group)
    if not path.exists():
        return None
    fix = f"Delete it: the report then shows {candidate_group}'s codegen without its code."
    return read_model(path, AsmDiffs, "a bench's kernel code diffs", fix)


def asm_diff(
    baseline_text: str,
    candidate_text: str,
    baseline_label: str = "baseline",
    candidate_label: str = "candidate",
) -> str:
    """Unified diff of two normalised kernel texts (the probe's ``asm`` mode output)."""
    return "".join(
        difflib.unified_diff(
            baseline_text.splitlines(keepends=True),
            candidate_text.splitlines(keepends=True),
            fromfile=baseline_label,
            tofile=candidate_label,
        )
    )


def collect_asm_diffs(
    result: CodegenDiff, baseline: Codegen, candidate: Codegen,
    code: Callable[[int, KernelCode], str], groups: tuple[str, str], *,
    limit: int = ASM_KEPT, max_chars: int = ASM_MAX_CHARS, seconds: float = ASM_SECONDS,
    emit: Emit = ignore,
) -> AsmDiffs:  # fmt: skip
    """The code diffs of the first `limit` changed kernels (most important first), each
    cut at `max_chars`; `code(side, kernel)` prints one kernel's code (side 0: baseline).
    A kernel whose code cannot be had is named in `left_out`, not fatal."""
    kept: list[KernelAsm] = []
    left_out: list[str] = []
    started = time.monotonic()
    for delta in result.changed:
        base, cand = baseline.kernels.get(delta.key), candidate.kernels.get(delta.key)
        if len(kept) >= limit or time.monotonic() - started > seconds or not (base and cand):
            left_out.append(delta.key)
            continue
        try:
            text = asm_diff(code(0, base), code(1, cand), f"{result.baseline} {base.name}",
                            f"{result.candidate} {cand.name}")  # fmt: skip
        except UserError as exc:
            emit(Caution(f"code of {delta.key} not kept: {exc.message}"))
            left_out.append(delta.key)
            continue
        cut = len(text) > max_chars
        kept.append(KernelAsm(key=delta.key, name=base.name, diff=text[:max_chars], cut=cut))
    return AsmDiffs(baseline=groups[0], candidate=groups[1], kernels=kept, left_out=left_out,
                    max_chars=max_chars)  # fmt: skip
