"""Unchanged kernels as the control: a changed kernel judged against the kernels whose code
did not change, measured in the same runs (a difference in differences).

A GPU clock that drifts, a neighbour that competes for the machine, a thermal state: they
slow every kernel of a run alike, so they move a changed kernel's time ratio as much as the
compiler change does. The kernels both builds compiled byte-identically cannot owe their
ratio to the compiler; their ratio in the same pair of runs is what the machine did. For
pair i the controlled log ratio is

    d_i = log(changed kernel's ratio_i) - log(control ratio_i),

and the paired t test (or, for groups not run in pairs, the rank test on the per-run times
relative to the control) judges d by the same marker rule as every other verdict:
significant *and* beyond the threshold.

The control ratio of a pair is the geometric mean of the unchanged kernels' pair ratios,
weighted by each kernel's share of the baseline's time (a fixed basket, the same weights in
every run: weights that followed each run would add their own noise). Time weights make the
control stand for where the GPU spends its time; a kernel of a few µs, whose median moves
with launch overhead more than with the machine, weighs little. Any weights cancel a
factor that hits every kernel alike. No unchanged kernel measured in every run: no control,
the raw verdict alone. GPU (a kernel trace): per kernel, the trace's names matched to the
codegen fingerprint (:func:`kernel_status`). CPU (md.log's cycle accounting): per category,
changed when a hot function of it changed; ``other`` is never a control, since most of its
time (neighbour search, waits, the rest) is code the fingerprint does not cover. A build
for several GPU targets is judged on the diff of the target the runs' GPU executes
(`codegen.targets`), keyed as a one-target build's: one key per kernel there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from statistics import median
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.codegen.diff import CodegenDiff
from orchestrator.parsers.categories import CATEGORIES, base_name, strip_kernel_suffix
from orchestrator.store.runstore import Run
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT
from orchestrator.verdict.model import Among, Direction, Verdict
from orchestrator.verdict.verdicts import adjust_for_many_categories, verdict

Status = Literal["changed", "unchanged", "unknown"]
#: What is judged against the control: GPU kernels (a trace) or CPU categories (md.log).
Unit = Literal["kernel", "category"]
#: CPU categories never used as a control (see the module's docstring).
NOT_A_CPU_CONTROL = frozenset({"other"})

_BARE = re.compile(r"^[A-Za-z_][\w:]*$")  # a truncated name: identifier, maybe qualified
_SPACE = re.compile(r"\s+")


class Controlled(BaseModel):
    """A changed kernel (CPU: category): its raw verdict and the one against the control;
    `report.words.control` says what the control was, or why there is none."""

    model_config = ConfigDict(frozen=True)

    name: str
    raw: Verdict
    #: Judged on the time relative to the control; None: no control (raw only).
    controlled: Verdict | None = None
    #: What `name` is: a GPU kernel or a CPU category.
    unit: Unit = "kernel"
    #: The unchanged names of the control, heaviest first; none: no control (raw only).
    controls: list[str] = Field(default_factory=list)
    #: The control's own ratio candidate / baseline (geometric mean over pairs, or ratio of
    #: medians unpaired): what the machine did between the two sides.
    control_ratio: float | None = None

    @property
    def verdict(self) -> Verdict:
        """The verdict to act on: the controlled one where there is a control."""
        return self.controlled or self.raw


def _mangled(key: str) -> str:
    """A fingerprint key is the mangled name, then ``@arch`` and ``@unit`` where needed
    (an Itanium mangled name never holds ``@``)."""
    return key.split("@", 1)[0]


class KernelIndex:
    """The fingerprint's kernels by every spelling a kernel trace may use.

    rocprofv3 names a kernel demangled (its default; libstdc++'s demangler, which spells
    GROMACS's kernels as llvm-cxxfilt does), mangled with ``.kd`` (``--mangled-kernels``
    or a demangling failure), or truncated to its identifier (``--truncate-kernels``).
    """

    def __init__(self, codegen: CodegenDiff) -> None:
        self.status: dict[str, Status] = {}
        for c in codegen.categories.values():
            for key in c.unchanged:
                self.status[key] = "unchanged"
            for key in [*c.changed, *c.only_baseline, *c.only_candidate]:
                self.status[key] = "changed"
        names = dict(codegen.demangled)
        names.update({k.key: k.demangled for k in codegen.changed if k.demangled})
        self.by_mangled: dict[str, list[str]] = {}
        self.by_demangled: dict[str, list[str]] = {}
        self.by_squashed: dict[str, list[str]] = {}
        self.by_base: dict[str, list[str]] = {}
        for key in sorted(self.status):
            self.by_mangled.setdefault(_mangled(key), []).append(key)
            self.by_base.setdefault(base_name(_mangled(key)), []).append(key)
            if key in names:
                self.by_demangled.setdefault(names[key], []).append(key)
                self.by_squashed.setdefault(_SPACE.sub("", names[key]), []).append(key)

    def keys(self, trace_name: str) -> list[str]:
        """The fingerprint keys a trace's kernel name stands for (several: one name for an
        instance per architecture or unit, or a truncated name for every instance)."""
        name = strip_kernel_suffix(trace_name)
        for index, spelling in ((self.by_mangled, name), (self.by_demangled, name),
                                (self.by_squashed, _SPACE.sub("", name))):  # fmt: skip
            if spelling in index:
                return index[spelling]
        if _BARE.match(name):
            return self.by_base.get(base_name(name), [])
        return []

    def of(self, trace_name: str) -> Status:
        """Changed when any kernel behind the name changed, unchanged when all are
        byte-identical, unknown when the fingerprint does not hold it (FFT libraries,
        runtime blits, kernels compiled at run time)."""
        found = [self.status[k] for k in self.keys(trace_name)]
        if not found:
            return "unknown"
        return "changed" if "changed" in found else "unchanged"


def kernel_status(names: Iterable[str], codegen: CodegenDiff) -> dict[str, Status]:
    """Each trace kernel name: changed, unchanged, or unknown to the fingerprint."""
    index = KernelIndex(codegen)
    return {name: index.of(name) for name in names}


def category_status(codegen: CodegenDiff) -> dict[str, Status]:
    """CPU categories: changed when a hot function of it changed (or is in one build only),
    unchanged when every one is byte-identical; categories without one are left out."""
    out: dict[str, Status] = {}
    for name, c in codegen.categories.items():
        if c.changed or c.only_baseline or c.only_candidate:
            out[name] = "changed"
        elif c.identical and name not in NOT_A_CPU_CONTROL:
            out[name] = "unchanged"
    return out


def control_index(
    times: Mapping[str, Sequence[float]], weights: Mapping[str, float]
) -> list[float]:
    """Per run, the weighted geometric mean of the control kernels' times."""
    total = sum(weights[name] for name in times)
    runs = len(next(iter(times.values())))
    return [
        math.exp(sum(weights[n] * math.log(times[n][r]) for n in times) / total)
        for r in range(runs)
    ]


def _positive(values: Sequence[float]) -> bool:
    return all(v > 0 and math.isfinite(v) for v in values)


def against_control(
    base: Mapping[str, Sequence[float]],
    cand: Mapping[str, Sequence[float]],
    changed: Collection[str],
    unchanged: Collection[str],
    weights: Mapping[str, float],
    *,
    paired: bool,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
    unit: Unit = "kernel",
) -> dict[str, Controlled]:
    """Raw and controlled verdicts of each changed name (time: lower is better).

    `base`/`cand`: per name, one time per run (run i of both sides a pair when `paired`);
    `weights`: each control's share of the time. Both kinds of verdicts are corrected for
    the number of changed names (Benjamini–Hochberg), so the two differ by the control alone.
    """

    def test(b: Sequence[float], c: Sequence[float]) -> Verdict:
        return verdict(b, c, paired=paired, higher_is_better=False,
                       threshold_pct=threshold_pct, alpha=alpha)  # fmt: skip

    measured = [n for n in changed if _positive([*base[n], *cand[n]])]
    controls = sorted(
        (n for n in unchanged if n not in changed and _positive([*base[n], *cand[n]])
         and weights.get(n, 0) > 0),
        key=lambda n: (-weights[n], n),
    )  # fmt: skip
    what = _changed(unit, len(measured))
    raw = adjust_for_many_categories({n: test(base[n], cand[n]) for n in measured}, alpha, what)
    if not controls:
        return {n: Controlled(name=n, raw=raw[n], unit=unit) for n in measured}
    ctrl_b = control_index({n: base[n] for n in controls}, weights)
    ctrl_c = control_index({n: cand[n] for n in controls}, weights)
    rel = {
        n: test([t / c for t, c in zip(base[n], ctrl_b, strict=True)],
                [t / c for t, c in zip(cand[n], ctrl_c, strict=True)])
        for n in measured
    }  # fmt: skip
    adjusted = adjust_for_many_categories(rel, alpha, what)
    ratio = _control_ratio(ctrl_b, ctrl_c, paired)
    return {
        n: Controlled(name=n, raw=raw[n], controlled=adjusted[n], unit=unit,
                      controls=controls, control_ratio=ratio)
        for n in measured
    }  # fmt: skip


def _changed(unit: Unit, n: int) -> Among:
    """The changed names that the correction for their number counts."""
    if unit == "kernel":
        return "changed kernel" if n == 1 else "changed kernels"
    return "changed category" if n == 1 else "changed categories"


def _control_ratio(base: Sequence[float], cand: Sequence[float], paired: bool) -> float:
    if paired:
        logs = [math.log(c / b) for b, c in zip(base, cand, strict=True)]
        return math.exp(sum(logs) / len(logs))
    return median(cand) / median(base)


def _kernel_times(runs: Sequence[Run]) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Per run, each kernel's median call duration; per kernel, the median total time."""
    medians = [
        {k.name: k.median_us for k in r.breakdown.kernels if k.median_us}
        for r in runs
        if r.breakdown
    ]
    totals: dict[str, list[float]] = {}
    for r in runs:
        for k in r.breakdown.kernels if r.breakdown else []:
            totals.setdefault(k.name, []).append(k.total_ms)
    return medians, {name: median(values) for name, values in totals.items()}


def controlled_for(
    base: Sequence[Run],
    cand: Sequence[Run],
    codegen: CodegenDiff | None,
    *,
    paired: bool,
    cpu_only: bool = False,
    suspect: bool = False,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
) -> dict[str, Controlled]:
    """The controlled verdicts of a comparison's runs (pairs in order when `paired`).

    GPU fingerprint: per changed kernel of the traces (none without a trace on every run,
    none when the runs were on the host CPU only: GPU code says nothing about host time).
    CPU fingerprint: per changed category of md.log's cycle accounting. A suspect
    comparison (energies disagree) never shows a controlled speed-up either.
    """
    runs = [*base, *cand]
    if codegen is None or len(base) < 2 or len(cand) < 2 or not all(r.breakdown for r in runs):
        return {}
    if codegen.gpu:
        if cpu_only:
            return {}
        medians, totals = _kernel_times(base)
        cand_medians, _ = _kernel_times(cand)
        common = set.intersection(*(set(m) for m in medians + cand_medians))
        status = kernel_status(sorted(common), codegen)
        b = {n: [m[n] for m in medians] for n in common}
        c = {n: [m[n] for m in cand_medians] for n in common}
    else:
        status = category_status(codegen)
        b = {n: [r.breakdown.categories[n].total_ms for r in base if r.breakdown]
             for n in CATEGORIES if n in status}  # fmt: skip
        c = {n: [r.breakdown.categories[n].total_ms for r in cand if r.breakdown]
             for n in CATEGORIES if n in status}  # fmt: skip
        totals = {n: median(values) for n, values in b.items()}
    changed = sorted((n for n in b if status.get(n) == "changed"), key=lambda n: -totals[n])
    unchanged = [n for n in b if status.get(n) == "unchanged"]
    found = against_control(b, c, changed, unchanged, totals, paired=paired,
                            threshold_pct=threshold_pct, alpha=alpha,
                            unit="kernel" if codegen.gpu else "category")  # fmt: skip
    if suspect:
        found = {n: _never_faster(v) for n, v in found.items()}
    return found


def _never_faster(entry: Controlled) -> Controlled:
    def safe(v: Verdict | None) -> Verdict | None:
        if v is None or v.direction is not Direction.FASTER:
            return v
        return v.replaced(suspect=True)

    return entry.model_copy(update={"raw": safe(entry.raw), "controlled": safe(entry.controlled)})
