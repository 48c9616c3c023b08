"""When `--repeats auto` may stop early: the verdict is settled, one way or the other.

`bench` looks at its pairs every `AUTO_STEP` (2) pairs from `AUTO_EARLY` (4, the fewest
pairs a marker needs rounded up to even: ABBA order cancels a drift only over an even
number of pairs) and stops as soon as the verdict is settled:

* **no marker can fire**: the (1 - alpha) interval of the ratio, the one the verdict
  prints, lies within ± the threshold. Every change the data allow is smaller than the
  threshold, so the estimate is too, and a marker needs a change beyond it. This stop
  never gives a marker, so it cannot raise the false-alarm rate; it can only cost power
  where the true change lies just beyond the threshold (simulated: see below).
* **the marker is settled**: the interval at the interim level `interim_alpha(alpha)`
  lies wholly beyond the threshold on one side. That interval is wider than the final
  one, so the verdict at alpha gives the marker too.

The second stop is the efficacy boundary of Haybittle (1971, *Br. J. Radiol.* 44:793) and
Peto et al. (1976, *Br. J. Cancer* 34:585): interim looks at a small fixed level, the final
look at the nominal one. Alpha-spending boundaries (Pocock 1977; O'Brien & Fleming 1979;
Lan & DeMets 1983, *Biometrika* 70:659) would give the interim looks more and take it
from the final one, whose interval and p are the ones the report prints; with the
Haybittle–Peto boundary the final test stays the plain paired t test at alpha, and at the
first look the two boundaries nearly agree (O'Brien–Fleming spends 0.0012 at 40 % of the
pairs, Haybittle–Peto 0.001). The price of keeping the final look as it is: each interim
look can add a false alarm the final look would not have given, at most its level
(alpha / 50 each, so 0.3 % at alpha 5 % over the three interim looks of 4–10 pairs by
Bonferroni's bound, and far less in fact, since a change that crosses so strict a
boundary rarely vanishes by the final look). The simulation counts those trials
(`benchmarks/bench_sequential.py`: "not before").

With the width rule of `RepeatPlan` still in force from its `first` look, every stop
of the rule before is a stop here too: on the same pairs (all clean) the rule runs at
most the pairs the rule before ran, and gives a marker only where that rule did or the
interim boundary was crossed. The t quantiles at 4 pairs are wide (3.18 at 95 %, 12.9 at
99.9 %), so the early look settles a verdict where the noise is small against the
threshold: on a GPU, not on a busy CPU.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.verdict.stats import variance
from orchestrator.verdict.student import t_ppf

#: The first look of `--repeats auto`: 3 pairs (the fewest for a marker) rounded up to even.
AUTO_EARLY = 4
#: The interim level is alpha over this: Haybittle–Peto's 0.001 at alpha 0.05.
INTERIM_SHARE = 50


def interim_alpha(alpha: float) -> float:
    """The level of an interim look's interval: alpha / `INTERIM_SHARE`."""
    return alpha / INTERIM_SHARE


@dataclass(frozen=True)
class Stop:
    """A verdict settled before the plan's last look, and the interval that settled it
    (`report.repeats` says it on the console)."""

    marker: bool  # True: the marker is settled; False: no marker can fire
    #: The interval's level (its alpha) and its ends, on the ratio's scale.
    level: float
    low: float
    high: float
    threshold_pct: float
    #: With a marker: True when the interval lies above +threshold, False below it.
    above: bool = False


def _limits(threshold_pct: float) -> tuple[float, float]:
    """The threshold on the log scale, below and above: log(1 - t) and log(1 + t)."""
    t = threshold_pct / 100
    return (math.log1p(-t) if t < 1 else -math.inf), math.log1p(t)


def interval(d: Sequence[float], level_alpha: float) -> tuple[float, float]:
    """The (1 - level_alpha) t interval of the mean log ratio (n >= 2, some spread)."""
    n = len(d)
    mean, se = statistics.fmean(d), math.sqrt(variance(d) / n)
    q = t_ppf(1 - level_alpha / 2, n - 1)
    return mean - q * se, mean + q * se


def settle(
    d: Sequence[float], *, threshold_pct: float, alpha: float, interim: float | None = None
) -> Stop | None:
    """Whether the log ratios `d` (n >= 2, some spread) settle the verdict (None: not yet).

    `interim` is the interim level (default `interim_alpha(alpha)`); a larger one is
    the naive rule that the simulation shows failing.
    """
    down, up = _limits(threshold_pct)
    low, high = interval(d, alpha)
    if down < low and high < up:
        return Stop(False, alpha, math.exp(low), math.exp(high), threshold_pct)
    level = interim_alpha(alpha) if interim is None else interim
    low, high = interval(d, level)
    if low > up or high < down:
        return Stop(True, level, math.exp(low), math.exp(high), threshold_pct, above=low > up)
    return None
