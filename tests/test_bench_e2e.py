"""The compiler loop end to end on the CPU platform: A/A noise check and dev vs stable."""

from __future__ import annotations

import itertools
import math
import time
import uuid
from datetime import datetime
from typing import Any

import pytest

from orchestrator.report import words
from orchestrator.report.text import render
from orchestrator.store.runstore import RunStore
from orchestrator.workflows.bench import BenchRequest, bench
from orchestrator.workflows.build import CompilerSpec

pytestmark = [pytest.mark.engine, pytest.mark.slow]

SYSTEM = "water:3k"
STEPS = 1000


def test_aa_same_build_has_no_significant_change(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    # alpha 0.01 keeps this test's own false-alarm rate under ~1% per CI run.
    req = BenchRequest(system=SYSTEM, steps=STEPS, repeats=4, tag="aa", alpha=0.01)
    outcome = bench(engine, cpu_settings, req)
    cmp = outcome.comparison
    assert outcome.runs == 8 and 0 < outcome.container_seconds < outcome.elapsed
    assert cmp.paired and all("__kernel-baseline-aa-r" in name for name in cmp.baseline)
    assert cmp.headline.n_baseline == cmp.headline.n_candidate == 4
    assert cmp.categories, "the CPU cycle accounting gives per-category timings"
    assert cmp.headline.testable, words.note(cmp.headline)
    for name, verdict in {"ns/day": cmp.headline, **cmp.categories}.items():
        # md.log's cycle accounting prints a short category's seconds with 3 decimals, so
        # both sides can read alike in every pair: untestable, and said so, never p = 0
        assert verdict.testable or "untestable" in words.note(verdict), (name, words.note(verdict))
        assert not verdict.significant, f"A/A found a change in {name}: {words.note(verdict)}"
        assert words.marker(verdict) == "•"
    out = render(cmp)
    assert out.startswith(f"{stable_image.build} on water:3k:pme: ")  # the headline first
    assert "statistics: 4 interleaved pairs" in out


@pytest.mark.full_compile  # builds the CPU dev image (see tests/test_images_e2e.py)
def test_dev_against_stable_with_repeats(
    engine: Any, cpu_settings: Any, stable_image: Any, toolchain_image: str
) -> None:
    req = BenchRequest(
        candidate=CompilerSpec("toolchain", toolchain_image), system=SYSTEM, steps=STEPS, repeats=4
    )
    cmp = bench(engine, cpu_settings, req).comparison
    out = render(cmp)
    assert cmp.label.startswith("LLVM ")  # the dev compiler is an LLVM toolchain
    assert out.startswith(words.headline_text(cmp))
    assert "statistics: 4 interleaved pairs" in out  # the baseline is measured again
    assert "nbnxm" in out and "pme_spread" in out
    for run in cmp.candidate:
        result = RunStore.load(cpu_settings.results_dir / run)
        assert result.compiler_version and "clang version 23.0.0git" in result.compiler_version
        assert result.finished and result.ns_per_day


#: Student's t quantiles (published tables), by number of pairs (df = pairs - 1): at 0.975,
#: the interval the verdict prints, and at 0.9995, the interim looks' (alpha / 50).
T_975 = {4: 3.182446, 5: 2.776445, 6: 2.570582, 7: 2.446912, 8: 2.364624, 9: 2.306004,
         10: 2.262157}  # fmt: skip
T_9995 = {4: 12.92398, 5: 8.610302, 6: 6.868827, 7: 5.958816, 8: 5.407883, 9: 5.041305}
AUTO_STEPS = 200


def _pairs_the_plan_runs(pairs: list[tuple[float, float, bool]], threshold_pct: float) -> int:
    """The default plan worked by hand (no code shared with `RepeatPlan`) over the pairs in
    the order run, `(baseline ns/day, candidate ns/day, clean)`: 4 clean pairs, then 2 more
    until the verdict is settled (the 95% interval of the ratio within ± the threshold, or
    its 99.9% interval beyond it) or, from 6 pairs, the 95% interval is no wider than ± the
    threshold, at most 10; a pair with a run that shared the machine does not count and is
    measured again, at most 20 pairs in all. How many pairs it runs."""
    ran, logs = 0, []
    down, up = math.log1p(-threshold_pct / 100), math.log1p(threshold_pct / 100)
    while True:
        n = len(logs)
        if n < 4:
            want = 4 - n
        elif n >= 10:
            want = 0
        else:
            mean = sum(logs) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
            se = sd / math.sqrt(n)
            within = down < mean - T_975[n] * se and mean + T_975[n] * se < up
            beyond = mean - T_9995[n] * se > up or mean + T_9995[n] * se < down
            settled = sd > 1e-9 and (within or beyond)
            precise = n >= 6 and 100 * math.expm1(T_975[n] * se) <= threshold_pct
            want = 0 if settled or precise else min(2, 10 - n)
        more = max(0, min(want, 20 - ran))
        if more == 0:
            return ran
        assert ran + more <= len(pairs), f"the plan asks for {ran + more} pairs, {len(pairs)} ran"
        logs += [math.log(c / b) for b, c, clean in pairs[ran : ran + more] if clean]
        ran += more


def test_default_repeats_run_abba_pairs_as_the_plan_says(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    """`bench` with no --repeats: the stored runs started AB BA AB BA…, one after the other,
    as many pairs as the default plan asks for given the ns/day measured and the pairs that
    shared the machine (measured again), and both groups hold exactly those pairs, finished.
    On this 2-core host, shared with other work, every run may be flagged: then 20 pairs."""
    from orchestrator.runs.runner import RunStarted
    from orchestrator.verdict.paired import RepeatPlan, repeat_plan

    req = BenchRequest(system=SYSTEM, steps=AUTO_STEPS, tag=f"auto-{uuid.uuid4().hex[:8]}")
    assert req.repeats == "auto" and repeat_plan(req.repeats) == RepeatPlan(6, 10, 2, early=4)
    started: list[str] = []
    clock = time.monotonic()
    outcome = bench(
        engine, cpu_settings, req,
        emit=lambda e: started.append(e.result.run_id) if isinstance(e, RunStarted) else None,
    )  # fmt: skip
    print(f"\nbench --repeats auto: {time.monotonic() - clock:.1f} s, {outcome.runs} runs")
    check_auto_bench(RunStore(cpu_settings.results_dir), stable_image.build, req, outcome, started)


def check_auto_bench(
    store: RunStore, build: str, req: BenchRequest, outcome: Any, started: list[str]
) -> None:
    """What `test_default_repeats_run_abba_pairs_as_the_plan_says` asserts of a bench."""
    from orchestrator.runs.recipe import load_system
    from orchestrator.store.layout import run_id
    from orchestrator.store.runstore import log_file

    system = load_system(req.system, []).name
    groups = {
        "A": run_id(build, system, f"kernel-baseline-{req.tag}"),
        "B": run_id(build, system, str(req.tag)),
    }
    runs = []  # (start, end of md.log, side, pair, record)
    for side, group in groups.items():
        for path in store.group(group):
            record = RunStore.load(path)
            start = datetime.fromisoformat(record.timestamp).timestamp()
            pair = int(record.tag.rsplit("-r", 1)[1])
            log = log_file(path)
            assert log is not None, path
            runs.append((start, log.stat().st_mtime_ns, side, pair, record))
    runs.sort(key=lambda run: run[:2])
    n = len(runs) // 2
    assert len(runs) == 2 * n == outcome.runs and 4 <= n <= 20, groups
    order = "".join(side for _, _, side, _, _ in runs)
    assert order == "".join("AB" if k % 2 else "BA" for k in range(1, n + 1)), f"order {order}"
    assert [pair for _, _, _, pair, _ in runs] == [k for k in range(1, n + 1) for _ in "AB"]
    assert [run[4].run_id for run in runs] == started, "the stored order is the order run"
    for before, after in itertools.pairwise(runs):  # one at a time, none overlapping
        assert after[0] + 1 >= before[0] + (before[4].duration_seconds or 0), (before, after)
    by_pair = {(side, pair): record for _, _, side, pair, record in runs}
    pairs = [
        (by_pair["A", k].ns_per_day, by_pair["B", k].ns_per_day,
         not any(r.noise and r.noise.warnings for r in (by_pair["A", k], by_pair["B", k])))
        for k in range(1, n + 1)
    ]  # fmt: skip
    assert n == _pairs_the_plan_runs(pairs, req.threshold_pct), pairs
    for side, group in groups.items():
        finished = store.finished(group)
        assert sorted(run.result.tag for run in finished) == sorted(
            f"{'kernel-baseline-' if side == 'A' else ''}{req.tag}-r{k}" for k in range(1, n + 1)
        )
        assert all(r.result.steps == req.steps and r.result.ns_per_day for r in finished)
    flagged = [k for k in range(1, n + 1) if not pairs[k - 1][2]]
    print(f"{n} pairs, {n - len(flagged)} clean")
    check_busy_verdict(outcome, n, [(by_pair["A", k].run_id, by_pair["B", k].run_id)
                                    for k in flagged])  # fmt: skip


def check_busy_verdict(outcome: Any, n: int, flagged: list[tuple[str, str]]) -> None:
    """The verdict of `n` pairs whose `flagged` (baseline, candidate) runs shared the
    machine, whatever the host was doing: flagged pairs named and left out; 3 clean pairs
    or more, judged on exactly those; fewer, no verdict and no marker anywhere."""
    from orchestrator.report.text import webhook_text

    cmp, clean = outcome.comparison, n - len(flagged)
    out = render(cmp)
    assert cmp.paired and cmp.runs == 2 * n
    assert sorted(cmp.left_out) == sorted(f"{a} + {b}" for a, b in flagged)
    assert len(cmp.noise) >= len(flagged)  # a flagged pair has one noisy run or two
    if flagged:
        assert "runs shared the machine" in out
    if clean >= 3:  # the fewest pairs a marker needs (docs/results.md)
        assert cmp.too_busy is None and outcome.verdict != "too busy"
        assert cmp.headline.n_baseline == cmp.headline.n_candidate == clean
        assert f"statistics: {clean} interleaved pairs" in out
        assert cmp.headline.testable or "untestable" in words.note(cmp.headline)
        if flagged:
            assert f"left out of the verdict ({len(flagged)} pairs)" in out
    else:
        assert cmp.too_busy is not None and outcome.verdict == "too busy"
        assert words.too_busy(cmp.too_busy).startswith(
            f"the host was too busy to judge: {len(flagged)} of {n} "
        )
        assert cmp.headline.n_candidate == n  # every pair kept, for the Δ alone
        verdicts = [cmp.headline, *cmp.categories.values(), *cmp.kernels.values()]
        assert all(
            words.marker(v) == "•" and not v.significant and v.p_value is None for v in verdicts
        )
        assert "🚀" not in out + webhook_text(cmp) and "🐢" not in out + webhook_text(cmp)
