"""A verdict in words: its marker (🚀 🐢 • ⚠) and note, and a comparison's sentences
(headline, statistics, runs that shared the machine, and each caveat).

The verdict holds numbers and flags (`verdict.model`); everything a person reads about it
is made here from them, so the text report, the HTML page, the webhook and `--json` say
the same thing, and no code reads meaning back out of an emoji.
"""

from __future__ import annotations

from orchestrator.codegen.diff import short_name
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.controlled import Controlled
from orchestrator.verdict.history import Series
from orchestrator.verdict.model import Direction, TooBusy, Verdict
from orchestrator.verdict.paired import MIN_PAIRS
from orchestrator.verdict.stats import min_attainable_p


def marker(v: Verdict) -> str:
    """🚀/🐢 for a significant change beyond the threshold, ⚠ for a speed-up of suspect
    runs, else •."""
    if v.direction is Direction.FASTER:
        return "⚠" if v.suspect else "🚀"
    return "🐢" if v.direction is Direction.SLOWER else "•"


def format_p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:#.2g}"


def mdc_terms(power: float, alpha: float, threshold_pct: float) -> str:
    """What "could have detected ±X%" promises, in words."""
    return f"a marker with {power:.0%} probability: p < {alpha:g} and beyond ±{threshold_pct:g}%"


def too_busy(why: TooBusy) -> str:
    """Why a comparison has no verdict, and what to do about it."""
    if why.paired:
        remain = "pair remains" if why.clean_baseline == 1 else "pairs remain"
        return (
            f"the host was too busy to judge: {why.left_out} of {why.total} pairs had a run "
            f"that shared the machine and were left out, {why.clean_baseline} clean {remain}, "
            f"and a verdict needs {why.needed}. Run again on a quiet machine (or with more "
            "--repeats)"
        )
    return (
        f"the host was too busy to judge: {why.left_out} of {why.total} runs shared the "
        f"machine and were left out, leaving {why.clean_baseline} baseline and "
        f"{why.clean_candidate} candidate runs, and a verdict needs {why.needed} on each side. "
        "Run again on a quiet machine"
    )


def note(v: Verdict) -> str:
    """What the test found, or why there is no test, in one sentence."""
    if v.too_busy is not None:
        return f"{too_busy(v.too_busy)}; Δ shown for information only"
    if not v.judged:
        return "shown, not judged: the recipe declares no better direction"
    text = _paired(v) if v.paired else _unpaired(v)
    if v.corrected_for is not None:
        text += (
            f"; not significant after correcting for {v.corrected_for} {v.among} "
            "(Benjamini–Hochberg)"
        )
    return text


def _change(v: Verdict) -> str:
    """`faster by 5.0%`: the word is the direction of the change, whatever its size."""
    better = v.delta_pct > 0 if v.higher_is_better else v.delta_pct < 0
    return f"{'faster' if better else 'slower'} by {abs(v.delta_pct):.1f}%"


def _found(v: Verdict) -> str:
    """A significant change (before any correction for many tests): size, p, interval."""
    text = (
        f"{_change(v)} ({format_p(v.p_value or 0.0)}, {100 * (1 - v.alpha):g}% CI of ratio "
        f"{v.ci_low:.3f}–{v.ci_high:.3f})"
    )
    if abs(v.delta_pct) <= v.threshold_pct:
        text += f", within the {v.threshold_pct:g}% threshold"
    return text


def _unpaired(v: Verdict) -> str:
    n_b, n_c = v.n_baseline, v.n_candidate
    if n_b < 2 or n_c < 2:
        who = (
            "run per side" if n_b == n_c == 1 else ("baseline run" if n_b < 2 else "candidate run")
        )
        return f"single {who}: noise unknown, Δ shown for information only"
    if not v.testable or v.ci_low is None or v.p_value is None:
        return (
            f"{n_b} vs {n_c} runs cannot reach p < {v.alpha:g} with an exact Mann–Whitney"
            f" test (minimum p = {v.min_attainable_p:#.2g}); run --repeats "
            f"{_repeats_needed(v.alpha)} or more"
        )
    if v.significant or v.corrected_for is not None:
        return _found(v)
    could = (
        f"could have detected ±{v.mdc_pct:.1f}% ({mdc_terms(v.power, v.alpha, v.threshold_pct)})"
        if v.mdc_pct is not None
        else "no spread within either group to say what they could have detected"
    )
    return f"change within noise ({format_p(v.p_value)}); {n_b} vs {n_c} runs {could}"


def _paired(v: Verdict) -> str:
    n = v.n_candidate
    if n < 2:
        return "single pair: noise unknown, Δ shown for information only"
    if v.p_value is None:
        return (
            f"the same ratio in all {n} pairs (Δ {v.delta_pct:+.2f}%): no spread observed, "
            "so noise cannot be told from a change: untestable"
        )
    if n < MIN_PAIRS:
        return (
            f"{_change(v)} ({format_p(v.p_value)}) from {n} pairs: too few for a verdict (a "
            f"marker needs {MIN_PAIRS} pairs or more), for information only"
        )
    if v.significant or v.corrected_for is not None:
        return _found(v)
    return (
        f"no change detected ({format_p(v.p_value)}); {n} pairs could have detected "
        f"±{v.mdc_pct:.1f}% ({mdc_terms(v.power, v.alpha, v.threshold_pct)})"
    )


def _repeats_needed(alpha: float) -> int:
    n = 2
    while min_attainable_p(n, n) >= alpha:
        n += 1
    return n


def headline_text(cmp: Comparison) -> str:
    """The headline as the report opens with it: the value, the baseline's and the change."""
    v = cmp.headline
    sign = "+" if v.delta_abs >= 0 else ""
    where = cmp.system + (f" vs {cmp.base}" if cmp.base else "")
    if cmp.headline_name == "ns/day":
        text = (
            f"{cmp.label} on {where}: {v.candidate_median:.1f} ns/day "
            f"(baseline {v.baseline_median:.1f}, Δ {sign}{v.delta_abs:.3f}, "
            f"{sign}{v.delta_pct:.2f}%)"
        )
    else:
        text = (
            f"{cmp.label} on {where}: {cmp.headline_name} "
            f"{v.candidate_median:.4g} {cmp.headline_unit} (baseline "
            f"{v.baseline_median:.4g}, Δ {sign}{v.delta_abs:.4g}, {sign}{v.delta_pct:.2f}%)"
        )
    return ("⚠ SUSPECT " if cmp.suspect else "") + text


def stats_line(cmp: Comparison) -> str:
    """How the headline was tested, and what the test found."""
    v = cmp.headline
    if cmp.paired:
        design = f"{v.n_candidate} interleaved pairs, paired t on log ratios"
    else:
        design = f"{v.n_candidate} vs {v.n_baseline} runs, medians, Mann–Whitney"
    return f"statistics: {design}; {cmp.headline_name} {note(v)}"


def noise_headline(cmp: Comparison) -> str | None:
    """One sentence on runs that shared the machine, or None when none did."""
    if not cmp.noise:
        return None
    if cmp.too_busy:
        done = "no verdict: " + too_busy(cmp.too_busy)
    elif cmp.left_out:
        done = f"left out of the verdict ({len(cmp.left_out)} " + (
            "pairs)" if cmp.paired else "runs)"
        )
    else:
        done = "not to be trusted"
    return (
        f"{len(cmp.noise)} of {cmp.runs} runs shared the machine, {done}; a run that "
        "competes for cores, caches and memory bandwidth measures its neighbours as much "
        "as the build"
    )


def noise_lines(cmp: Comparison) -> list[str]:
    """One line per run that shared the machine: which run, and what it shared it with."""
    return [f"{shared.run}: {'; '.join(shared.warnings)}" for shared in cmp.noise]


def comparable_note(cmp: Comparison) -> str | None:
    """Why kernels and categories are not comparable (PME tuning), or None."""
    if cmp.comparable or not cmp.pme:
        return None
    grids = "; ".join(sorted(str((tuple(p.grid), p.cutoff)) for p in cmp.pme))
    return (
        "not comparable per kernel: PME tuning ended on different grids/cut-offs "
        f"({grids}); ns/day is still compared. "
        "Pin the grid with `-- -notunepme` for per-kernel comparisons."
    )


def suspect_note(cmp: Comparison) -> str | None:
    """Why the comparison is suspect (the energies disagree), or None."""
    e = cmp.energy
    if not cmp.suspect or e is None:
        return None
    return (
        f"suspect: average potential energy {e.candidate:.1f} vs baseline {e.baseline:.1f} "
        f"kJ/mol ({e.apart:.1%} apart, tolerance {e.tolerance:.0%}): the build may compute "
        "something else; its speed is not reported as a speed-up"
    )


def findings(cmp: Comparison) -> list[str]:
    """A kernel run's facts side by side, then where `tune`'s optimum went."""
    out = [
        f"{f.key}: {f.candidate}" if f.baseline == f.candidate
        else f"{f.key}: {f.baseline} → {f.candidate}"
        for f in cmp.facts
    ]  # fmt: skip
    if cmp.optimum is not None:
        o = cmp.optimum
        out.append(
            f"{o.shift.sentence()} (the median run of each side: {o.baseline_run}, "
            f"{o.candidate_run})"
        )
    return out


def ceiling_line(cmp: Comparison) -> str | None:
    """The memory ceiling of the runs' host, past the caches, or None when unmeasured."""
    c = cmp.ceiling
    if c is None:
        return None
    return (
        f"memory ceiling of this host, past the caches: {c.read_gbs:.4g} GB/s read, "
        f"{c.copy_gbs:.4g} GB/s copy ({c.run_id}, {c.timestamp})"
    )


def _plural(unit: str, n: int) -> str:
    return unit if n == 1 else "categories" if unit == "category" else f"{unit}s"


def control(entry: Controlled) -> str:
    """What a changed kernel's (CPU: category's) control was, or why there is none."""
    if not entry.controls or entry.control_ratio is None:
        return f"no unchanged {entry.unit} measured in every run: raw only"
    shown = ", ".join(short_name(n, 40) for n in entry.controls[:3])
    shown += f" and {len(entry.controls) - 3} more" if len(entry.controls) > 3 else ""
    return (
        f"time-weighted geometric mean of {len(entry.controls)} unchanged "
        f"{_plural(entry.unit, len(entry.controls))} ({shown}): ×{entry.control_ratio:.4f}"
    )


def ordered_by(series: Series) -> str:
    """What orders a history's points: the commit dates of an LLVM source, or first runs."""
    return f"commit date in {series.dated_by}" if series.dated_by is not None else "first run"
