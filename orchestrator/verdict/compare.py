"""Compare a candidate group of runs with a baseline group: per category, with statistics.

Refuses pairs that measure different things (system, steps, mdrun options), flags
per-kernel comparisons whose PME tuning ended on different grids, and never reports a
run whose energies disagree with its baseline as a speed-up. Groups that one `bench` ran
in interleaved pairs are compared pair by pair (`verdict.paired`); any other groups as
independent samples (`verdict.stats`). With a kernel trace, the top kernels get their own
verdicts from each run's median call duration (the run, not the call, is the unit of
replication). Runs that shared the machine (`runs.hostinfo.HostNoise`) are named and
left out of the verdict; with too few clean ones there is none (`verdict.busy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.codegen.diff import CodegenDiff
from orchestrator.core.errors import UsageError
from orchestrator.parsers.categories import CATEGORIES
from orchestrator.parsers.microbench import OptimumShift
from orchestrator.store.records import RunResult
from orchestrator.store.runstore import Run
from orchestrator.verdict.busy import no_verdict, screen
from orchestrator.verdict.controlled import Controlled, controlled_for
from orchestrator.verdict.counter_compare import CounterComparison
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT
from orchestrator.verdict.instructions import InstructionComparison
from orchestrator.verdict.model import Direction, TooBusy, Verdict
from orchestrator.verdict.verdicts import adjust_for_many_categories, verdict

#: Relative difference of average potential energy beyond which a run is suspect.
ENERGY_TOLERANCE = 0.01
#: Options that change what is measured; everything else (e.g. -v) may differ.
IGNORED_OPTIONS = {"-v", "-pin", "-ntomp", "-nb", "-pme", "-pmefft", "-bonded", "-update"}
#: Kernels with their own verdicts: the longest-running ones of the baseline.
TOP_KERNELS = 8


class SharedRun(BaseModel):
    """A run that shared the machine, and the warnings its record holds about what with."""

    model_config = ConfigDict(frozen=True)

    run: str
    warnings: list[str]


class PmeSetting(BaseModel):
    """Where a run's PME tuning ended: its grid and Coulomb cut-off (nm)."""

    model_config = ConfigDict(frozen=True)

    grid: list[int]
    cutoff: float | None = None


class EnergyMismatch(BaseModel):
    """Why a comparison is suspect: the median average potential energy (kJ/mol) of each
    side, how far apart (relative) and the tolerance they broke."""

    model_config = ConfigDict(frozen=True)

    baseline: float
    candidate: float
    apart: float
    tolerance: float


class FactChange(BaseModel):
    """A fact a kernel run found (not a number), on each side: the same or changed."""

    model_config = ConfigDict(frozen=True)

    key: str
    baseline: str | None
    candidate: str | None


class TuneOptimum(BaseModel):
    """Where `tune`'s optimum went between the builds, from the median run of each side."""

    model_config = ConfigDict(frozen=True)

    shift: OptimumShift
    baseline_run: str
    candidate_run: str


class Ceiling(BaseModel):
    """The memory ceiling (GB/s past the caches) of the newest `bandwidth` sweep of a host."""

    model_config = ConfigDict(frozen=True)

    read_gbs: float
    copy_gbs: float
    run_id: str
    timestamp: str


class Comparison(BaseModel):
    """Two groups of runs judged: the headline, each category, kernel and metric, and what
    kept them from a verdict, as numbers, names and flags; `report.words` says it in words,
    so a caveat is worded once for the console, the HTML page, the webhook and `--json`."""

    baseline: list[str]
    candidate: list[str]
    system: str
    label: str
    #: What the candidate is measured against, as the headline names it (`parent
    #: 1a2b3c4d`, `HEAD 1a2b3c4d`, `stable`); None: two groups compared as given.
    base: str | None = None
    #: The headline verdict: ns/day for mdrun; a kernel recipe's headline metric, named
    #: by `headline_name` (its unit follows the name in the report).
    headline: Verdict
    categories: dict[str, Verdict]
    #: Per-kernel verdicts from the runs' median call durations (µs), when both sides traced.
    kernels: dict[str, Verdict] = Field(default_factory=dict)
    paired: bool = False
    #: Runs left out because their pair partner is missing (failed or removed).
    unpaired: list[str] = Field(default_factory=list)
    #: Each run that shared the machine: which run, and what it shared it with.
    noise: list[SharedRun] = Field(default_factory=list)
    #: Pairs (unpaired: runs) left out of the verdict because a run shared the machine.
    left_out: list[str] = Field(default_factory=list)
    #: Why there is no verdict at all: too few clean pairs (`verdict.busy`); None: judged.
    too_busy: TooBusy | None = None
    runs: int = 0
    #: False: PME tuning ended on different grids or cut-offs (`pme`), so kernels and
    #: categories are not comparable (ns/day still is).
    comparable: bool = True
    pme: list[PmeSetting] = Field(default_factory=list)
    #: The energies disagree (`energy`): no speed-up of these runs is to be believed.
    suspect: bool = False
    energy: EnergyMismatch | None = None
    #: Which kernels the two builds compiled differently (both fingerprints known).
    codegen: CodegenDiff | None = None
    #: GPU builds run on the host CPU (`--cpu-only`): the timings are of host code, so a
    #: GPU fingerprint says nothing about them.
    cpu_only: bool = False
    #: The headline's name and unit: "ns/day", or a kernel recipe's (`ro_peak`, "GB/s").
    headline_name: str = "ns/day"
    headline_unit: str = "ns/day"
    #: A kernel recipe's other metrics, each judged in its declared direction (or shown
    #: only, for those declared neither), corrected for their number like categories.
    metrics: dict[str, Verdict] = Field(default_factory=dict)
    #: What a kernel run found that is not a number, side by side, and where `tune`'s
    #: optimum went between the two builds.
    facts: list[FactChange] = Field(default_factory=list)
    optimum: TuneOptimum | None = None
    #: The memory ceiling the `bandwidth` recipe measured on the host of these runs.
    ceiling: Ceiling | None = None
    #: rocprof-compute's counters of the top kernels side by side, when both sides have them.
    counters: CounterComparison | None = None
    #: Executed instructions per kernel, when every run of both sides counted them.
    instructions: InstructionComparison | None = None
    #: Each changed kernel (CPU: category) judged raw and against the unchanged kernels
    #: measured in the same runs (`verdict.controlled`); keyed like `kernels` (`categories`).
    controlled: dict[str, Controlled] = Field(default_factory=dict)


def _options(result: RunResult) -> list[str]:
    args, out, skip = result.command, [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in IGNORED_OPTIONS:
            skip = i + 1 < len(args) and not args[i + 1].startswith("-")
            continue
        out.append(arg)
    return out


def check_pair(base: list[Run], cand: list[Run]) -> None:
    """Refuse runs that do not measure the same thing, naming the difference."""
    everyone = base + cand
    for attr in ("system", "steps"):
        values = {str(getattr(r.result, attr)) for r in everyone}
        if len(values) > 1:
            raise UsageError(
                f"These runs differ in {attr} ({', '.join(sorted(values))}): they measure "
                f"different things and cannot be compared. Compare runs of one {attr}."
            )
    options = {" ".join(_options(r.result)) for r in everyone}
    if len(options) > 1:
        raise UsageError(
            "These runs used different mdrun options (" + " | ".join(sorted(options)) + "): "
            "compare runs made with the same options."
        )


def shared_runs(runs: list[Run]) -> list[SharedRun]:
    """The runs that shared the machine, each with what its record says it shared it with."""
    return [
        SharedRun(run=r.path.name, warnings=r.result.noise.warnings)
        for r in runs
        if r.result.noise is not None and r.result.noise.warnings
    ]


def _pme_key(run: Run) -> tuple[tuple[int, ...], float | None]:
    return (tuple(run.result.pme_grid or ()), run.result.coulomb_cutoff)


def _potential(run: Run) -> float | None:
    return (run.result.energies or {}).get("Potential")


def bench_pairs(base: list[Run], cand: list[Run]) -> tuple[list[tuple[Run, Run]], list[str]]:
    """The (baseline, candidate) pairs of one `bench`, and the runs that have no partner.

    `bench` records the baseline run of each pair as the baseline of its tag
    (`RunResult.role`, `bench`): its partner is the run of the same repeat in the group of
    that tag. Groups not made that way give no pairs.
    """
    by_place = {(r.result.group_tag, r.result.repeat): r for r in cand}
    pairs: list[tuple[Run, Run]] = []
    for b in base:
        partner = by_place.pop((b.result.bench or "", b.result.repeat), None)
        if b.result.role == "baseline" and partner is not None:
            pairs.append((b, partner))
    paired = {r.path.name for pair in pairs for r in pair}
    return pairs, [r.path.name for r in base + cand if r.path.name not in paired]


def compare_runs(
    base: list[Run],
    cand: list[Run],
    *,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
    paired: bool | None = None,
    codegen: CodegenDiff | None = None,
) -> Comparison:
    """Compare two groups; `paired` None pairs them when one `bench` made them (2+ pairs).
    With the builds' `codegen` diff, changed kernels are also judged against unchanged ones."""
    check_pair(base, cand)
    pairs, alone = bench_pairs(base, cand)
    if paired is None:
        paired = len(pairs) >= 2
    if paired:
        if not pairs:
            raise UsageError(
                "These groups were not run in interleaved pairs by one `bench` (the baseline "
                "of each pair is tagged kernel-baseline-<candidate tag>): compare them unpaired."
            )
        base, cand = [b for b, _ in pairs], [c for _, c in pairs]
    everyone = base + cand
    clean = screen(base, cand, paired=paired)  # runs that shared the machine: left out
    base, cand = clean.base, clean.cand
    ns = verdict(
        [r.result.ns_per_day or 0.0 for r in base],
        [r.result.ns_per_day or 0.0 for r in cand],
        paired=paired, higher_is_better=True, threshold_pct=threshold_pct, alpha=alpha,
    )  # fmt: skip
    categories: dict[str, Verdict] = {}
    if all(r.breakdown for r in base + cand):
        categories = category_verdicts(
            _category_times(base), _category_times(cand),
            paired=paired, threshold_pct=threshold_pct, alpha=alpha,
        )  # fmt: skip
    cmp = Comparison(
        baseline=[r.path.name for r in base],
        candidate=[r.path.name for r in cand],
        system=cand[0].result.system,
        label=_label(cand[0].result),
        headline=ns,
        categories=categories,
        kernels=kernel_verdicts(
            base, cand, paired=paired, threshold_pct=threshold_pct, alpha=alpha
        ),
        paired=paired,
        unpaired=alone if paired else [],
        noise=shared_runs(everyone),
        left_out=clean.left_out,
        runs=len(everyone),
        cpu_only=any(r.result.cpu_only for r in base + cand),
    )
    grids = {_pme_key(r) for r in base + cand}
    if len(grids) > 1:
        cmp.comparable = False
        cmp.pme = [PmeSetting(grid=list(g), cutoff=c) for g, c in sorted(grids, key=str)]
    _check_energy(cmp, base, cand)
    cmp.codegen = codegen
    cmp.controlled = controlled_for(
        base, cand, codegen, paired=paired, cpu_only=cmp.cpu_only, suspect=cmp.suspect,
        threshold_pct=threshold_pct, alpha=alpha,
    )  # fmt: skip
    if clean.too_busy:
        silence(cmp, clean.too_busy)
    return cmp


def silence(cmp: Comparison, why: TooBusy) -> None:
    """No marker anywhere in a comparison the host was too busy to judge (`verdict.busy`)."""
    cmp.headline = no_verdict(cmp.headline, why)
    for field in ("categories", "kernels", "metrics"):
        setattr(cmp, field, {k: no_verdict(v, why) for k, v in getattr(cmp, field).items()})
    cmp.controlled = {
        k: c.model_copy(update={
            "raw": no_verdict(c.raw, why),
            "controlled": None if c.controlled is None else no_verdict(c.controlled, why),
        })
        for k, c in cmp.controlled.items()
    }  # fmt: skip
    cmp.too_busy = why


def category_verdicts(
    base: Mapping[str, Sequence[float]],
    cand: Mapping[str, Sequence[float]],
    *,
    paired: bool,
    threshold_pct: float,
    alpha: float,
) -> dict[str, Verdict]:
    """One verdict per name (time: lower is better), corrected for their number.

    Names with a zero time in any run (a category this build does not use) are left out.
    """
    verdicts = {}
    for name in base:
        if min([*base[name], *cand[name]]) > 0:
            verdicts[name] = verdict(
                base[name], cand[name], paired=paired, higher_is_better=False,
                threshold_pct=threshold_pct, alpha=alpha,
            )  # fmt: skip
    return adjust_for_many_categories(verdicts, alpha)


def _category_times(runs: list[Run]) -> dict[str, list[float]]:
    return {
        n: [r.breakdown.categories[n].total_ms for r in runs if r.breakdown] for n in CATEGORIES
    }


def kernel_verdicts(
    base: list[Run], cand: list[Run], *, paired: bool, threshold_pct: float, alpha: float
) -> dict[str, Verdict]:
    """The top kernels by baseline time, each from its median call duration in every run.

    A kernel is compared only when every run on both sides has its median (a kernel
    trace, not kernel_stats or md.log); thousands of calls make each run's median precise,
    and the runs, not the calls, give the run-to-run noise the test needs.
    """
    runs = base + cand
    if len(base) < 2 or len(cand) < 2 or not all(r.breakdown for r in runs):
        return {}
    medians: list[dict[str, float]] = [
        {k.name: k.median_us for k in r.breakdown.kernels if k.median_us}
        for r in runs
        if r.breakdown
    ]
    common = set.intersection(*(set(m) for m in medians))
    totals = {
        name: sorted(k.total_ms for r in base if r.breakdown for k in r.breakdown.kernels
                     if k.name == name)[len(base) // 2]
        for name in common
    }  # fmt: skip
    top = sorted(common, key=lambda name: (-totals[name], name))[:TOP_KERNELS]
    n = len(base)
    return category_verdicts(
        {name: [m[name] for m in medians[:n]] for name in top},
        {name: [m[name] for m in medians[n:]] for name in top},
        paired=paired, threshold_pct=threshold_pct, alpha=alpha,
    )  # fmt: skip


def _check_energy(cmp: Comparison, base: list[Run], cand: list[Run]) -> None:
    b = [e for e in map(_potential, base) if e is not None]
    c = [e for e in map(_potential, cand) if e is not None]
    if not b or not c:
        return
    ref, got = sorted(b)[len(b) // 2], sorted(c)[len(c) // 2]
    rel = abs(got - ref) / abs(ref) if ref else 0.0
    if rel > ENERGY_TOLERANCE:
        cmp.suspect = True
        cmp.energy = EnergyMismatch(
            baseline=ref, candidate=got, apart=rel, tolerance=ENERGY_TOLERANCE
        )
        cmp.headline = _never_faster(cmp.headline)
        cmp.categories = {k: _never_faster(v) for k, v in cmp.categories.items()}
        cmp.kernels = {k: _never_faster(v) for k, v in cmp.kernels.items()}


def _never_faster(verdict: Verdict) -> Verdict:
    """A speed-up of runs whose energies disagree is suspect (the report shows ⚠)."""
    return verdict.replaced(suspect=True) if verdict.direction is Direction.FASTER else verdict


def _label(result: RunResult) -> str:
    if result.llvm_commit:
        return f"LLVM {result.llvm_commit}"
    return result.build
