"""Turn a comparison into what people read: a terminal table, markdown, a webhook text."""

from __future__ import annotations

from typing import Literal

from tabulate import tabulate

from orchestrator.compare import Comparison
from orchestrator.stats import Verdict

Format = Literal["simple", "markdown"]


def _spread(v: Verdict, side: str) -> str:
    low, high = v.baseline_spread if side == "baseline" else v.candidate_spread
    return f"{low:.4g}–{high:.4g}" if low != high else "–"


def _p(v: Verdict) -> str:
    if v.p_value is None:
        return "n/a"
    return f"{v.p_value:.3g}" + ("" if v.testable else " (untestable)")


def category_rows(cmp: Comparison) -> list[list[str]]:
    rows = []
    for name, v in cmp.categories.items():
        rows.append([
            f"{v.marker} {name}",
            f"{v.baseline_median:.2f}",
            f"{v.candidate_median:.2f}",
            f"{v.delta_pct:+.2f}%",
            _spread(v, "baseline"),
            _spread(v, "candidate"),
            _p(v),
        ])  # fmt: skip
    return rows


def render(cmp: Comparison, fmt: Format = "simple") -> str:
    v = cmp.ns_per_day
    lines = [cmp.headline, cmp.stats_line]
    head = ["category", "baseline ms", "this ms", "Δ%", "baseline range", "this range", "p"]
    ns_row = [[f"{v.marker} ns/day", f"{v.baseline_median:.2f}", f"{v.candidate_median:.2f}",
               f"{v.delta_pct:+.2f}%", _spread(v, "baseline"), _spread(v, "candidate"), _p(v)]]  # fmt: skip
    table = tabulate(
        ns_row + category_rows(cmp),
        headers=head,
        tablefmt="github" if fmt == "markdown" else "simple",
    )
    lines += ["", table, ""]
    if not cmp.comparable and cmp.comparable_note:
        lines.append("⚠ " + cmp.comparable_note)
    if cmp.suspect and cmp.suspect_note:
        lines.append("⚠ " + cmp.suspect_note)
    notes = {v.note for v in cmp.categories.values() if not v.testable}
    lines += [f"note: {n}" for n in sorted(notes)]
    lines.append(f"baseline: {', '.join(cmp.baseline)}")
    lines.append(f"this:     {', '.join(cmp.candidate)}")
    return "\n".join(lines).rstrip() + "\n"


def webhook_text(cmp: Comparison) -> str:
    """Discord-sized: headline plus the per-category lines of the field report's format."""
    lines = [cmp.headline]
    for name, v in cmp.categories.items():
        lines.append(
            f"{v.marker} {name}: {v.candidate_median:.2f} ms ({v.delta_pct:+.2f}% vs {v.baseline_median:.2f})"
        )
    lines.append(cmp.stats_line)
    if not cmp.comparable and cmp.comparable_note:
        lines.append("⚠ " + cmp.comparable_note)
    return "\n".join(lines)
