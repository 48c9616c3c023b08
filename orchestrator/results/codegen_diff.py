"""What a compiler change did to the code of a build: two codegen fingerprints compared.

Per category: kernels changed (different normalised code), unchanged, only in A, only
in B. Per changed kernel: the deltas a compiler developer looks at, most important
first — occupancy drops, then new or more spills and scratch, then the largest VGPR and
instruction changes. A category whose kernels are all byte-identical in both builds
cannot owe a timing change to codegen: :func:`code_unchanged` says so, and
:func:`summary_lines` prints it beside a timing verdict. Builds of different AMDGPU
code-object versions differ in every kernel's ABI, whatever the compiler change did:
:func:`code_object_note` says so, first.

A build may hold code for several GPU targets (``--offload-arch`` repeated): each target
is compared on its own (:func:`diff` with ``arch=``, every one at once in
`results.codegen_targets`), since a timing is the code of one target, the host's.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from tabulate import tabulate

from orchestrator.parsers.categories import CATEGORIES
from orchestrator.parsers.codegen import Codegen, KernelCode

Format = Literal["simple", "markdown"]
Pair = tuple[int | None, int | None]


class KernelDelta(BaseModel):
    """One kernel whose code differs between A and B, with its resource counts."""

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
    classes: dict[str, int]  # B - A per instruction class, non-zero only

    @property
    def occupancy_drop(self) -> int:
        a, b = self.occupancy
        return (a - b) if a is not None and b is not None and b < a else 0

    @property
    def new_spills(self) -> bool:
        a, b = self.spills
        return bool(b) and not a

    @property
    def spill_increase(self) -> int:
        a, b = self.spills
        return max((b or 0) - (a or 0), 0)

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
        a_instr = max(self.instructions[0] or 0, 1)
        relative = abs(_delta(self.instructions)) / a_instr
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
    only_a: list[str]
    only_b: list[str]

    @property
    def total(self) -> int:
        return len(self.changed) + len(self.unchanged) + len(self.only_a) + len(self.only_b)

    @property
    def identical(self) -> bool:
        """Every kernel of the category is in both builds with the same code."""
        return bool(self.unchanged) and not (self.changed or self.only_a or self.only_b)


class TargetSummary(BaseModel):
    """One offload target of a pair of builds, in a line: how many of its kernels changed,
    or that only one build holds it (`results.codegen_targets`)."""

    model_config = ConfigDict(frozen=True)

    arch: str
    in_a: bool
    in_b: bool
    changed: int = 0
    total: int = 0  # kernels (CPU: functions) of the target in either build
    occupancy_drops: int = 0
    more_spills: int = 0

    def text(self, *, host: bool = False) -> str:
        """``gfx1201: 4 changed of 566`` or ``gfx942: only in B (566 kernels)``."""
        name = f"{self.arch} (this host)" if host else self.arch
        if not (self.in_a and self.in_b):
            return f"{name}: only in {'A' if self.in_a else 'B'} ({self.total} kernels)"
        extra = [f"{self.occupancy_drops} with lower occupancy"] * bool(self.occupancy_drops)
        extra += [f"{self.more_spills} with more spills"] * bool(self.more_spills)
        return f"{name}: {self.changed} changed of {self.total}" + "".join(f", {e}" for e in extra)


class CodegenDiff(BaseModel):
    """Two builds' code compared on one offload target (CPU: the host functions)."""

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
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
    #: The AMDGPU code-object versions of A's and B's code objects (empty: a CPU build, or
    #: a fingerprint taken before versions were recorded).
    a_code_object_versions: list[int] = Field(default_factory=list)
    b_code_object_versions: list[int] = Field(default_factory=list)
    #: Key -> demangled name of every kernel of either build: kernel traces name kernels
    #: demangled, and `verdict.controlled` matches them to keys by it.
    demangled: dict[str, str] = Field(default_factory=dict)

    def code_unchanged(self, category: str) -> bool:
        return code_unchanged(self, category)

    def code_object_note(self) -> str | None:
        return code_object_note(self)


def _delta(pair: Pair) -> int:
    a, b = pair
    return (b or 0) - (a or 0) if a is not None or b is not None else 0


def _pair(a: KernelCode, b: KernelCode, field: str) -> Pair:
    return getattr(a, field), getattr(b, field)


def _kernel_delta(key: str, a: KernelCode, b: KernelCode) -> KernelDelta:
    classes = {
        name: b.classes.get(name, 0) - a.classes.get(name, 0)
        for name in sorted(set(a.classes) | set(b.classes))
        if b.classes.get(name, 0) != a.classes.get(name, 0)
    }
    return KernelDelta(
        key=key,
        name=a.name,
        demangled=b.demangled or a.demangled,
        category=b.category,
        unit=b.unit,
        arch=b.arch,
        instructions=(a.instructions, b.instructions),
        vgprs=_pair(a, b, "vgprs"),
        sgprs=_pair(a, b, "sgprs"),
        agprs=_pair(a, b, "agprs"),
        spills=(a.spills if a.vgpr_spills is not None else None, b.spills),
        scratch_bytes=_pair(a, b, "scratch_bytes"),
        lds_bytes=_pair(a, b, "lds_bytes"),
        occupancy=_pair(a, b, "occupancy"),
        classes=classes,
    )


def primary_target(a: Sequence[str], b: Sequence[str], preferred: Sequence[str] = ()) -> str:
    """The target of A's targets `a` and B's `b` that a verdict is judged on when the
    host's is not known: the first of `preferred` (the candidate image's `gpu_arch`
    list) both builds hold, else the first
    of A's targets that B holds too, else A's first (no target in common)."""
    for arch in [*preferred, *a]:
        if arch in a and arch in b:
            return arch
    return ([*a, *b] or ["unknown"])[0]


def target_view(codegen: Codegen, arch: str) -> Codegen:
    """The fingerprint of `codegen`'s `arch` code alone, keyed as a build for that one
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


def diff(a: Codegen, b: Codegen, arch: str | None = None) -> CodegenDiff:
    """Compare fingerprint A (baseline) with B (candidate), kernel by kernel, on one
    target: `arch`, or the builds' primary one (:func:`primary_target`). Every target at
    once, with the per-target summary: `results.codegen_targets.diff_targets`."""
    arch = arch or primary_target(a.archs, b.archs)
    return _diff_views(target_view(a, arch), target_view(b, arch), arch)


def _diff_views(a: Codegen, b: Codegen, arch: str) -> CodegenDiff:
    """Two one-target fingerprints compared."""
    buckets: dict[str, dict[str, list[str]]] = {}

    def bucket(category: str, kind: str, key: str) -> None:
        lists = buckets.setdefault(category, {k: [] for k in ("changed", "unchanged", "a", "b")})
        lists[kind].append(key)

    changed = []
    for key in sorted(set(a.kernels) | set(b.kernels)):
        ka, kb = a.kernels.get(key), b.kernels.get(key)
        if ka is None and kb is not None:
            bucket(kb.category, "b", key)
        elif kb is None and ka is not None:
            bucket(ka.category, "a", key)
        elif ka is not None and kb is not None:
            same = ka.sha256 == kb.sha256
            bucket(kb.category, "unchanged" if same else "changed", key)
            if not same:
                changed.append(_kernel_delta(key, ka, kb))
    order = [c for c in CATEGORIES if c in buckets] + sorted(set(buckets) - set(CATEGORIES))
    categories = {
        c: CategoryDiff(
            category=c,
            changed=buckets[c]["changed"],
            unchanged=buckets[c]["unchanged"],
            only_a=buckets[c]["a"],
            only_b=buckets[c]["b"],
        )
        for c in order
    }
    return CodegenDiff(
        a=a.build or "A",
        b=b.build or "B",
        arch=arch,
        gpu=arch.startswith("gfx"),
        categories=categories,
        changed=sorted(changed, key=KernelDelta.sort_key),
        a_code_object_versions=a.code_object_versions,
        b_code_object_versions=b.code_object_versions,
        demangled={
            key: name
            for key, code in {**a.kernels, **b.kernels}.items()
            if (name := code.demangled)
        },
    )


def _versions(versions: list[int]) -> str:
    return "+".join(f"v{v}" for v in versions)


def code_object_note(d: CodegenDiff) -> str | None:
    """One sentence when A and B hold different AMDGPU code-object versions, else None.

    The code-object version is the kernels' ABI (kernel descriptor, implicit arguments,
    metadata): when it changed, so did every kernel, for a reason that is not the
    compiler change being measured. Unknown on either side (an old fingerprint): None.
    """
    a, b = d.a_code_object_versions, d.b_code_object_versions
    if not a or not b or a == b:
        return None
    if len(a) == 1:
        fix = (
            f"build the dev side with -mcode-object-version={a[0]} (the default: dev builds "
            f"follow the stable side; ORCH_CODE_OBJECT_VERSION={a[0]} forces it)"
        )
    else:
        fix = "build both sides with one -mcode-object-version (ORCH_CODE_OBJECT_VERSION)"
    return (
        f"code-object version differs: {_versions(a)} ({d.a}, baseline) vs {_versions(b)} "
        f"({d.b}): every kernel's ABI changed, so differences in kernel code may come from "
        f"it, not from the compiler change; {fix}"
    )


def code_unchanged(d: CodegenDiff, category: str) -> bool:
    """True when every kernel of `category` is byte-identical (normalised) in A and B.

    A timing change in such a category is not caused by codegen ("code unchanged").
    False when the category has no kernels at all: nothing was compared.
    """
    found = d.categories.get(category)
    return found is not None and found.identical


def summary_line(c: CategoryDiff, deltas: list[KernelDelta]) -> str:
    """One line for one category, to print beside its timing verdict."""
    if c.identical:
        return f"{c.category}: code unchanged ({len(c.unchanged)} kernels identical)"
    parts = [f"{len(c.changed)} of {c.total} kernels changed"]
    mine = [k for k in deltas if k.category == c.category]
    drops = sum(1 for k in mine if k.occupancy_drop)
    spills = sum(1 for k in mine if k.spill_increase)
    if drops:
        parts.append(f"{drops} with lower occupancy")
    if spills:
        parts.append(f"{spills} with more spills")
    if c.only_a:
        parts.append(f"{len(c.only_a)} only in A")
    if c.only_b:
        parts.append(f"{len(c.only_b)} only in B")
    return f"{c.category}: " + ", ".join(parts)


def summary_lines(d: CodegenDiff) -> list[str]:
    return [summary_line(c, d.changed) for c in d.categories.values()]


def _arrow(pair: Pair) -> str:
    a, b = pair
    if a == b:
        return "" if a is None else str(a)
    return f"{'–' if a is None else a}→{'–' if b is None else b}"


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


HEADERS = ["category", "kernel", "instr", "Δinstr", "VGPR", "SGPR", "spills", "scratch",
           "LDS", "occupancy", "note"]  # fmt: skip


def render(d: CodegenDiff, fmt: Format = "simple", limit: int = 40, note: bool = True) -> str:
    """A code-object version difference first (unless `note` is False: the caller printed
    it), then the category summary, then the changed kernels, most important first."""
    first = d.code_object_note() if note else None
    lines = [*([first] if first else []), f"codegen: {d.a} → {d.b}", *summary_lines(d), ""]
    if d.changed:
        rows = []
        for k in d.changed[:limit]:
            a_instr, b_instr = k.instructions
            pct = f"{100 * (b_instr or 0) / a_instr - 100:+.0f}%" if a_instr else "n/a"
            rows.append([
                k.category, short_name(k.demangled or k.name), _arrow(k.instructions), pct,
                _arrow(k.vgprs), _arrow(k.sgprs), _arrow(k.spills), _arrow(k.scratch_bytes),
                _arrow(k.lds_bytes), _arrow(k.occupancy), k.note(),
            ])  # fmt: skip
        table = tabulate(
            rows, headers=HEADERS, tablefmt="github" if fmt == "markdown" else "simple"
        )
        lines.append(table)
        if len(d.changed) > limit:
            lines.append(f"… and {len(d.changed) - limit} more changed kernels")
    else:
        lines.append("no kernel's code changed")
    return "\n".join(lines).rstrip() + "\n"


def asm_diff(a_text: str, b_text: str, a_label: str = "A", b_label: str = "B") -> str:
    """Unified diff of two normalised kernel texts (the probe's ``asm`` mode output)."""
    return "".join(
        difflib.unified_diff(
            a_text.splitlines(keepends=True),
            b_text.splitlines(keepends=True),
            fromfile=a_label,
            tofile=b_label,
        )
    )
