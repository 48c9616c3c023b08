"""`bench --budget`: the time parsed, a run's time estimated from stored runs, the plan
fitted (fewer pairs, then fewer steps only with a kernel trace, never below the floor),
refused before anything is built when nothing fits, and kept in the runs' loop."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.core.events import Step
from orchestrator.core.settings import Settings
from orchestrator.images.provenance import ImageRecord
from orchestrator.platforms import get
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.runs.recipe import load_system
from orchestrator.store.records import ImageRef, RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.paired import RepeatPlan, repeat_plan
from orchestrator.workflows import pairs
from orchestrator.workflows.bench_plan import BenchRequest, check_options, fitted, settle
from orchestrator.workflows.budget import (
    FLOOR_STEPS,
    Spend,
    budget_seconds,
    fit,
    run_time,
    traced,
)

BENCHMEM = "benchMEM"


def _settings(tmp_path: Path) -> Settings:
    return Settings(results_dir=tmp_path / "results", platform="cpu")


def _store(
    settings: Settings, seconds: float, steps: int | None, n: int = 3, *, system: str = BENCHMEM,
    setup: float | None = None, cpu_only: bool = False, tag: str = "t",
) -> None:  # fmt: skip
    """`n` finished runs of `system` that took `seconds` each at `steps`."""
    for i in range(n):
        run_id = f"b__{system.replace(':', '-')}__{tag}-{steps}-r{i}"
        result = RunResult(
            run_id=run_id, build="b", system=system, tag=tag, platform="rocm",
            timestamp="2026-11-22T00:00:00+00:00", finished=True, return_code=0,
            duration_seconds=seconds, steps=steps, setup_seconds=setup, cpu_only=cpu_only,
            image=ImageRef(tag="gromacs:b", id="sha256:0"), host=HostInfo(hostname="h", kernel="k"),
            command=["gmx"],
        )  # fmt: skip
        run_dir = settings.results_dir / run_id
        run_dir.mkdir(parents=True)
        RunStore.save(run_dir, result)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10m", 600), ("90s", 90), ("1h", 3600), ("1h30m", 5400), ("1.5h", 5400), ("10 min", 600)],
)
def test_a_budget_is_a_time_with_a_unit(text: str, seconds: float) -> None:
    assert budget_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "10", "0m", "0s", "-5m", "10x", "m", "1h 2x"])
def test_a_budget_without_a_unit_or_not_above_zero_is_refused_in_one_paragraph(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_options(BenchRequest(budget=text))
    message = caught.value.message
    assert message.startswith(f"--budget {text!r}") and "90s, 10m, 1h or 1h30m" in message
    assert "\n" not in message


def test_a_run_time_from_stored_runs(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert run_time(settings, BENCHMEM, 30000, False) is None  # never ran here
    _store(settings, 180.0, 30000)
    _store(settings, 999.0, 30000, cpu_only=True, tag="cpu")  # the host CPU: not alike
    one = run_time(settings, BENCHMEM, 30000, False)
    assert one is not None and one.seconds(30000) == pytest.approx(180)
    assert one.setup == 0 and "assumed proportional to steps" in one.basis, one
    _store(settings, 70.0, 10000, tag="short")
    two = run_time(settings, BENCHMEM, 30000, False)
    assert two is not None and two.setup == pytest.approx(15.0)  # 180 = 15 + 30,000 x 5.5 ms
    assert two.per_step == pytest.approx(0.0055) and "fitted to 6 stored runs" in two.basis


def test_one_step_count_takes_the_runs_own_set_up_apart(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _store(settings, 180.0, 30000, setup=30.0)
    got = run_time(settings, BENCHMEM, 30000, False)
    assert got is not None and got.setup == 30 and got.seconds(10000) == pytest.approx(80)
    assert "the runs' own set-up (30 s) apart" in got.basis


def _fit(settings: Settings, budget: str, *, trace: bool = True, repeats: str = "auto") -> Any:
    system = load_system(BENCHMEM)
    return fit(settings, budget=budget_seconds(budget), system=system, plan=repeat_plan(repeats),
               steps=None, cpu_only=False, trace=trace)  # fmt: skip


def test_the_plan_fits_then_fewer_pairs_then_fewer_steps_with_the_trace(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _store(settings, 180.0, 30000)
    _store(settings, 70.0, 10000, tag="short")  # 15 s set-up + 5.5 ms a step
    whole = _fit(settings, "2h")  # 10 pairs of 3-minute runs: an hour
    assert whole.plan == repeat_plan("auto") and whole.steps is None
    fits = "budget 120 min: 4–10 pairs at 30,000 steps: the plan fits, about 24–60 min"
    assert whole.words == fits
    fewer = _fit(settings, "30m")  # 5 pairs fit: 4, an even number
    assert fewer.plan.most == 4 and not fewer.plan.adaptive and fewer.steps is None
    shorter = _fit(settings, "15m")  # 6 pairs of 75 s runs: 10,909 steps, rounded to 10,000
    assert shorter.steps == FLOOR_STEPS and (shorter.plan.start, shorter.plan.most) == (4, 6)
    assert shorter.words.startswith(
        "budget 15 min: 4–6 pairs at 10,000 steps instead of 30,000 (the kernel trace gives "
        "the per-kernel statistics; never below 10,000), about 9–14 min"
    ), shorter.words
    assert shorter.pair_seconds == pytest.approx(140)
    fixed = _fit(settings, "30m", repeats="8")
    assert fixed.plan == RepeatPlan(4, 4)


def test_a_budget_nothing_fits_is_refused_with_what_the_least_plan_takes(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _store(settings, 180.0, 30000)
    with pytest.raises(UsageError) as untraced:
        _fit(settings, "10m", trace=False)  # 4 pairs of 3 minutes: 24 min, steps as they are
    said = untraced.value.message
    assert said.startswith("--budget 10 min is too small for a verdict on benchMEM: the least ")
    assert "4 interleaved pairs (8 runs) at 30,000 steps, takes about 24 min here" in said
    assert "Give --budget 24m or more; lower steps are used only where the kernel trace" in said
    with pytest.raises(UsageError, match="the steps are at the floor of 10,000 already"):
        _fit(settings, "5m")  # proportional: 60 s at 10,000 steps, 8 minutes for 4 pairs


def test_no_stored_runs_no_estimate_the_budget_applies_after_the_first_pair(
    tmp_path: Path,
) -> None:
    got = _fit(_settings(tmp_path), "10m")
    assert got.pair_seconds is None and got.plan == repeat_plan("auto")
    assert got.line == (
        "budget 10 min: no estimate (benchMEM never ran here): the budget is applied after "
        "the first pair"
    )


def test_the_trace_is_where_a_gpu_run_is_profiled() -> None:
    mem, bandwidth = load_system(BENCHMEM), load_system("bandwidth")
    rocm, cpu = get("rocm"), get("cpu")
    assert traced(rocm, "amd", None, False, mem)  # rocprofv3 in AMD's stack
    assert not traced(rocm, "debian", None, False, mem)  # no profiler there
    assert not traced(rocm, "amd", "none", False, mem) and not traced(rocm, "amd", None, True, mem)
    assert not traced(cpu, None, "trace", False, mem)  # md.log's cycle counters, not a trace
    assert not traced(rocm, "amd", None, False, bandwidth)  # a microbenchmark has no steps


def test_settle_refuses_a_budget_nothing_fits_before_anything_is_built(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _store(settings, 180.0, 30000)
    with pytest.raises(UsageError, match="too small for a verdict on benchMEM"):
        settle(settings, BenchRequest(system=BENCHMEM, budget="10m"))
    from_setting = settings.model_copy(update={"bench_budget": "2h"})
    settled = settle(from_setting, BenchRequest(system=BENCHMEM))
    assert settled.request.budget == "2h"
    got = fitted(from_setting, settled.request)
    assert got is not None and got.plan == repeat_plan("auto")


def test_spend_cuts_the_pairs_to_what_is_left_and_never_below_a_verdict() -> None:
    spend = Spend(budget=600.0, pair_seconds=None)
    assert spend.cap(4, 0, 0) == (1, None)  # no estimate: one pair first
    spend.add([_timed(70.0), _timed(80.0)])  # a pair: 150 s
    more, said = spend.cap(3, 1, 1)  # 450 s left: 3 more, 4 in all
    assert more == 3 and said == (
        "budget 10 min: 2 min spent, a pair takes about 2 min: 4 pairs fit in it"
    )
    spend.add([_timed(75.0)] * 6)
    assert spend.cap(2, 4, 4) == (0, "budget 10 min: 10 min spent, a pair takes about 2 min: "
                                      "stopped after 4 pairs")  # fmt: skip
    busy = replace(spend)
    more, said = busy.cap(2, 4, 2)  # 2 of the 4 pairs shared the machine: 2 more all the same
    assert more == 2 and said and "2 more pairs all the same, the fewest for a verdict" in said
    roomy = Spend(budget=900.0, pair_seconds=150.0)
    assert roomy.cap(4, 0, 0) == (4, None)
    roomy.add([_timed(75.0)] * 8)
    assert roomy.cap(2, 4, 4) == (2, None)  # 300 s left: 2 pairs
    roomy.pairs, roomy.spent = 4, 700.0  # a pair took 175 s: 200 s left, one pair, odd: none
    assert roomy.cap(2, 4, 4)[0] == 0


def _timed(seconds: float, ns_per_day: float = 100.0) -> RunResult:
    return RunResult(
        run_id="x", build="b", system=BENCHMEM, tag="t", platform="rocm", timestamp="t",
        finished=True, duration_seconds=seconds, ns_per_day=ns_per_day,
        image=ImageRef(tag="gromacs:b", id="sha256:0"), host=HostInfo(hostname="h", kernel="k"),
        command=["gmx"],
    )  # fmt: skip


class _Executor:
    """Runs a batch at once: each run takes `seconds` and gives ns/day from `values`."""

    def __init__(self, seconds: float, values: list[float]) -> None:
        self.seconds, self.values, self.batches = seconds, values, []  # type: ignore[var-annotated]

    def run(self, chains: Any, emit: Any, *, stop_on_failure: bool = False) -> Any:
        (batch,) = chains
        self.batches.append(len(batch) // 2)
        out = []
        for job in batch:
            result = _timed(self.seconds, self.values.pop(0))
            out.append(result.model_copy(update={"steps": job.request.steps}))
        return [out]


def _loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seconds: float, values: list[float],
    **request: Any,
) -> tuple[_Executor, list[str]]:  # fmt: skip
    executor = _Executor(seconds, values)
    monkeypatch.setattr(pairs, "executor_for", lambda client, settings: executor)
    image = ImageRecord(tag="gromacs:b", id="sha256:0", platform="rocm", rocm_stack="amd",
                        build="b")  # fmt: skip
    said: list[str] = []
    req = BenchRequest(system=BENCHMEM, tag="t", **request)
    pairs.run_pairs(None, _settings(tmp_path), req, image, image, False,  # type: ignore[arg-type]
                    lambda e: said.append(e.text) if isinstance(e, Step) else None)  # fmt: skip
    return executor, said


def test_the_loop_says_why_it_stopped_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = [100.0, 100.1, 100.2, 100.0, 99.9, 100.05, 100.1, 100.0]  # ratios within ±0.2%
    executor, said = _loop(tmp_path, monkeypatch, 60.0, quiet)
    assert executor.batches == [4]
    assert said[-1].startswith("stopped after 4 clean pairs: the ratio's 95% interval ")
    assert said[-1].endswith("lies within ±2%: no marker can fire"), said


def test_the_loop_applies_a_budget_after_the_first_pair_without_an_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    noisy = [100.0, 104.0, 101.0, 95.0, 99.0, 103.0, 100.0, 96.0] * 3
    executor, said = _loop(tmp_path, monkeypatch, 100.0, noisy, budget="15m")
    assert said[0].startswith("budget 15 min: no estimate (benchMEM never ran here)")
    assert executor.batches == [1, 3], (executor.batches, said)  # 200 s a pair: 4 in 15 min
    assert "4 pairs fit in it" in said[1]
    assert said[-1] == (
        "budget 15 min: 13 min spent, a pair takes about 3 min: stopped after 4 pairs"
    )


def test_the_manuals_arithmetic_for_benchmem_at_three_minutes_a_run(tmp_path: Path) -> None:
    """docs/usage.md, "How long until a verdict": 3 min a run at 30,000 steps, no set-up."""
    settings = _settings(tmp_path)
    _store(settings, 180.0, 30000)
    ten = _fit(settings, "10m")
    assert ten.words.startswith("budget 10 min: 4 pairs at 10,000 steps instead of 30,000 (")
    assert ten.words.endswith("), about 8 min"), ten.words
    fifteen = _fit(settings, "15m")
    assert (fifteen.steps, fifteen.plan.start, fifteen.plan.most) == (12000, 4, 6)
    assert fifteen.words.endswith("about 10–14 min"), fifteen.words
    with pytest.raises(UsageError, match=r"at 10,000 steps, takes about 8 min here .* 8m or"):
        _fit(settings, "6m")
