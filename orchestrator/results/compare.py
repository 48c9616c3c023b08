"""Compare a candidate group of runs with a baseline group: per category, with statistics.

Refuses pairs that measure different things (system, steps, mdrun options), flags
per-kernel comparisons whose PME tuning ended on different grids, and never reports a
run whose energies disagree with its baseline as a speed-up.
"""

from __future__ import annotations

from pydantic import BaseModel

from orchestrator.core.errors import UsageError
from orchestrator.parsers.categories import CATEGORIES
from orchestrator.results.stats import Verdict, compare_samples
from orchestrator.runs.store import Run, RunResult

#: Relative difference of average potential energy beyond which a run is suspect.
ENERGY_TOLERANCE = 0.01
#: Options that change what is measured; everything else (e.g. -v) may differ.
IGNORED_OPTIONS = {"-v", "-pin", "-ntomp", "-nb", "-pme", "-pmefft", "-bonded", "-update"}


class Comparison(BaseModel):
    baseline: list[str]
    candidate: list[str]
    system: str
    label: str
    ns_per_day: Verdict
    categories: dict[str, Verdict]
    comparable: bool = True
    comparable_note: str | None = None
    suspect: bool = False
    suspect_note: str | None = None

    @property
    def headline(self) -> str:
        v = self.ns_per_day
        sign = "+" if v.delta_abs >= 0 else ""
        text = (
            f"{self.label} on {self.system}: {v.candidate_median:.1f} ns/day "
            f"(baseline {v.baseline_median:.1f}, Δ {sign}{v.delta_abs:.3f}, "
            f"{sign}{v.delta_pct:.2f}%)"
        )
        return ("⚠ SUSPECT " if self.suspect else "") + text

    @property
    def stats_line(self) -> str:
        v = self.ns_per_day
        return f"statistics: {v.n_candidate} vs {v.n_baseline} runs, medians; ns/day {v.note}"


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


def _pme_key(run: Run) -> tuple[object, object]:
    return (tuple(run.result.pme_grid or ()), run.result.coulomb_cutoff)


def _potential(run: Run) -> float | None:
    return (run.result.energies or {}).get("Potential")


def compare_runs(
    base: list[Run], cand: list[Run], *, threshold_pct: float = 2.0, alpha: float = 0.05
) -> Comparison:
    check_pair(base, cand)
    ns = compare_samples(
        [r.result.ns_per_day or 0.0 for r in base],
        [r.result.ns_per_day or 0.0 for r in cand],
        higher_is_better=True, threshold_pct=threshold_pct, alpha=alpha,
    )  # fmt: skip
    categories: dict[str, Verdict] = {}
    if all(r.breakdown for r in base + cand):
        for name in CATEGORIES:
            b = [r.breakdown.categories[name].total_ms for r in base if r.breakdown]
            c = [r.breakdown.categories[name].total_ms for r in cand if r.breakdown]
            if min(b + c) > 0:
                categories[name] = compare_samples(
                    b, c, higher_is_better=False, threshold_pct=threshold_pct, alpha=alpha
                )
    categories = adjust_for_many_categories(categories, alpha)
    cmp = Comparison(
        baseline=[r.path.name for r in base],
        candidate=[r.path.name for r in cand],
        system=cand[0].result.system,
        label=_label(cand[0].result),
        ns_per_day=ns,
        categories=categories,
    )
    grids = {_pme_key(r) for r in base + cand}
    if len(grids) > 1:
        cmp.comparable = False
        cmp.comparable_note = (
            "not comparable per kernel: PME tuning ended on different grids/cut-offs "
            f"({'; '.join(sorted(str(g) for g in grids))}); ns/day is still compared. "
            "Pin the grid with `-- -notunepme` for per-kernel comparisons."
        )
    _check_energy(cmp, base, cand)
    return cmp


def adjust_for_many_categories(verdicts: dict[str, Verdict], alpha: float) -> dict[str, Verdict]:
    """Benjamini–Hochberg across categories: seven tests at 5% would cry wolf too often.

    A category keeps its verdict only if its p-value survives the step-up procedure
    (Benjamini & Hochberg 1995), which bounds the expected share of false findings at
    `alpha` and, when nothing changed at all, the chance of any finding.
    """
    tested = sorted((v.p_value, k) for k, v in verdicts.items() if v.p_value is not None)
    m, passed = len(tested), 0
    for rank, (p, _) in enumerate(tested, start=1):
        if p <= alpha * rank / m:
            passed = rank
    keep = {k for _, k in tested[:passed]}
    out = {}
    for name, v in verdicts.items():
        if v.significant and name not in keep:
            v = v.model_copy(update={
                "significant": False, "improved": None, "marker": "•",
                "note": f"{v.note}; not significant after correcting for {m} categories "
                        f"(Benjamini–Hochberg)",
            })  # fmt: skip
        out[name] = v
    return out


def _check_energy(cmp: Comparison, base: list[Run], cand: list[Run]) -> None:
    b = [e for e in map(_potential, base) if e is not None]
    c = [e for e in map(_potential, cand) if e is not None]
    if not b or not c:
        return
    ref, got = sorted(b)[len(b) // 2], sorted(c)[len(c) // 2]
    rel = abs(got - ref) / abs(ref) if ref else 0.0
    if rel > ENERGY_TOLERANCE:
        cmp.suspect = True
        cmp.suspect_note = (
            f"suspect: average potential energy {got:.1f} vs baseline {ref:.1f} kJ/mol "
            f"({rel:.1%} apart, tolerance {ENERGY_TOLERANCE:.0%}): the build may compute "
            "something else; its speed is not reported as a speed-up"
        )
        cmp.ns_per_day = _never_faster(cmp.ns_per_day)
        cmp.categories = {k: _never_faster(v) for k, v in cmp.categories.items()}


def _never_faster(verdict: Verdict) -> Verdict:
    return verdict.model_copy(update={"marker": "⚠"}) if verdict.marker == "🚀" else verdict


def _label(result: RunResult) -> str:
    if result.llvm_commit:
        return f"LLVM {result.llvm_commit}"
    return result.build
