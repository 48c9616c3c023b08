"""Compare microbenchmark runs: each metric in the direction its recipe declares.

The statistics are compare's (paired t on log ratios for `bench`'s interleaved pairs,
Mann–Whitney otherwise, Benjamini–Hochberg across metrics); what differs is where the
numbers come from (`RunResult.metrics`) and that no metric's direction is guessed:
"higher", "lower", or "none" (shown side by side, never judged). A `tune` comparison
also says whether the optimum moved between the builds, from their cache files.
"""

from __future__ import annotations

from orchestrator.core.errors import UsageError
from orchestrator.parsers.microbench import optimum_shift, parse_bytes
from orchestrator.store.layout import TUNE_CACHE_FILE
from orchestrator.store.runstore import Run
from orchestrator.verdict.busy import screen
from orchestrator.verdict.compare import (
    Comparison,
    FactChange,
    TuneOptimum,
    bench_pairs,
    shared_runs,
    silence,
)
from orchestrator.verdict.model import Direction, Verdict
from orchestrator.verdict.verdicts import adjust_for_many_categories, verdict


def compare_microbench_runs(
    base: list[Run], cand: list[Run], *, threshold_pct: float, alpha: float,
    paired: bool | None,
) -> Comparison:  # fmt: skip
    """One verdict per metric; the recipe's headline metric leads."""
    everyone = base + cand
    kinds = {r.result.kind for r in everyone}
    systems = {r.result.system for r in everyone}
    if kinds != {"kernel"} or len(systems) > 1:
        raise UsageError(
            f"These runs measure different things ({', '.join(sorted(systems))}): compare "
            "runs of one kernel benchmark, at one size and variant."
        )
    pairs, alone = bench_pairs(base, cand)
    if paired is None:
        paired = len(pairs) >= 2
    if paired:
        if not pairs:
            raise UsageError("These groups were not run in interleaved pairs by one `bench`: "
                             "compare them unpaired.")  # fmt: skip
        base, cand = [b for b, _ in pairs], [c for _, c in pairs]
    judged_runs = base + cand
    clean = screen(base, cand, paired=paired)  # runs that shared the machine: left out
    base, cand = clean.base, clean.cand
    headline = cand[0].result.headline or ""
    names = set.intersection(*(set(r.result.metrics or {}) for r in base + cand))
    if headline not in names:
        raise UsageError(f"Not every run reports {headline!r}: they come from different "
                         "versions of the recipe. Compare runs of one version.")  # fmt: skip
    spec = cand[0].result.metrics or {}

    def judged(name: str) -> Verdict:
        b = [(r.result.metrics or {})[name].value for r in base]
        c = [(r.result.metrics or {})[name].value for r in cand]
        better = spec[name].better
        v = verdict(b, c, paired=paired, higher_is_better=better != "lower",
                    threshold_pct=threshold_pct, alpha=alpha)  # fmt: skip
        if better == "none":
            v = v.replaced(
                significant=False, improved=None, direction=Direction.NONE, p_value=None,
                ci_low=None, ci_high=None, mdc_pct=None, judged=False,
            )  # fmt: skip
        return v

    others = sorted(names - {headline}, key=_order)
    metrics = adjust_for_many_categories(
        {name: judged(name) for name in others if spec[name].better != "none"}, alpha
    )
    metrics |= {name: judged(name) for name in others if spec[name].better == "none"}
    cmp = Comparison(
        baseline=[r.path.name for r in base],
        candidate=[r.path.name for r in cand],
        system=cand[0].result.system,
        label=cand[0].result.build
        if not cand[0].result.llvm_commit
        else f"LLVM {cand[0].result.llvm_commit}",
        headline=judged(headline),
        categories={},
        paired=paired,
        unpaired=alone if paired else [],
        noise=shared_runs(judged_runs),
        left_out=clean.left_out,
        runs=len(judged_runs),
        headline_name=headline,
        headline_unit=spec[headline].unit,
        metrics={name: metrics[name] for name in others},
    )
    cmp.facts, cmp.optimum = _findings(base, cand, headline)
    if clean.too_busy:
        silence(cmp, clean.too_busy)
    return cmp


def _order(name: str) -> tuple[str, int]:
    """Per-size metrics by kernel, then by size (`ro@76KiB` before `ro@1MiB`)."""
    family, _, size = name.partition("@")
    return family, parse_bytes(size) or 0


def _findings(
    base: list[Run], cand: list[Run], headline: str
) -> tuple[list[FactChange], TuneOptimum | None]:
    """The facts of each side's median run; for `tune`, where the optimum went."""
    b, c = _typical(base, headline), _typical(cand, headline)
    facts = [
        FactChange(key=key, baseline=b.result.facts.get(key), candidate=c.result.facts.get(key))
        for key in sorted(set(b.result.facts) | set(c.result.facts))
    ]
    optimum = None
    if (b.path / TUNE_CACHE_FILE).is_file() and (c.path / TUNE_CACHE_FILE).is_file():
        shift = optimum_shift(b.path / TUNE_CACHE_FILE, c.path / TUNE_CACHE_FILE)
        optimum = TuneOptimum(shift=shift, baseline_run=b.path.name, candidate_run=c.path.name)
    return facts, optimum


def _typical(runs: list[Run], headline: str) -> Run:
    """The run whose headline is the median of its side (the lower middle for even n)."""
    ranked = sorted(runs, key=lambda r: (r.result.metrics or {})[headline].value)
    return ranked[(len(ranked) - 1) // 2]
