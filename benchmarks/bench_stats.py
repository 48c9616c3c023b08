"""The decision rules on simulated runs: false alarms and power (`nox -s perf`).

For each condition (`simulation.Scenario`, CV, true change, runs per side) thousands of
data sets go through the tool's own verdict functions and through asv's and LNT's rules
(`reference_rules`), all on the same data. Fixed seeds: the same table every time.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from benchmarks.simulation import (
    ALPHA,
    AUTO,
    BUSY,
    CLEAN,
    RULES,
    SCENARIOS,
    STORED,
    AutoCell,
    BusyCell,
    Cell,
    DetectableCell,
    ReportCell,
    Scenario,
    SequentialCell,
)
from orchestrator.report.repeats import plan_text
from orchestrator.verdict.paired import RepeatPlan

TRIALS = 2000  # single metric, and --repeats auto
AA_TRIALS = 4000  # no true change: the false-alarm rates, measured twice as finely
REPORT_TRIALS = 800  # the 7-category report
DETECT_TRIALS = 1000
#: An A/A cell that reads above α is run again with fresh draws and this many times the
#: trials: of 81 cells whose true rate is 5%, some read 5.5–6% at 4,000 trials by chance.
RECHECK = 5
CVS = (0.02, 0.05, 0.10)
DETECT_CVS = (0.005, 0.01, 0.02, 0.05, 0.10)
EFFECTS = (0.0, 0.03, 0.05)
PAIRS = tuple(range(3, 11))
REPORT_PAIRS = (3, 5, 7, 10)
DETECT_PAIRS = tuple(range(3, 11))
UNPAIRED_PAIRS = (4, 5, 6, 8, 10)  # runs a side; 3 vs 3 cannot reach p < 0.05
DEFAULT = next(iter(RULES))
#: `bench` on a busy host: fixed pairs 3–10, and `--repeats auto`.
BUSY_PLANS = (*(RepeatPlan(n, n) for n in PAIRS), AUTO)

Job = Cell | ReportCell | AutoCell | DetectableCell | BusyCell | SequentialCell


def _trials(effect: float) -> int:
    return AA_TRIALS if effect == 0 else TRIALS


def single(scenario: Scenario, cv: float, effect: float, n: int) -> Cell:
    """The single-metric cell of a condition: every rule at CV 5%, the default elsewhere."""
    rules = tuple(RULES) if cv == 0.05 else (DEFAULT,)
    return Cell(scenario, cv, effect, n, _trials(effect), rules)


def auto(scenario: Scenario, cv: float, effect: float) -> AutoCell:
    return AutoCell(scenario, cv, effect, _trials(effect))


def _jobs() -> list[Job]:
    jobs: list[Job] = []
    for scenario in SCENARIOS:
        for cv in CVS:
            for effect in EFFECTS:
                jobs += [single(scenario, cv, effect, n) for n in PAIRS]
                jobs.append(auto(scenario, cv, effect))
            if cv == 0.05:
                jobs += [ReportCell(scenario, cv, e, n, REPORT_TRIALS) for e in EFFECTS
                         for n in REPORT_PAIRS]  # fmt: skip
    jobs += [single(STORED, 0.05, 0.0, n) for n in PAIRS]
    jobs += [DetectableCell(cv, n, DETECT_TRIALS) for cv in DETECT_CVS for n in DETECT_PAIRS]
    jobs += [DetectableCell(cv, n, DETECT_TRIALS, paired=False) for cv in CVS
             for n in UNPAIRED_PAIRS]  # fmt: skip
    jobs += [busy(s, cv, 0.0, plan) for s in BUSY for cv in CVS for plan in BUSY_PLANS]
    jobs += [busy(s, 0.02, 0.05, plan) for s in BUSY for plan in BUSY_PLANS]
    return jobs


def busy(scenario: Scenario, cv: float, effect: float, plan: RepeatPlan) -> BusyCell:
    return BusyCell(scenario, cv, effect, plan, _trials(effect))


def _cost(job: Job) -> float:
    if isinstance(job, ReportCell):
        return job.trials * job.pairs * 20
    if isinstance(job, Cell):
        return job.trials * job.pairs * len(job.rules)
    if isinstance(job, BusyCell):
        return job.trials * job.plan.most * 3
    if isinstance(job, SequentialCell):
        return job.trials * 30
    return job.trials * 10


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def run_all(jobs: Sequence[Job], workers: int) -> dict[Job, dict[str, float]]:
    """Every job's result, computed by `workers` processes (longest jobs first)."""
    ordered = sorted(jobs, key=_cost, reverse=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_run, ordered, chunksize=1))
    return dict(zip(ordered, results, strict=True))


def _run(job: Job) -> dict[str, float]:
    return job.run()


def _change(effect: float) -> str:
    return "none (A/A)" if effect == 0 else f"{effect:.0%} faster"


def default_table(res: dict[Job, dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    for scenario in SCENARIOS:
        for cv in CVS:
            for effect in EFFECTS:
                row: dict[str, Any] = {"scenario": scenario.name, "CV": f"{cv:.0%}",
                                       "true change": _change(effect)}  # fmt: skip
                for n in PAIRS:
                    row[f"n={n}"] = _pct(res[single(scenario, cv, effect, n)][DEFAULT])
                got = res[auto(scenario, cv, effect)]
                row["auto"] = _pct(got["fires"])
                row["auto pairs"] = f"{got['pairs']:.1f}"
                rows.append(row)
    return rows


def rules_table(res: dict[Job, dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    conditions = [(s, e) for s in SCENARIOS for e in EFFECTS] + [(STORED, 0.0)]
    for name in RULES:
        for scenario, effect in conditions:
            row: dict[str, Any] = {"rule": name, "scenario": scenario.name,
                                   "true change": _change(effect)}  # fmt: skip
            for n in PAIRS:
                row[f"n={n}"] = _pct(res[single(scenario, 0.05, effect, n)][name])
            rows.append(row)
    return rows


def report_table(res: dict[Job, dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    names = list(next(r for j, r in res.items() if isinstance(j, ReportCell)))
    for name in names:
        for scenario in SCENARIOS:
            for effect in EFFECTS:
                row: dict[str, Any] = {
                    "rule": name, "scenario": scenario.name,
                    "fires": "any category (A/A)" if effect == 0 else f"nbnxm {effect:.0%} faster",
                }  # fmt: skip
                for n in REPORT_PAIRS:
                    row[f"n={n}"] = _pct(
                        res[ReportCell(scenario, 0.05, effect, n, REPORT_TRIALS)][name]
                    )
                rows.append(row)
    return rows


def detectable_table(res: dict[Job, dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    for paired, cvs, sizes in ((True, DETECT_CVS, DETECT_PAIRS), (False, CVS, UNPAIRED_PAIRS)):
        for cv in cvs:
            row: dict[str, Any] = {"test": "paired" if paired else "unpaired", "CV": _cv(cv)}
            for n in DETECT_PAIRS:
                if n in sizes:
                    got = res[DetectableCell(cv, n, DETECT_TRIALS, paired)]
                    row[f"n={n}"] = f"±{got['mdc']:.1f}% → {_pct(got['power'])}"
                else:
                    row[f"n={n}"] = ""
            rows.append(row)
    return rows


def busy_table(res: dict[Job, dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    conditions = [(s, cv, 0.0) for s in BUSY for cv in CVS] + [(s, 0.02, 0.05) for s in BUSY]
    for scenario, cv, effect in conditions:
        for what in ("fires", "fires ignoring flags", "too busy", "pairs"):
            row: dict[str, Any] = {"scenario": scenario.name, "CV": _cv(cv),
                                   "true change": _change(effect), "of trials": what}  # fmt: skip
            for plan in BUSY_PLANS:
                got = res[busy(scenario, cv, effect, plan)][what]
                key = "auto" if plan.adaptive else f"n={plan.first}"
                row[key] = f"{got:.1f}" if what == "pairs" else _pct(got)
            rows.append(row)
    return rows


def _cv(cv: float) -> str:
    return f"{100 * cv:g}%"


def _margin(p: float, trials: int) -> str:
    """A share and its 95 % simulation margin (binomial)."""
    return f"{_pct(p)} ± {_pct(1.96 * math.sqrt(p * (1 - p) / trials))}"


def _false_alarms(job: Job, result: dict[str, float]) -> float | None:
    """An A/A cell's share of trials with a marker (None: a cell with a true change, or the
    stored-baseline cell, which shows why bench never reuses one)."""
    if isinstance(job, Cell) and job.effect == 0 and job.scenario is not STORED:
        return result[DEFAULT]
    if isinstance(job, AutoCell | BusyCell) and job.effect == 0:
        return result["fires"]
    return None


def recheck(res: dict[Job, dict[str, float]], workers: int) -> dict[Job, tuple[float, Job, float]]:
    """Each A/A cell that read above α, run again with fresh draws and `RECHECK`× the trials
    (the seed follows the trial count): cell → (first reading, rerun cell, second reading)."""
    high = {j: rate for j, r in res.items() if (rate := _false_alarms(j, r) or 0) > ALPHA}
    again = {j: replace(j, trials=RECHECK * j.trials) for j in high}
    second = run_all(list(again.values()), workers)
    return {j: (high[j], again[j], _false_alarms(again[j], second[again[j]]) or 0) for j in high}


def recheck_table(checked: dict[Job, tuple[float, Job, float]]) -> list[dict[str, Any]]:
    rows = []
    for job, (first, again, second) in checked.items():
        plan = getattr(job, "plan", None)
        pairs = plan_text(plan).split(" (")[0] if plan else getattr(job, "pairs", "auto")
        rows.append({
            "cell": type(job).__name__, "scenario": job.scenario.name, "CV": _cv(job.cv),
            "pairs": pairs, f"first ({job.trials})": _pct(first),
            f"again ({again.trials}, fresh draws)": _margin(second, again.trials),
        })  # fmt: skip
    return rows


def headline(res: dict[Job, dict[str, float]]) -> list[str]:
    """The figures to quote: the default rule's A/A rates and power, asv's and LNT's."""
    fixed_aa = [(r[DEFAULT], j) for j, r in res.items() if isinstance(j, Cell)
                and j.effect == 0 and j.scenario is not STORED]  # fmt: skip
    auto_aa = [r["fires"] for j, r in res.items() if isinstance(j, AutoCell) and j.effect == 0]
    worst, where = max(fixed_aa, key=lambda item: item[0])
    pooled = sum(p for p, _ in fixed_aa) / len(fixed_aa)
    power = {n: res[single(CLEAN, 0.05, 0.03, n)][DEFAULT] for n in (5, 10)}
    power_auto = res[auto(CLEAN, 0.05, 0.03)]
    asv = max(res[single(s, 0.05, 0.05, n)][next(k for k in RULES if k.startswith("asv"))]
              for s in SCENARIOS for n in PAIRS if n < 7)  # fmt: skip
    lnt = [r["LNT (each category)"] for j, r in res.items()
           if isinstance(j, ReportCell) and j.effect == 0 and j.pairs == 3]  # fmt: skip
    stored = res[single(STORED, 0.05, 0.0, 10)]
    busy_aa = [(r["fires"], j) for j, r in res.items() if isinstance(j, BusyCell) and j.effect == 0]
    busy_worst, busy_where = max(busy_aa, key=lambda item: item[0])
    ignored = max(r["fires ignoring flags"] for j, r in res.items()
                  if isinstance(j, BusyCell) and j.effect == 0)  # fmt: skip
    detect = [r["power"] for j, r in res.items() if isinstance(j, DetectableCell) and j.paired]
    unpaired = [r["power"] for j, r in res.items()
                if isinstance(j, DetectableCell) and not j.paired]  # fmt: skip
    return [
        f"default rule (bench: paired t on log ratios), A/A false alarms with drift and slow "
        f"runs, CV 2–10%, 3–10 pairs: {_pct(pooled)} pooled over "
        f"{len(fixed_aa) * AA_TRIALS} trials; worst cell {_margin(worst, AA_TRIALS)} "
        f"({where.scenario.name}, CV {where.cv:.0%}, {where.pairs} pairs)",
        f"--repeats auto ({AUTO.start}–{AUTO.most} pairs): A/A {_pct(sum(auto_aa) / len(auto_aa))} "
        f"pooled, worst cell {_margin(max(auto_aa), AA_TRIALS)}",
        f"power for a true 3% change at CV 5%: {_pct(power[5])} at 5 pairs, {_pct(power[10])} "
        f"at 10 pairs, {_pct(power_auto['fires'])} with --repeats auto "
        f"({power_auto['pairs']:.1f} pairs on average)",
        f"a stored baseline with drift 0.5%/run, A/A at 10 runs a side: bench's test "
        f"{_pct(stored[DEFAULT])}, compare's {_pct(stored['compare (Mann–Whitney)'])}",
        f"asv (--factor 1.02): a true 5% change at CV 5% fires in at most {_pct(asv)} of trials "
        "below 7 runs a side",
        f"LNT: A/A 7-category reports at 3 runs a side show a change in "
        f"{_pct(min(lnt))}–{_pct(max(lnt))} of trials",
        f"busy host (bursts of contention in 10–30% of runs, ×1.2–2.5, flagged), A/A with "
        f"flagged pairs measured again and left out: "
        f"{_pct(sum(p for p, _ in busy_aa) / len(busy_aa))} pooled, worst cell "
        f"{_margin(busy_worst, AA_TRIALS)} ({busy_where.scenario.name}, CV "
        f"{_cv(busy_where.cv)}, {plan_text(busy_where.plan).split(' (')[0]}); ignoring the "
        f"flags the worst cell is {_pct(ignored)}",
        f"a true change of the median stated 'could have detected ±X%' gets a marker in "
        f"{_pct(min(detect))}–{_pct(max(detect))} of trials (paired, CV 0.5–10%, 3–10 pairs; "
        f"target 75–90%), unpaired {_pct(min(unpaired))}–{_pct(max(unpaired))} (CV 2–10%, 4–10 "
        f"runs a side)",
    ]


def main(workers: int | None = None) -> list[tuple[str, list[dict[str, Any]] | list[str]]]:
    """Every table of the stats benchmark, titled, and how long it took."""
    started = time.monotonic()
    workers = workers or os.cpu_count() or 2
    res = run_all(_jobs(), workers)
    checked = recheck(res, workers)
    again = [second for _first, _job, second in checked.values()]
    second_look = (
        f"the {len(checked)} A/A cells that read above {_pct(ALPHA)}, run again with fresh "
        f"draws at {RECHECK}× the trials: {_pct(min(again))}–{_pct(max(again))}"
        if checked
        else f"no A/A cell read above {_pct(ALPHA)}"
    )
    return [
        ("Figures to quote", [*headline(res), second_look]),
        (
            f"The default rule (bench): share of trials per cell with a marker ({AA_TRIALS} "
            f"A/A, {TRIALS} otherwise; threshold 2%, α 0.05); n = interleaved pairs",
            default_table(res),
        ),
        (
            "The same simulated data through each rule, CV 5% (as above; asv with "
            "`--factor 1.02`; LNT with its defaults, times ≈ 1 s)",
            rules_table(res),
        ),
        (
            f"The 7-category report, CV 5%, categories correlated 0.5 ({REPORT_TRIALS} trials)",
            report_table(res),
        ),
        (
            'Is "could have detected ±X%" honest? Median stated X in A/A, then the share of '
            f"trials with a true change of X that get the marker (stated at 80%; target "
            f"≥ 75%; {DETECT_TRIALS} trials; n = pairs, or runs a side unpaired)",
            detectable_table(res),
        ),
        (
            f"A busy host: bench re-measures pairs with a flagged run (at most as many extra as "
            f"the plan's most) and leaves them out; share of trials with a marker, beside the "
            f"verdict that ignores the flags, the share judged too busy, and pairs run "
            f"({AA_TRIALS} A/A trials, {TRIALS} otherwise)",
            busy_table(res),
        ),
        (
            f"A second look: every A/A cell above {_pct(ALPHA)}, run again with fresh draws "
            f"(± the 95% simulation margin)",
            recheck_table(checked),
        ),
        ("Time", [f"{time.monotonic() - started:.0f} s for the whole stats benchmark"]),
    ]
