"""Runs that shared the machine carry no verdict: left out, and too few clean ones, none.

The noise sampler (`runs.hostinfo.HostNoise`) flags a run when other processes used a
quarter of a CPU or more, the hypervisor stole CPU time, or another container ran. On a
busy 2-core host 16 of 20 runs were flagged and an A/A bench still printed
`🐢 fft +49.21% (p 0.0053)`: a contaminated run measures its neighbours as much as the
build, and a burst that hits a few runs is not the noise the t test allows for (it is
neither normal nor shared by both runs of a pair).

So a pair with a flagged run (either side) is left out of the verdict and named, and
unpaired groups lose their flagged runs. Leaving out is not a selection on the outcome:
the flag looks at other processes, not at the run's own speed, so the clean pairs keep
the test's size (`benchmarks/bench_stats.py` measures it with bursty contention in 10–30 %
of runs). When fewer than `MIN_CLEAN` clean pairs (or clean runs a side) remain, the
verdict is "the host was too busy to judge": no marker anywhere. `MIN_CLEAN` is
`paired.MIN_PAIRS`, the fewest pairs any marker needs: below it the clean data could not
give one, and the flagged data must not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from orchestrator.store.runstore import Run
from orchestrator.verdict.model import Direction, TooBusy, Verdict
from orchestrator.verdict.paired import MIN_PAIRS

#: Clean pairs (paired) or clean runs on each side (unpaired) a verdict needs.
MIN_CLEAN = MIN_PAIRS


@dataclass(frozen=True)
class Screen:
    """Which pairs (or runs) a verdict may use, which it leaves out, and whether any."""

    kept: list[int]
    left_out: list[int]
    #: None: a verdict on `kept`; else why there is none (the host was too busy).
    too_busy: TooBusy | None = None


def screen_pairs(flags: Sequence[bool]) -> Screen:
    """`flags[i]`: a run of pair i shared the machine. Clean pairs are kept."""
    kept = [i for i, f in enumerate(flags) if not f]
    left = [i for i, f in enumerate(flags) if f]
    why = None
    if left and len(kept) < MIN_CLEAN:
        why = TooBusy(
            paired=True, left_out=len(left), total=len(flags), clean_baseline=len(kept),
            clean_candidate=len(kept), needed=MIN_CLEAN,
        )  # fmt: skip
    return Screen(kept, left, why)


def screen_runs(base_flags: Sequence[bool], cand_flags: Sequence[bool]) -> tuple[Screen, Screen]:
    """Unpaired groups: each side keeps its clean runs; too busy when a side has too few."""
    sides = [
        Screen([i for i, f in enumerate(fl) if not f], [i for i, f in enumerate(fl) if f])
        for fl in (base_flags, cand_flags)
    ]
    left = sum(len(s.left_out) for s in sides)
    if left and min(len(s.kept) for s in sides) < MIN_CLEAN:
        why = TooBusy(paired=False, left_out=left, total=len(base_flags) + len(cand_flags),
                      clean_baseline=len(sides[0].kept), clean_candidate=len(sides[1].kept),
                      needed=MIN_CLEAN)  # fmt: skip
        sides = [Screen(s.kept, s.left_out, why) for s in sides]
    return sides[0], sides[1]


def no_verdict(verdict: Verdict, why: TooBusy) -> Verdict:
    """The verdict on all the runs, shown for information: no test, no marker, and why."""
    return verdict.replaced(
        significant=False, improved=None, direction=Direction.NONE, testable=False,
        p_value=None, test_method=None, ci_low=None, ci_high=None, mdc_pct=None, too_busy=why,
    )  # fmt: skip


def shared(run: Run) -> bool:
    """The noise sampler flagged this run (a run recorded before it existed is not)."""
    return run.result.noise is not None and run.result.noise.shared


@dataclass
class RunScreen:
    """The runs a comparison may judge, the ones it left out (named), and whether any."""

    base: list[Run]
    cand: list[Run]
    left_out: list[str] = field(default_factory=list)
    too_busy: TooBusy | None = None


def screen(base: list[Run], cand: list[Run], *, paired: bool) -> RunScreen:
    """Leave out the pairs (paired: `base[i]` ran with `cand[i]`) or runs that shared the
    machine; with too few clean ones left, keep them all (for the Δ) and say why."""
    if paired:
        s = screen_pairs([shared(b) or shared(c) for b, c in zip(base, cand, strict=True)])
        left = [f"{base[i].path.name} + {cand[i].path.name}" for i in s.left_out]
        if s.too_busy:
            return RunScreen(base, cand, left, s.too_busy)
        return RunScreen([base[i] for i in s.kept], [cand[i] for i in s.kept], left)
    sb, sc = screen_runs([shared(r) for r in base], [shared(r) for r in cand])
    left = [base[i].path.name for i in sb.left_out] + [cand[i].path.name for i in sc.left_out]
    if sb.too_busy:
        return RunScreen(base, cand, left, sb.too_busy)
    return RunScreen([base[i] for i in sb.kept], [cand[i] for i in sc.kept], left)
