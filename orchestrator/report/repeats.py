"""`--repeats` in words: the plan `bench` follows, and why a look at the pairs ran more
or stopped. `verdict.paired` and `verdict.sequential` decide with numbers and a reason;
the console's sentences about them are made here."""

from __future__ import annotations

from orchestrator.verdict.paired import Look, Reason, RepeatPlan
from orchestrator.verdict.sequential import Stop


def plan_text(plan: RepeatPlan) -> str:
    """`5 interleaved pairs`, or the adaptive plan's range and when it stops."""
    if not plan.adaptive:
        return f"{plan.most} interleaved pairs"
    until = "the CI of the ratio is within ± the threshold"
    if plan.early is not None:
        until = "the verdict is settled or " + until
    return f"{plan.start} to {plan.most} interleaved pairs (auto: until {until})"


def _pct(level_alpha: float) -> str:
    return f"{100 * (1 - level_alpha):.4g}%"


def stop_text(stop: Stop) -> str:
    """Why the verdict is settled early: the interval, and which side of the threshold."""
    shown = f"the ratio's {_pct(stop.level)} interval {stop.low:.3f}–{stop.high:.3f}"
    if not stop.marker:
        return f"{shown} lies within ±{stop.threshold_pct:g}%: no marker can fire"
    side = "+" if stop.above else "−"
    return f"{shown} lies beyond {side}{stop.threshold_pct:g}%: the marker is settled"


def look_text(look: Look) -> str | None:
    """Why a look ran more pairs or stopped; None where it has no reason to give (the
    first batch, the plan's last pair, or the budget spent)."""
    if look.reason is None:
        return None
    if look.reason is Reason.SETTLED and look.stop is not None:
        return stop_text(look.stop)
    threshold = f"±{look.threshold_pct:g}%"
    if look.reason is Reason.UNSETTLED and look.interval is not None:
        low, high = look.interval
        return f"the ratio's interval {low:.3f}–{high:.3f} does not settle the verdict yet"
    known = f"the ratio is known to ±{look.width_pct:.1f}%"
    if look.reason is Reason.PRECISE:
        return f"{known}, within {threshold}"
    return f"{known}, wider than {threshold}"
