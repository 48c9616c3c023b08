"""Turn a comparison into what people read: a terminal table, markdown, a webhook text."""

from __future__ import annotations

from typing import Literal

from tabulate import tabulate

from orchestrator.results.compare import Comparison
from orchestrator.results.stats import Verdict

Format = Literal["simple", "markdown"]
HEADERS = ["", "baseline", "this", "Δ%", "baseline range", "this range", "p"]


def _range(low: float, high: float) -> str:
    return f"{low:.4g}–{high:.4g}" if low != high else f"{low:.4g} (all)"


def _row(label: str, v: Verdict) -> list[str]:
    p = "n/a" if v.p_value is None else f"{v.p_value:.3g}" + ("" if v.testable else " (untestable)")
    return [
        f"{v.marker} {label}",
        f"{v.baseline_median:.2f}",
        f"{v.candidate_median:.2f}",
        f"{v.delta_pct:+.2f}%",
        _range(*v.baseline_spread),
        _range(*v.candidate_spread),
        p,
    ]


def render(cmp: Comparison, fmt: Format = "simple") -> str:
    rows = [_row("ns/day", cmp.ns_per_day)]
    rows += [_row(f"{name} (ms)", v) for name, v in cmp.categories.items()]
    table = tabulate(rows, headers=HEADERS, tablefmt="github" if fmt == "markdown" else "simple")
    lines = [cmp.headline, cmp.stats_line, "", table, ""]
    if not cmp.comparable and cmp.comparable_note:
        lines.append("⚠ " + cmp.comparable_note)
    if cmp.suspect and cmp.suspect_note:
        lines.append("⚠ " + cmp.suspect_note)
    untestable = {v.note for v in cmp.categories.values() if not v.testable}
    lines += [f"note: {note}" for note in sorted(untestable)]
    lines.append(f"baseline: {', '.join(cmp.baseline)}")
    lines.append(f"this:     {', '.join(cmp.candidate)}")
    return "\n".join(lines).rstrip() + "\n"


def webhook_text(cmp: Comparison) -> str:
    """Discord-sized: headline plus the per-category lines of the field report's format."""
    lines = [cmp.headline]
    for name, v in cmp.categories.items():
        change = f"{v.delta_pct:+.2f}% vs {v.baseline_median:.2f}"
        lines.append(f"{v.marker} {name}: {v.candidate_median:.2f} ms ({change})")
    lines.append(cmp.stats_line)
    for note in (cmp.comparable_note, cmp.suspect_note):
        if note:
            lines.append("⚠ " + note)
    return "\n".join(lines)
