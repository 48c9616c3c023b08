"""`report --html`: one self-contained page of trends, the latest verdict and the bisects.

The page is mailed around, attached to CI runs and opened on machines without network
access, so it carries everything it needs: plotly.js is inlined once in <head>, and no
script, style sheet or font is fetched from anywhere. The output depends only on the
inputs (the chart ids are numbered, never random), so two reports of one database diff
cleanly.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from orchestrator.codegen.html import CSS as CODEGEN_CSS
from orchestrator.codegen.html import SCRIPT as CODEGEN_SCRIPT
from orchestrator.codegen.html import BenchCodegen, section
from orchestrator.report import words
from orchestrator.report.text import (
    BISECT_HEADERS,
    HEADERS,
    bisect_rows,
    codegen_lines,
    kernel_verdicts,
    row,
    verdicts,
)
from orchestrator.store.layout import group_of
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.history import Bisect, Point, Series
from orchestrator.verdict.model import Direction, Verdict

#: Each chart's height in pixels; the width follows the window (`responsive`).
CHART_HEIGHT = 420
MEDIAN_COLOUR = "#1f77b4"
CHANGE_COLOUR = "#d62728"
CONFIG = {"displaylogo": False, "responsive": True}
#: Where MathJax would come from: nowhere (no TeX in these charts, and no network).
PLOTLY_CONFIG = "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
EMPTY = "no finished runs in the database yet"
#: The text report's markers as words: emoji fonts are missing on many CI hosts and servers.
MARKS = {Direction.FASTER: ("better", "▲ better"), Direction.SLOWER: ("worse", "▼ worse")}

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em 2em;
       color: #222; max-width: 1600px; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin-bottom: 0.3em; }
.meta, .note { color: #555; font-size: 0.9em; }
.chart { margin: 0.5em 0 1.5em; border: 1px solid #e4e4e4; border-radius: 4px; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.first-bad td { background: #fde2e1; font-weight: bold; }
.mark { font-weight: bold; margin-right: 0.4em; white-space: nowrap; }
.mark.better { color: #2ca02c; } .mark.worse { color: #d62728; }
.outcome { font-weight: bold; }
.empty { font-style: italic; color: #555; }
"""


def render_html(
    series: Sequence[Series],
    *,
    verdict: Comparison | None = None,
    bisects: Sequence[Bisect] = (),
    codegen: Sequence[BenchCodegen] = (),
    title: str = "gmxbench report",
    generated: str,
) -> str:
    """The whole page; `generated` is passed in (not read from the clock) to keep the
    output a function of the inputs. `codegen`: the benches whose codegen view is drawn."""
    changes = sum(len(s.change_points) for s in series)
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">generated {escape(generated)}; {len(series)} charts, '
        f"{changes} change points, {len(bisects)} bisects</p>",
        "<h2>Trends</h2>",
    ]
    if series:
        body += [_chart(s, n) for n, s in enumerate(series)]
    else:
        body.append(f'<p class="empty" id="no-series">{EMPTY}</p>')
    if verdict is not None:
        body.append(_verdict(verdict))
    changed = section(codegen)
    if changed:
        body.append(changed)
    if bisects:
        body.append("<h2>Bisects</h2>")
        body += [_bisect(b, n) for n, b in enumerate(bisects)]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{CSS}{CODEGEN_CSS if changed else ''}</style>",
        PLOTLY_CONFIG,
        *([CODEGEN_SCRIPT] if changed else []),
        f'<script charset="utf-8">{get_plotlyjs()}</script>',
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
        "",
    ])  # fmt: skip


def _chart(series: Series, n: int) -> str:
    """One system × metric: medians with their range, change points over them."""
    x = [escape(p.key) for p in series.points]  # plotly reads tags in labels; entities are shown
    median = go.Scatter(
        x=x,
        y=[p.median for p in series.points],
        error_y={
            "type": "data", "symmetric": False, "thickness": 1.5, "width": 5,
            "array": [p.high - p.median for p in series.points],
            "arrayminus": [p.median - p.low for p in series.points],
        },
        mode="lines+markers",
        name="median (bars: range of runs)",
        marker={"color": MEDIAN_COLOUR, "size": 8},
        line={"color": MEDIAN_COLOUR, "width": 1.5},
        hovertext=[_hover(series, p) for p in series.points],
        hovertemplate="%{hovertext}<extra></extra>",
    )  # fmt: skip
    fig = go.Figure(median)
    flagged = series.change_points
    if flagged:
        fig.add_trace(go.Scatter(
            x=[escape(p.key) for p in flagged],
            y=[p.median for p in flagged],
            mode="markers",
            name="change point",
            marker={"symbol": "x-thin-open", "size": 22, "color": CHANGE_COLOUR,
                    "line": {"width": 3, "color": CHANGE_COLOUR}},
            hoverinfo="skip",  # the median's hover under it says "change point"
        ))  # fmt: skip
        for p in flagged:  # the step's size over it, readable without hovering
            delta = f"<b>{p.change.delta_pct:+.1f}%</b>" if p.change else ""
            fig.add_annotation(x=escape(p.key), y=p.high, text=delta, arrowhead=2, ax=0, ay=-36,
                               font={"color": CHANGE_COLOUR})  # fmt: skip
    better = "higher" if series.higher_is_better else "lower"
    heading = (
        f"<b>{escape(series.system)} — {escape(series.metric)}</b> ({better} is better)"
        f"<br><sup>ordered by {escape(words.ordered_by(series))}; {len(series.points)} builds, "
        f"{len(flagged)} change points</sup>"
    )
    fig.update_layout(
        title={"text": heading, "x": 0.01, "xanchor": "left"},
        xaxis={"title": {"text": _axis_x(series)}, "type": "category", "tickangle": -30},
        yaxis={"title": {"text": escape(_axis_y(series))}},
        showlegend=True,
        height=CHART_HEIGHT,
        template="plotly_white",
        hovermode="closest",
        margin={"t": 80, "b": 90, "l": 80, "r": 30},
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        font={"size": 13},
    )
    figure: str = fig.to_html(
        full_html=False, include_plotlyjs=False, include_mathjax=False,
        div_id=f"chart-{n}-plot", config=CONFIG,
    )  # fmt: skip
    return (
        f'<div class="chart" id="chart-{n}" data-series-points="{len(series.points)}" '
        f'data-change-points="{len(flagged)}">{figure}</div>'
    )


def _axis_x(series: Series) -> str:
    """What a tick names: the LLVM commit when every point has one, else the build."""
    if all(p.llvm_commit for p in series.points):
        return "LLVM commit"
    return "LLVM commit or build"


def _axis_y(series: Series) -> str:
    return series.unit if series.metric == series.unit else f"{series.metric} ({series.unit})"


def _hover(series: Series, point: Point) -> str:
    """A point's provenance, each field escaped (plotly shows entities, reads tags)."""
    unit = escape(series.unit)

    def listed(name: str, values: Sequence[str]) -> str:
        return f"{name}: {escape(', '.join(values)) or 'n/a'}"

    lines = [
        f"<b>{escape(point.key)}</b>" + (" — <b>change point</b>" if point.flagged else ""),
        f"date: {escape(point.commit_date or 'n/a')}; first run {escape(point.first_run[:19])}",
        f"median {point.median:.4g} {unit}, range {point.low:.4g}–{point.high:.4g} "
        f"({point.runs} runs)",
        listed("builds", point.builds),
        listed("images", point.images),
        listed("GROMACS", point.gromacs_commits),
        listed("hosts", point.hosts),
    ]
    if point.change is not None:
        lines.append(_change(point.change))
    return "<br>".join(lines)


def _change(v: Verdict) -> str:
    """The step from the previous point; the note carries p and the interval."""
    return f"vs previous: {v.delta_pct:+.2f}%: {escape(words.note(v))}"


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, bad_commit: str = "",
    table_id: str = "",
) -> str:  # fmt: skip
    """A plain escaped table; a row whose second cell is `bad_commit` is highlighted."""
    return _rows_table(headers, [(_cell(r[0]), r) for r in rows], bad_commit, table_id)


def _verdict_table(found: Sequence[tuple[str, Verdict]], table_id: str) -> str:
    """The verdicts under HEADERS, each label led by its marker shown as a word."""
    rows = [(_marked(label, v), row(label, v, marked=False)) for label, v in found]
    return _rows_table(HEADERS, rows, "", table_id)


def _rows_table(
    headers: Sequence[str], rows: Sequence[tuple[str, Sequence[object]]], bad_commit: str,
    table_id: str,
) -> str:  # fmt: skip
    """Rows as their first cell (made already) and the rest of their cells."""
    ident = f' id="{escape(table_id)}"' if table_id else ""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    lines = [f"<table{ident}>", f"<thead><tr>{head}</tr></thead>", "<tbody>"]
    for first, cells in rows:
        tds = first + "".join(_cell(c) for c in cells[1:])
        bad = bool(bad_commit) and len(cells) > 1 and str(cells[1]) == bad_commit
        lines.append(f'<tr class="first-bad">{tds}</tr>' if bad else f"<tr>{tds}</tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def _cell(cell: object) -> str:
    css = ' class="num"' if _numeric(cell) else ""
    return f"<td{css}>{escape(str(cell))}</td>"


def _marked(label: str, v: Verdict) -> str:
    """A slowdown as a red "▼ worse" and the label; no marker as the label alone; a
    suspect speed-up as the text report shows it (⚠ and the label)."""
    if v.direction is Direction.NONE:
        return f"<td>{escape(label)}</td>"
    if v.claimed is Direction.NONE:
        return f"<td>{escape(f'{words.marker(v)} {label}')}</td>"
    css, word = MARKS[v.direction]
    return f'<td><span class="mark {css}">{word}</span>{escape(label)}</td>'


def _numeric(cell: object) -> bool:
    """Right-align numbers, percentages and p values, as a person compares them."""
    text = str(cell).lstrip("+-±").rstrip("%")
    return isinstance(cell, int | float) or text.replace(".", "", 1).isdigit()


def _verdict(cmp: Comparison) -> str:
    """The headline, the verdict table and every caveat, as `compare` prints them."""
    parts = [
        "<h2>Latest verdict</h2>",
        f'<p class="outcome" id="verdict-headline">{escape(words.headline_text(cmp))}</p>',
        f'<p class="note">{escape(words.stats_line(cmp))}</p>',
        _verdict_table(verdicts(cmp), "verdict"),
    ]
    if cmp.kernels:
        parts.append(f"<h3>top {len(cmp.kernels)} kernels, median call duration in each run</h3>")
        parts.append(_verdict_table(kernel_verdicts(cmp), "verdict-kernels"))
    ceiling = words.ceiling_line(cmp)
    notes = [*codegen_lines(cmp), *words.findings(cmp), *([ceiling] if ceiling else [])]
    noise = words.noise_headline(cmp)
    if noise:
        notes.append("⚠ " + noise)
    notes += ["⚠ " + n for n in (words.comparable_note(cmp), words.suspect_note(cmp)) if n]
    notes += [f"{side}: {_groups(runs)}" for side, runs in (("baseline", cmp.baseline),
                                                            ("this", cmp.candidate))]  # fmt: skip
    parts += [f'<p class="note">{escape(line)}</p>' for line in notes]
    return "\n".join(parts)


def _bisect(found: Bisect, n: int) -> str:
    """The bounds, each step, and the first bad commit (highlighted) or the outcome."""
    end = (
        f"first bad commit: {found.first_bad}"
        if found.first_bad
        else f"no first bad commit: {found.outcome or 'not finished'}"
    )
    return "\n".join([
        f"<h3>{escape(found.bisect_id)}: {escape(found.metric)} on {escape(found.system)}</h3>",
        f'<p class="note">good {escape(found.good[:12])}, bad {escape(found.bad[:12])}, '
        f"started {escape(found.started[:19])}</p>",
        _table(BISECT_HEADERS, bisect_rows(found), bad_commit=(found.first_bad or "")[:12],
               table_id=f"bisect-{n}"),
        f'<p class="outcome" id="bisect-{n}-end">{escape(end)}</p>',
    ])  # fmt: skip


def _groups(runs: Sequence[str]) -> str:
    """Run names as their groups with counts: `<build>__<system>__<tag> (5 runs)`."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[group_of(run)] = counts.get(group_of(run), 0) + 1
    return ", ".join(f"{g} ({n} run{'s' * (n != 1)})" for g, n in counts.items())
