"""What a compiler change did to the code of a build: two builds' codegen compared.

Per category: kernels changed (different normalised code), unchanged, only in the
baseline, only in the candidate. Per changed kernel: the deltas a compiler developer
looks at, most important first — occupancy drops, then new or more spills and scratch,
then the largest VGPR and instruction changes. A category whose kernels are all
byte-identical in both builds cannot owe a timing change to codegen:
:func:`code_unchanged` says so, and `codegen.table.summary_lines` prints it beside a
timing verdict. Builds of different AMDGPU code-object versions differ in every kernel's
ABI, whatever the compiler change did: :func:`code_object_note` says so, first.

A build may hold code for several GPU targets (``--offload-arch`` repeated): each target
is compared on its own (:func:`diff` with ``arch=``, every one at once in
`codegen.targets`), since a timing is the code of one target, the host's. The words and
the table `codegen diff` prints are `codegen.table`'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.codegen.model import Codegen, KernelCode, is_gpu_arch
from orchestrator.parsers.categories import CATEGORIES

Pair = tuple[int | None, int | None]


class KernelDelta(BaseModel):
    """One kernel whose code differs between the baseline and the candidate, with its
    resource counts (each a pair: baseline's, candidate's). On NVIDIA, `vgprs` are the
    registers per thread, `lds_bytes` the shared memory, `scratch_bytes` the stack frame
    plus local memory, and `spills` unknown (ptxas spills into the stack frame)."""

    model_config = ConfigDict(frozen=True)

    key: str
    name: str
    demangled: str | None
    category: str
    unit: str
    arch: str
    instructions: Pair
    vgprs: Pair
    sgprs: Pair
    agprs: Pair
    spills: Pair
    scratch_bytes: Pair
    lds_bytes: Pair
    occupancy: Pair
    classes: dict[str, int]  # candidate - baseline per instruction class, non-zero only

    @property
    def occupancy_drop(self) -> int:
        base, cand = self.occupancy
        return (base - cand) if base is not None and cand is not None and cand < base else 0

    @property
    def new_spills(self) -> bool:
        base, cand = self.spills
        return bool(cand) and not base

    @property
    def spill_increase(self) -> int:
        base, cand = self.spills
        return max((cand or 0) - (base or 0), 0)

    def note(self) -> str:
        notes = []
        if self.occupancy_drop:
            notes.append(f"occupancy -{self.occupancy_drop}")
        elif _delta(self.occupancy) > 0:
            notes.append(f"occupancy +{_delta(self.occupancy)}")
        if self.new_spills:
            notes.append("new spills")
        elif self.spill_increase:
            notes.append("more spills")
        elif _delta(self.spills) < 0:
            notes.append("fewer spills")
        if _delta(self.scratch_bytes) > 0:
            notes.append("more scratch")
        return ", ".join(notes)

    def sort_key(self) -> tuple[int, int, int, int, float, str]:
        rank = 0 if self.occupancy_drop else 1 if self.spill_increase else 2
        if rank == 2 and _delta(self.scratch_bytes) <= 0:
            rank = 3
        base_instr = max(self.instructions[0] or 0, 1)
        relative = abs(_delta(self.instructions)) / base_instr
        return (
            rank,
            -self.occupancy_drop,
            -self.spill_increase,
            -abs(_delta(self.vgprs)),
            -relative,
            self.key,
        )


class CategoryDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    category: str
    changed: list[str]
    unchanged: list[str]
    only_baseline: list[str]
    only_candidate: list[str]

    @property
    def total(self) -> int:
        only = len(self.only_baseline) + len(self.only_candidate)
        return len(self.changed) + len(self.unchanged) + only

    @property
    def identical(self) -> bool:
        """Every kernel of the category is in both builds with the same code."""
        only = self.only_baseline or self.only_candidate
        return bool(self.unchanged) and not (self.changed or only)


class TargetSummary(BaseModel):
    """One offload target of a pair of builds, in a line: how many of its kernels changed,
    or that only one build holds it (`codegen.targets`)."""

    model_config = ConfigDict(frozen=True)

    arch: str
    in_baseline: bool
    in_candidate: bool
    changed: int = 0
    total: int = 0  # kernels (CPU: functions) of the target in either build
    occupancy_drops: int = 0
    more_spills: int = 0

    def text(self, *, host: bool = False) -> str:
        """``gfx1201: 4 changed of 566`` or ``gfx942: only in the candidate (566 kernels)``."""
        name = f"{self.arch} (this host)" if host else self.arch
        if not (self.in_baseline and self.in_candidate):
            side = "baseline" if self.in_baseline else "candidate"
            return f"{name}: only in the {side} ({self.total} kernels)"
        extra = [f"{self.occupancy_drops} with lower occupancy"] * bool(self.occupancy_drops)
        extra += [f"{self.more_spills} with more spills"] * bool(self.more_spills)
        return f"{name}: {self.changed} changed of {self.total}" + "".join(f", {e}" for e in extra)


class CodegenDiff(BaseModel):
    """Two builds' code compared on one offload target (CPU: the host functions)."""

    model_config = ConfigDict(frozen=True)

    baseline: str
    candidate: str
    #: The target compared (gfx1201, x86_64); None in a diff made before targets were kept.
    arch: str | None = None
    #: True when `arch` is the GPU target of the host that judges (or ran) the timings,
    #: False when it is the builds' primary target (no GPU here, or not one they hold).
    host: bool = False
    #: Every target of either build, summarised (more than one: a multi-target build);
    #: the verdict is this diff's target's alone, the others are shown beside it.
    targets: list[TargetSummary] = Field(default_factory=list)
    gpu: bool = True  # GPU kernels (a HIP build), else host functions (a CPU build)
    categories: dict[str, CategoryDiff]
    changed: list[KernelDelta]  # most important first
    #: The AMDGPU code-object versions of each build's code objects (empty: a CPU build, or
    #: a codegen taken before versions were recorded).
    baseline_code_object_versions: list[int] = Field(default_factory=list)
    candidate_code_object_versions: list[int] = Field(default_factory=list)
    #: Key -> demangled name of every kernel of either build: kernel traces name kernels
    #: demangled, and `verdict.controlled` matches them to keys by it.
    demangled: dict[str, str] = Field(default_factory=dict)

    def code_unchanged(self, category: str) -> bool:
        return code_unchanged(self, category)

    def code_object_note(self) -> str | None:
        return code_object_note(self)


def _delta(pair: Pair) -> int:
    base, cand = pair
    return (cand or 0) - (base or 0) if base is not None or cand is not None else 0


def _pair(base: KernelCode, cand: KernelCode, field: str) -> Pair:
    return getattr(base, field), getattr(cand, field)


def _kernel_delta(key: str, base: KernelCode, cand: KernelCode) -> KernelDelta:
    classes = {
        name: cand.classes.get(name, 0) - base.classes.get(name, 0)
        for name in sorted(set(base.classes) | set(cand.classes))
        if cand.classes.get(name, 0) != base.classes.get(name, 0)
    }
    return KernelDelta(
        key=key,
        name=base.name,
        demangled=cand.demangled or base.demangled,
        category=cand.category,
        unit=cand.unit,
        arch=cand.arch,
        instructions=(base.instructions, cand.instructions),
        vgprs=_pair(base, cand, "thread_registers"),
        sgprs=_pair(base, cand, "sgprs"),
        agprs=_pair(base, cand, "agprs"),
        spills=_pair(base, cand, "spills"),
        scratch_bytes=_pair(base, cand, "private_bytes"),
        lds_bytes=_pair(base, cand, "group_bytes"),
        occupancy=_pair(base, cand, "occupancy"),
        classes=classes,
    )


def primary_target(
    baseline: Sequence[str], candidate: Sequence[str], preferred: Sequence[str] = ()
) -> str:
    """The target of the baseline's targets and the candidate's that a verdict is judged
    on when the host's is not known: the first of `preferred` (the candidate image's
    `gpu_arch` list) both builds hold, else the first of the baseline's targets that the
    candidate holds too, else the baseline's first (no target in common)."""
    for arch in [*preferred, *baseline]:
        if arch in baseline and arch in candidate:
            return arch
    return ([*baseline, *candidate] or ["unknown"])[0]


def target_view(codegen: Codegen, arch: str) -> Codegen:
    """The codegen of `codegen`'s `arch` code alone, keyed as a build for that one
    target keys it: the mangled name, ``@arch@unit`` only where a name is in several
    units. A single-target build's view is the build itself, keys included, so a kernel
    has the same key in a one-target and a many-target build (and in stored diffs)."""
    mine = [k for k in codegen.kernels.values() if k.arch == arch]
    if len(mine) == len(codegen.kernels) and codegen.archs in ([arch], []):
        return codegen
    names: dict[str, int] = {}
    for k in mine:
        names[k.name] = names.get(k.name, 0) + 1
    kernels = {(k.name if names[k.name] == 1 else f"{k.name}@{arch}@{k.unit}"): k for k in mine}
    objects = [o for o in codegen.code_objects if o.arch == arch]
    return codegen.model_copy(update={"archs": [arch], "code_objects": objects,
                                      "kernels": kernels})  # fmt: skip


def diff(baseline: Codegen, candidate: Codegen, arch: str | None = None) -> CodegenDiff:
    """Compare the baseline's codegen with the candidate's, kernel by kernel, on one
    target: `arch`, or the builds' primary one (:func:`primary_target`). Every target at
    once, with the per-target summary: `codegen.targets.diff_targets`."""
    arch = arch or primary_target(baseline.archs, candidate.archs)
    return _diff_views(target_view(baseline, arch), target_view(candidate, arch), arch)


def _diff_views(baseline: Codegen, candidate: Codegen, arch: str) -> CodegenDiff:
    """Two one-target codegens compared."""
    kinds = ("changed", "unchanged", "only_baseline", "only_candidate")
    buckets: dict[str, dict[str, list[str]]] = {}

    def bucket(category: str, kind: str, key: str) -> None:
        buckets.setdefault(category, {k: [] for k in kinds})[kind].append(key)

    changed = []
    for key in sorted(set(baseline.kernels) | set(candidate.kernels)):
        base, cand = baseline.kernels.get(key), candidate.kernels.get(key)
        if base is None and cand is not None:
            bucket(cand.category, "only_candidate", key)
        elif cand is None and base is not None:
            bucket(base.category, "only_baseline", key)
        elif base is not None and cand is not None:
            same = base.sha256 == cand.sha256
            bucket(cand.category, "unchanged" if same else "changed", key)
            if not same:
                changed.append(_kernel_delta(key, base, cand))
    order = [c for c in CATEGORIES if c in buckets] + sorted(set(buckets) - set(CATEGORIES))
    return CodegenDiff(
        baseline=baseline.build or "baseline",
        candidate=candidate.build or "candidate",
        arch=arch,
        gpu=is_gpu_arch(arch),
        categories={
            c: CategoryDiff(
                category=c,
                changed=buckets[c]["changed"],
                unchanged=buckets[c]["unchanged"],
                only_baseline=buckets[c]["only_baseline"],
                only_candidate=buckets[c]["only_candidate"],
            )
            for c in order
        },
        changed=sorted(changed, key=KernelDelta.sort_key),
        baseline_code_object_versions=baseline.code_object_versions,
        candidate_code_object_versions=candidate.code_object_versions,
        demangled={
            key: name
            for key, code in {**baseline.kernels, **candidate.kernels}.items()
            if (name := code.demangled)
        },
    )


def _versions(versions: list[int]) -> str:
    return "+".join(f"v{v}" for v in versions)


def code_object_note(d: CodegenDiff) -> str | None:
    """One sentence when the two builds hold different AMDGPU code-object versions, else
    None.

    The code-object version is the kernels' ABI (kernel descriptor, implicit arguments,
    metadata): when it changed, so did every kernel, for a reason that is not the
    compiler change being measured. Unknown on either side (an old codegen): None.
    """
    base, cand = d.baseline_code_object_versions, d.candidate_code_object_versions
    if not base or not cand or base == cand:
        return None
    if len(base) == 1:
        fix = (
            f"build the dev side with -mcode-object-version={base[0]} (the default: dev "
            f"builds follow the stable side; ORCH_CODE_OBJECT_VERSION={base[0]} forces it)"
        )
    else:
        fix = "build both sides with one -mcode-object-version (ORCH_CODE_OBJECT_VERSION)"
    return (
        f"code-object version differs: {_versions(base)} ({d.baseline}, baseline) vs "
        f"{_versions(cand)} ({d.candidate}): every kernel's ABI changed, so differences in "
        f"kernel code may come from it, not from the compiler change; {fix}"
    )


def code_unchanged(d: CodegenDiff, category: str) -> bool:
    """True when every kernel of `category` is byte-identical (normalised) in both builds.

    A timing change in such a category is not caused by codegen ("code unchanged").
    False when the category has no kernels at all: nothing was compared.
    """
    found = d.categories.get(category)
    return found is not None and found.identical


_CAST = re.compile(r"\([\w:]+\)(?=-?\d)")
_QUALIFIER = re.compile(r"\b\w+::")


def short_name(demangled: str, width: int = 60) -> str:
    """``void gmx::leapFrogKernel<(gmx::Values)2, …>(int, …)`` → ``leapFrogKernel<2, …>``.

    Return type, parameter list, enum casts and namespaces go; template arguments stay,
    since they are what tells the instances of one kernel apart.
    """
    text = demangled.removeprefix("void ")
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i]
                break
    text = _QUALIFIER.sub("", _CAST.sub("", text))
    return text if len(text) <= width else text[: width - 1] + "…"
