"""`--repeats auto` before and now, on the same simulated data (`nox -s perf`).

Before: the width rule alone (6 pairs, then 2 more while the interval of the ratio is
wider than ± the threshold, at most 10). Now (the default): the same, and from 4 pairs
a stop once the verdict is settled (`verdict.sequential`). Beside them the naive rule,
the settled marker at alpha at every look, which is what the strict interim level
prevents. Each data set goes through all three (`simulation.SequentialCell`), so "fires
where the rule before did not" counts exactly the markers the early looks added; a busy
host runs each rule on its own draws (`simulation.BusyCell`). Every A/A cell that reads
above alpha is run again with fresh draws (`bench_stats.recheck`).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

from benchmarks.bench_stats import (
    AA_TRIALS,
    RECHECK,
    Job,
    _change,
    _cv,
    _margin,
    _pct,
    _trials,
    recheck,
    recheck_table,
    run_all,
)
from benchmarks.simulation import (
    ALPHA,
    AUTO,
    BUSY,
    SCENARIOS,
    SEQUENTIAL_RULES,
    WIDTH_ONLY,
    BusyCell,
    Scenario,
    SequentialCell,
)
from orchestrator.verdict.sequential import INTERIM_SHARE

#: From a GPU's noise (0.5–1%) to a busy CPU's (10%).
CVS = (0.005, 0.01, 0.02, 0.05, 0.10)
#: No change, the change power is quoted at, and one the early marker settles.
EFFECTS = (0.0, 0.05, 0.10)
BUSY_CVS = (0.01, 0.02, 0.05, 0.10)
BUSY_RULES = {"before": WIDTH_ONLY, "sequential": AUTO}
#: Interim looks of `--repeats auto` (4, 6 and 8 pairs): each can add at most its level.
INTERIM_LOOKS = 3


def cell(scenario: Scenario, cv: float, effect: float) -> SequentialCell:
    return SequentialCell(scenario, cv, effect, _trials(effect))


def busy(scenario: Scenario, cv: float, effect: float, rule: str) -> BusyCell:
    return BusyCell(scenario, cv, effect, BUSY_RULES[rule], _trials(effect))


def jobs() -> list[Job]:
    out: list[Job] = [cell(s, cv, e) for s in SCENARIOS for cv in CVS for e in EFFECTS]
    out += [busy(s, cv, 0.0, r) for s in BUSY for cv in BUSY_CVS for r in BUSY_RULES]
    out += [busy(s, 0.02, 0.05, r) for s in BUSY for r in BUSY_RULES]
    return out


def table(res: dict[Job, dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    for scenario in SCENARIOS:
        for cv in CVS:
            for effect in EFFECTS:
                got = res[cell(scenario, cv, effect)]
                row: dict[str, Any] = {"scenario": scenario.name, "CV": _cv(cv),
                                       "true change": _change(effect)}  # fmt: skip
                for name in SEQUENTIAL_RULES:
                    row[f"{name}: fires"] = _pct(got[f"{name} fires"])
                    if name in ("sequential", "naive"):
                        row[f"{name}: not before"] = _pct(got[f"{name} extra"])
                    if name != "10 pairs":
                        row[f"{name}: pairs"] = f"{got[f'{name} pairs']:.1f}"
                rows.append(row)
    return rows


def again(res: dict[Job, dict[str, float]], workers: int) -> list[dict[str, Any]]:
    """Each same-data A/A cell where now read above alpha, run again with fresh draws and
    `RECHECK`x the trials: every rule's rate with its 95% simulation margin."""
    high = [j for j, r in res.items() if isinstance(j, SequentialCell) and j.effect == 0
            and r["sequential fires"] > ALPHA]  # fmt: skip
    rerun = {j: replace(j, trials=RECHECK * j.trials) for j in high}
    second = run_all(list(rerun.values()), workers)
    rows = []
    for job, bigger in rerun.items():
        row: dict[str, Any] = {"scenario": job.scenario.name, "CV": _cv(job.cv),
                               "first (now)": _pct(res[job]["sequential fires"])}  # fmt: skip
        for name in SEQUENTIAL_RULES:
            row[f"{name} ({bigger.trials})"] = _margin(second[bigger][f"{name} fires"],
                                                        bigger.trials)  # fmt: skip
        rows.append(row)
    return rows


def busy_table(res: dict[Job, dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    conditions = [(s, cv, 0.0) for s in BUSY for cv in BUSY_CVS] + [(s, 0.02, 0.05) for s in BUSY]
    for scenario, cv, effect in conditions:
        row: dict[str, Any] = {"scenario": scenario.name, "CV": _cv(cv),
                               "true change": _change(effect)}  # fmt: skip
        for rule in BUSY_RULES:
            got = res[busy(scenario, cv, effect, rule)]
            row[f"{rule}: fires"] = _pct(got["fires"])
            row[f"{rule}: too busy"] = _pct(got["too busy"])
            row[f"{rule}: pairs"] = f"{got['pairs']:.1f}"
        rows.append(row)
    return rows


def headline(res: dict[Job, dict[str, float]]) -> list[str]:
    """The figures to quote: false alarms before and now, the markers the early looks
    added, power and pairs."""
    aa = [(j, r) for j, r in res.items() if isinstance(j, SequentialCell) and j.effect == 0]

    def worst(rule: str) -> str:
        rate, where = max(((r[f"{rule} fires"], j) for j, r in aa), key=lambda item: item[0])
        return f"{_margin(rate, AA_TRIALS)} ({where.scenario.name}, CV {_cv(where.cv)})"

    def pooled(rule: str, what: str = "fires") -> str:
        return _pct(sum(r[f"{rule} {what}"] for _, r in aa) / len(aa))

    extra = max(r["sequential extra"] for _, r in aa)
    busy_aa = {rule: [r["fires"] for j, r in res.items() if isinstance(j, BusyCell)
                      and j.effect == 0 and j.plan == plan]
               for rule, plan in BUSY_RULES.items()}  # fmt: skip
    clean = {(j.cv, j.effect): r for j, r in res.items()
             if isinstance(j, SequentialCell) and j.scenario is SCENARIOS[0]}  # fmt: skip

    def pairs(cv: float, effect: float) -> str:
        got = clean[cv, effect]
        return f"{got['before pairs']:.1f} → {got['sequential pairs']:.1f}"

    def power(cv: float) -> str:
        got = clean[cv, 0.05]
        return f"{_pct(got['before fires'])} → {_pct(got['sequential fires'])}"

    bound = INTERIM_LOOKS * ALPHA / INTERIM_SHARE
    return [
        f"A/A false alarms, clean, drift and slow runs, CV 0.5–10% ({len(aa)} cells of "
        f"{AA_TRIALS} trials): before {pooled('before')} pooled, worst {worst('before')}; "
        f"now {pooled('sequential')} pooled, worst {worst('sequential')}; the plain t test at "
        f"10 pairs on the same data {pooled('10 pairs')} pooled, worst {worst('10 pairs')}",
        f"markers now that the rule before did not give on the same data: "
        f"{pooled('sequential', 'extra')} pooled, at most {_pct(extra)} a cell (bound: "
        f"{INTERIM_LOOKS} interim looks at α/{INTERIM_SHARE}, {_pct(bound)}); the naive rule: "
        f"{pooled('naive', 'extra')} pooled, A/A worst {worst('naive')}",
        f"busy host (bursts in 10–30% of runs, flagged pairs measured again), A/A, CV 1–10%: "
        f"before {_pct(sum(busy_aa['before']) / len(busy_aa['before']))} pooled, worst "
        f"{_pct(max(busy_aa['before']))}; now "
        f"{_pct(sum(busy_aa['sequential']) / len(busy_aa['sequential']))} pooled, worst "
        f"{_margin(max(busy_aa['sequential']), AA_TRIALS)}",
        f"power for a true 5% change (clean), before → now: CV 2% {power(0.02)}, CV 5% "
        f"{power(0.05)}, CV 10% {power(0.10)}",
        f"mean pairs (clean), before → now: A/A at CV 0.5% {pairs(0.005, 0.0)}, 1% "
        f"{pairs(0.01, 0.0)}, 2% {pairs(0.02, 0.0)}; a true 5% change at CV 0.5% "
        f"{pairs(0.005, 0.05)}; a true 10% change at CV 1% {pairs(0.01, 0.10)}, 2% "
        f"{pairs(0.02, 0.10)}, 5% {pairs(0.05, 0.10)}",
    ]


def main(workers: int | None = None) -> list[tuple[str, list[dict[str, Any]] | list[str]]]:
    """The tables of `--repeats auto` before and now, titled, and how long they took."""
    started = time.monotonic()
    workers = workers or os.cpu_count() or 2
    res = run_all(jobs(), workers)
    same = again(res, workers)
    checked = recheck({j: r for j, r in res.items() if isinstance(j, BusyCell)}, workers)
    reread = [second for _first, _job, second in checked.values()]
    second_look = (
        f"the {len(checked)} busy-host A/A cells that read above {_pct(ALPHA)}, run again "
        f"with fresh draws at {RECHECK}× the trials: {_pct(min(reread))}–{_pct(max(reread))}"
        if checked
        else f"no busy-host A/A cell read above {_pct(ALPHA)}"
    )
    return [
        ("--repeats auto before and now: figures to quote", [*headline(res), second_look]),
        (
            "--repeats auto before (the width rule, 6–10 pairs), the plain t test at 10 pairs, "
            "now (settled verdicts from 4 pairs) and the naive rule (the settled marker at α "
            "every look), on the same data: share of trials with a marker, mean pairs, and the "
            "share with a marker the rule before did not give",
            table(res),
        ),
        ("--repeats auto before and now on a busy host (own draws each)", busy_table(res)),
        (
            f"A second look, same data: every A/A cell where now read above 5%, again with "
            f"fresh draws and {RECHECK}x the trials, each rule (± the 95% simulation margin)",
            same,
        ),
        ("A second look, busy host: every A/A cell above 5%, again", recheck_table(checked)),
        ("Time", [f"{time.monotonic() - started:.0f} s for --repeats auto before and now"]),
    ]
