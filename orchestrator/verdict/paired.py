"""The paired design of `bench`: interleaved pairs, a t test on log ratios, adaptive repeats.

`bench` runs baseline and candidate in pairs, in the counterbalanced order ABBA ABBA…
(Cox 1958, *Planning of Experiments*, ch. 2; the "ABBA" design of Box, Hunter & Hunter
2005, §4.3): within pair i the later run is the candidate when i is odd and the baseline
when i is even, so a linear drift of the machine (thermal, page cache, a slowly growing
background load) adds +d to the odd pairs' log ratios and -d to the even ones' and cancels
exactly over every even number of pairs. Both runs of a pair share whatever state the
machine was in, so the pair, not the run, is the unit of replication.

The test is Student's one-sample t on the per-pair log ratios log(candidate / baseline)
(Student 1908; for timings on the log scale, Fleming & Wallace 1986, *CACM* 29:218). Why
not a rank or permutation test on the pairs: the exact sign-flip (Fisher 1935) and
Wilcoxon signed-rank tests cannot give p below 2 / 2^n, i.e. never below 0.05 with 5
pairs or fewer, which is the regime a minutes-long GROMACS run lives in. The t test
gives a marker from 3 pairs on (`MIN_PAIRS`); its assumption (roughly normal log ratios)
is checked where it matters, by simulation through these functions
(`benchmarks/bench_stats.py`: A/A false alarms with drift, with 10 % outlier runs and with
a busy host, and power), not assumed.

Every verdict carries the minimum detectable change: the smallest change that would have
got a *marker* with probability `power` (80 %) at the observed spread, i.e. significant at
`alpha` and beyond the threshold both (`verdict.detectable`; the textbook
(t_{1-alpha/2} + t_{power}) * s / sqrt(n) of Snedecor & Cochran 1989, §6.14 ignores the
threshold and promised ±1.37 % at CV 1 % with 10 pairs, which got a marker in 6.6 % of
trials). A "no change" is thus always "no change larger than X %".

A marker needs at least `MIN_PAIRS` (3) pairs. With 2 the spread rests on one degree of
freedom, the single difference of two log ratios: one slow run of the four both sets the
change and, where it happens to agree with its partner, hides in a spread of almost 0,
and t_{0.975, 1} = 12.7 makes any figure it could state meaningless (±37 % at CV 2 %). A
third pair is the cheapest way to see an odd run at all. Two pairs still show their Δ, p
and interval, for information. And a spread of exactly zero (every pair the same ratio,
e.g. md.log rounding a category to the same milliseconds) is not read as an infinitely
precise shift with p = 0: zero observed variance says the measurement could not resolve
the noise, not that there is none, so the verdict is "no spread observed: untestable"
(spreads below `SPREAD_FLOOR` on the log scale, far under any timer's resolution but
above floating-point rounding of equal ratios, count as zero).

`--repeats auto` (`RepeatPlan`) looks at the pairs every two pairs from 4 and stops once
the verdict is settled (`verdict.sequential`: the interval lies within ± the threshold,
or beyond it at a strict interim level), or from 6 pairs once the (1 - alpha) interval of
the ratio is within ± the threshold, or at a maximum. The width rule looks only at the
interval's width, never at its position, so it does not stop on a lucky difference: for
normal data the mean and the spread are independent and the interval keeps its coverage
to first order (Stein 1945; Chow & Robbins 1965, *Ann. Math. Stat.* 36:457). Stopping on
a small spread still selects a little: its false-alarm rate is measured by the same
simulation, which is why the width rule's first look waits for 6 pairs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Literal

from orchestrator.core.errors import UsageError
from orchestrator.verdict.defaults import ALPHA, POWER, THRESHOLD_PCT
from orchestrator.verdict.detectable import marker_change, median_sd, threshold_limit
from orchestrator.verdict.model import Verdict, direction_of
from orchestrator.verdict.sequential import AUTO_EARLY, Stop, interval, settle
from orchestrator.verdict.stats import iqr, spread, variance
from orchestrator.verdict.student import t_ppf, t_sf2

#: `--repeats auto`: the width rule's first look, the most pairs, and pairs added per look.
#: The width rule's look at 4 pairs stopped on luckily small spreads often enough to raise
#: the A/A rate to 5.2–5.7 % at CV 5 % (simulated); from 6 pairs on it matches the fixed-n
#: test. The settled verdict is looked for from `sequential.AUTO_EARLY` (4) pairs on.
AUTO_FIRST, AUTO_MOST, AUTO_STEP = 6, 10, 2
#: Fewest pairs for a marker (see the module docstring).
MIN_PAIRS = 3
#: A log-ratio spread at or below this is no spread: 1e-9 is a nanosecond in a second, while
#: the log ratios of equal ratios differ by rounding only (~1e-16).
SPREAD_FLOOR = 1e-9


def log_ratios(baseline: Sequence[float], candidate: Sequence[float]) -> list[float]:
    """log(candidate_i / baseline_i) of each pair; values must be positive and finite."""
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError(
            f"log_ratios: need the same number of runs on both sides, got "
            f"{len(baseline)} and {len(candidate)}"
        )
    values = [float(v) for v in [*baseline, *candidate]]
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"log_ratios: values must be positive and finite, got {values}")
    n = len(baseline)
    return [math.log(c / b) for b, c in zip(values[:n], values[n:], strict=True)]


@dataclass(frozen=True)
class PairedTest:
    """The t test on n per-pair log ratios: estimate, p and interval (None: no spread), MDC."""

    n: int
    mean: float  # mean log ratio: exp(mean) is the geometric mean of the pair ratios
    sd: float
    p_value: float | None
    ci_low: float | None  # (1 - alpha) interval of the ratio
    ci_high: float | None
    mdc_pct: float | None  # the change that gets a marker with probability `power`, percent

    @property
    def ratio(self) -> float:
        return math.exp(self.mean)


def paired_t(
    d: Sequence[float], *, alpha: float = ALPHA, power: float = POWER,
    threshold_pct: float = THRESHOLD_PCT,
) -> PairedTest:  # fmt: skip
    """One-sample t test of mean(d) = 0 for n >= 2 log ratios `d`, with its interval and MDC.

    No observed spread (sd <= `SPREAD_FLOOR`) gives no p, no interval and no MDC: nothing
    to measure a change against. The MDC is None below `MIN_PAIRS`, where no marker is given.
    """
    n = len(d)
    if n < 2:
        raise ValueError("paired_t: need at least 2 pairs")
    mean, sd = statistics.fmean(d), math.sqrt(variance(d))
    if sd <= SPREAD_FLOOR:
        return PairedTest(n, mean, sd, None, None, None, None)
    se, df = sd / math.sqrt(n), n - 1
    q = t_ppf(1 - alpha / 2, df)
    mdc = None
    if n >= MIN_PAIRS:
        limit = threshold_limit(threshold_pct)
        typical = median_sd(se, df)
        shift = marker_change(se_test=typical, se_est=typical, df=df, q=q, limit=limit, power=power)
        mdc = 100 * math.expm1(shift)
    return PairedTest(
        n=n,
        mean=mean,
        sd=sd,
        p_value=t_sf2(mean / se, df),
        ci_low=math.exp(mean - q * se),
        ci_high=math.exp(mean + q * se),
        mdc_pct=mdc,
    )


def compare_pairs(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    higher_is_better: bool,
    threshold_pct: float = THRESHOLD_PCT,
    alpha: float = ALPHA,
    power: float = POWER,
) -> Verdict:
    """Compare interleaved pairs of one metric: baseline[i] and candidate[i] ran together.

    The change is the geometric mean of the pair ratios; it is significant when the paired
    t test gives p < alpha (equivalently, its (1 - alpha) interval of the ratio excludes 1)
    from at least `MIN_PAIRS` pairs with some spread; the marker fires only for a
    significant change beyond `threshold_pct`.
    """
    if threshold_pct < 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("compare_pairs: need threshold_pct >= 0, 0 < alpha < 1, 0 < power < 1")
    d = log_ratios(baseline, candidate)
    n = len(d)
    med_b, med_c = statistics.median(baseline), statistics.median(candidate)
    ratio = math.exp(statistics.fmean(d))
    delta_pct = 100 * (ratio - 1)
    better = delta_pct > 0 if higher_is_better else delta_pct < 0
    test = paired_t(d, alpha=alpha, power=power, threshold_pct=threshold_pct) if n >= 2 else None
    testable = test is not None and test.p_value is not None and n >= MIN_PAIRS
    significant = testable and test is not None and (test.p_value or 1.0) < alpha
    return Verdict(
        higher_is_better=higher_is_better,
        threshold_pct=threshold_pct,
        alpha=alpha,
        paired=True,
        n_baseline=n,
        n_candidate=n,
        baseline_median=med_b,
        candidate_median=med_c,
        delta_abs=med_b * (ratio - 1),
        delta_pct=delta_pct,
        baseline_spread=spread(baseline),
        candidate_spread=spread(candidate),
        baseline_iqr=iqr(baseline),
        candidate_iqr=iqr(candidate),
        min_attainable_p=0.0 if testable else 1.0,
        p_value=test.p_value if test else None,
        test_method="paired-t" if test and test.p_value is not None else None,
        ci_low=test.ci_low if test else None,
        ci_high=test.ci_high if test else None,
        mdc_pct=test.mdc_pct if test else None,
        power=power,
        testable=testable,
        significant=significant,
        improved=better if significant else None,
        direction=direction_of(significant, better, delta_pct, threshold_pct),
    )


def baseline_first(pair: int) -> bool:
    """ABBA ABBA…: in pair 1, 3, 5, … the baseline runs first; in 2, 4, 6, … the candidate."""
    return pair % 2 == 1


def ci_halfwidth_pct(
    baseline: Sequence[float], candidate: Sequence[float], *, alpha: float
) -> float:
    """Half the width of the (1 - alpha) interval of the ratio, in percent (inf: one pair)."""
    d = log_ratios(baseline, candidate)
    if len(d) < 2:
        return math.inf
    half = t_ppf(1 - alpha / 2, len(d) - 1) * math.sqrt(variance(d) / len(d))
    return 100 * math.expm1(half)


def ci_ratio(
    baseline: Sequence[float], candidate: Sequence[float], *, alpha: float
) -> tuple[float, float]:
    """The (1 - alpha) interval of the ratio (n >= 2)."""
    d = log_ratios(baseline, candidate)
    low, high = interval(d, alpha)
    return math.exp(low), math.exp(high)


def precise_enough(
    baseline: Sequence[float], candidate: Sequence[float], *, threshold_pct: float, alpha: float
) -> bool:
    """The (1 - alpha) interval of the ratio lies within ± `threshold_pct` of its centre."""
    return ci_halfwidth_pct(baseline, candidate, alpha=alpha) <= threshold_pct


class Reason(StrEnum):
    """Why a look at the pairs decided as it did (`report.repeats` says it in words)."""

    #: The verdict is settled (`Look.stop` says how).
    SETTLED = "settled"
    #: The interval is within ± the threshold, from the width rule's first look on.
    PRECISE = "precise"
    #: Within ± the threshold before the width rule's first look: not settled yet.
    UNSETTLED = "unsettled"
    #: The interval is wider than ± the threshold.
    WIDE = "wide"


@dataclass(frozen=True)
class Look:
    """What a look at the pairs decided: pairs to run next (0: stop) and why (None: the
    first batch, or the plan's last pair); `stop` when the verdict settled early."""

    more: int
    reason: Reason | None = None
    stop: Stop | None = None
    #: The (1 - alpha) interval of the ratio: its half-width in percent, and (unsettled)
    #: its ends; the threshold it was held to.
    width_pct: float | None = None
    interval: tuple[float, float] | None = None
    threshold_pct: float | None = None


@dataclass(frozen=True)
class RepeatPlan:
    """How many interleaved pairs `bench` runs: a fixed number, or adaptive between two."""

    first: int
    most: int
    step: int = AUTO_STEP
    #: From this many pairs on, a settled verdict stops (`verdict.sequential`); None: never.
    early: int | None = None
    #: The interim looks' level (None: `sequential.interim_alpha`); the simulation's naive
    #: rule sets alpha here to show what the strict level prevents.
    interim: float | None = None

    @property
    def start(self) -> int:
        """Pairs before the first look."""
        return self.first if self.early is None else min(self.early, self.first)

    @property
    def adaptive(self) -> bool:
        return self.most > self.start

    def look(
        self, baseline: Sequence[float], candidate: Sequence[float], *, threshold_pct: float,
        alpha: float,
    ) -> Look:  # fmt: skip
        """How many pairs to run next, given the pairs so far, and why."""
        n = len(baseline)
        if n < self.start:
            return Look(self.start - n)
        if n >= self.most:
            return Look(0)
        d = log_ratios(baseline, candidate)
        some_spread = n >= 2 and math.sqrt(variance(d)) > SPREAD_FLOOR
        if self.early is not None and n >= max(self.early, MIN_PAIRS) and some_spread:
            stop = settle(d, threshold_pct=threshold_pct, alpha=alpha, interim=self.interim)
            if stop is not None:
                return Look(0, Reason.SETTLED, stop, threshold_pct=threshold_pct)
        width = ci_halfwidth_pct(baseline, candidate, alpha=alpha)
        more = min(self.step, self.most - n)
        if width > threshold_pct:
            return Look(more, Reason.WIDE, width_pct=width, threshold_pct=threshold_pct)
        if n >= self.first:
            return Look(0, Reason.PRECISE, width_pct=width, threshold_pct=threshold_pct)
        return Look(more, Reason.UNSETTLED, width_pct=width, threshold_pct=threshold_pct,
                    interval=ci_ratio(baseline, candidate, alpha=alpha))  # fmt: skip

    def more(
        self, baseline: Sequence[float], candidate: Sequence[float], *, threshold_pct: float,
        alpha: float,
    ) -> int:  # fmt: skip
        """How many pairs to run next, given the pairs so far (0: stop)."""
        return self.look(baseline, candidate, threshold_pct=threshold_pct, alpha=alpha).more

    def look_clean(
        self, baseline: Sequence[float], candidate: Sequence[float], *, ran: int,
        threshold_pct: float, alpha: float,
    ) -> Look:  # fmt: skip
        """`look`, when the values are the clean pairs only and `ran` pairs ran in all.

        A pair with a run that shared the machine (`verdict.busy`) does not count: it is
        measured again, up to `most` such extra pairs, so `bench` runs at most 2 * `most`
        pairs however busy the host is; past the budget the comparison says how many
        clean pairs there are, or that the host was too busy to judge.
        """
        got = self.look(baseline, candidate, threshold_pct=threshold_pct, alpha=alpha)
        more = max(0, min(got.more, 2 * self.most - ran))
        return replace(got, more=more, reason=got.reason if more or not got.more else None)

    def more_clean(
        self, baseline: Sequence[float], candidate: Sequence[float], *, ran: int,
        threshold_pct: float, alpha: float,
    ) -> int:  # fmt: skip
        """`look_clean`'s pairs to run next (0: stop)."""
        return self.look_clean(baseline, candidate, ran=ran, threshold_pct=threshold_pct,
                               alpha=alpha).more  # fmt: skip


def repeat_plan(value: int | str) -> RepeatPlan:
    """`--repeats N` (N pairs), `auto` or `auto:MAX` (adaptive, at most MAX pairs)."""
    text = str(value).strip().lower()
    problem = (
        f"--repeats {value!r} is not understood: give a number of interleaved pairs (1 or "
        f"more), `auto` ({AUTO_EARLY} pairs, then {AUTO_STEP} more at a time until the "
        f"verdict is settled or the interval is within ± the threshold, at most {AUTO_MOST}) "
        f"or `auto:MAX` (the same, at most MAX pairs, MAX >= {AUTO_FIRST})."
    )
    mode: Literal["auto", "fixed"] = "auto" if text.startswith("auto") else "fixed"
    try:
        if mode == "fixed":
            n = int(text)
            if n < 1:
                raise ValueError
            return RepeatPlan(n, n)
        most = int(text.removeprefix("auto").removeprefix(":") or AUTO_MOST)
    except ValueError:
        raise UsageError(problem) from None
    if most < AUTO_FIRST:
        raise UsageError(problem)
    return RepeatPlan(AUTO_FIRST, most, early=AUTO_EARLY)
