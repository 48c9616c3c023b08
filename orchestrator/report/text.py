"""Turn a comparison into what people read: a terminal table, markdown, a webhook text."""

from __future__ import annotations

from typing import Literal

from tabulate import tabulate

from orchestrator.codegen.table import summary_lines
from orchestrator.codegen.targets import targets_line, verdict_note
from orchestrator.parsers.microbench import parse_bytes
from orchestrator.parsers.rocprof_sys import SystemTrace
from orchestrator.report import instructions, words
from orchestrator.report.counters import render_comparison
from orchestrator.store.records import RunResult
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.history import Bisect, Series
from orchestrator.verdict.model import Direction, Verdict

Format = Literal["simple", "markdown"]
HEADERS = ["", "baseline", "this", "Δ%", "CI of Δ", "detectable", "p", "baseline range",
           "this range"]  # fmt: skip
#: Runs that shared the machine named one a line, then "and N more".
NOISE_LINES = 6
#: Kernel names are cut to this many characters in the table.
KERNEL_NAME = 48


def _range(low: float, high: float) -> str:
    return f"{low:.4g}–{high:.4g}" if low != high else f"{low:.4g} (all)"


def _ci(v: Verdict) -> str:
    if v.ci_low is None or v.ci_high is None:
        return "n/a"
    return f"{100 * (v.ci_low - 1):+.1f}…{100 * (v.ci_high - 1):+.1f}%"


def row(label: str, v: Verdict, *, marked: bool = True) -> list[str]:
    """A verdict's cells under HEADERS; `marked`: the label starts with its marker."""
    p = "n/a" if v.p_value is None else f"{v.p_value:.3g}" + ("" if v.testable else " (untestable)")
    detectable = "none" if v.p_value is not None and not v.testable else "n/a"
    return [
        f"{words.marker(v)} {label}" if marked else label,
        f"{v.baseline_median:.2f}",
        f"{v.candidate_median:.2f}",
        f"{v.delta_pct:+.2f}%",
        _ci(v),
        f"±{v.mdc_pct:.1f}%" if v.mdc_pct is not None else detectable,
        p,
        _range(*v.baseline_spread),
        _range(*v.candidate_spread),
    ]


def _short(name: str) -> str:
    return name if len(name) <= KERNEL_NAME else name[: KERNEL_NAME - 1] + "…"


def _category(cmp: Comparison, name: str) -> str:
    """The category's row label; `(code unchanged)` when both builds compiled every one of
    its kernels byte-identically, so a timing change there is not the compiler's doing."""
    same = cmp.codegen is not None and name in cmp.codegen.categories
    return f"{name} (ms)" + (" (code unchanged)" if same and _unchanged(cmp, name) else "")


def _unchanged(cmp: Comparison, name: str) -> bool:
    """Both builds compiled `name`'s kernels identically, and the timings are theirs."""
    if cmp.codegen is None or (cmp.cpu_only and cmp.codegen.gpu):
        return False
    return cmp.codegen.code_unchanged(name)


def codegen_lines(cmp: Comparison) -> list[str]:
    """The codegen summary printed beside the timing verdict."""
    if cmp.codegen is None:
        return []
    note = cmp.codegen.code_object_note()
    lines = [f"warning: {note}"] if note else []  # first: it may explain every change below
    per_target = targets_line(cmp.codegen)  # several targets: the verdict is one target's
    where = f" on {verdict_note(cmp.codegen)}" if per_target else ""
    lines.append(f"codegen (kernels changed / unchanged / only in one build){where}:")
    lines += [f"  {line}" for line in summary_lines(cmp.codegen)]
    if per_target:
        lines.append(f"  per target: {per_target}")
    if cmp.cpu_only and cmp.codegen.gpu:
        lines.append(
            "note: the runs were on the host CPU only (--cpu-only): the timings above are "
            "of host code, which both builds compiled alike; the GPU kernels above did not run"
        )
    for name, verdict in cmp.categories.items():
        if verdict.significant and _unchanged(cmp, name):
            lines.append(
                f"note: {name} timing moved but its code is unchanged in both builds: "
                "not caused by codegen (noise, inputs, or code outside the compiler's reach)"
            )
    return lines


def top_functions_text(trace: SystemTrace, top: int = 15) -> str:
    """rocprof-sys's wall-clock profile as a table: the functions that took longest."""
    rows = [
        [_short(f.name), f.thread if f.thread is not None else "", f.depth, f.count,
         f"{f.total_s:.4g}", "" if f.self_s is None else f"{f.self_s:.4g}"]
        for f in trace.functions[:top]
    ]  # fmt: skip
    headers = ["function", "thread", "depth", "calls", "total s", "self s"]
    title = f"top {len(rows)} of {len(trace.functions)} functions by wall-clock time"
    if trace.wall_clock_s is not None:
        title += f" (the program: {trace.wall_clock_s:.4g} s)"
    return f"{title}\n{tabulate(rows, headers=headers)}\n"


def microbench_run_text(result: RunResult) -> str:
    """A finished microbenchmark run as a person reads it: per-size table, single metrics, facts."""
    metrics = result.metrics or {}
    sized: dict[str, dict[str, float]] = {}
    single = []
    for name, m in metrics.items():
        family, _, size = name.partition("@")
        if size:
            sized.setdefault(size, {})[family] = m.value
        else:
            single.append([name, f"{m.value:.4g}", m.unit, m.better])
    lines = [f"{result.run_id}: {result.system} on {result.build}"]
    if sized:
        families = sorted({f for row in sized.values() for f in row})
        unit = next(m.unit for n, m in metrics.items() if "@" in n)
        table = [
            [size, *(f"{row.get(f, float('nan')):.4g}" for f in families)]
            for size, row in sorted(sized.items(), key=lambda kv: parse_bytes(kv[0]) or 0)
        ]
        lines += ["", tabulate(table, headers=["bytes", *(f"{f} ({unit})" for f in families)])]
    lines += ["", tabulate(single, headers=["metric", "value", "unit", "better"]), ""]
    lines += [f"{key}: {value}" for key, value in result.facts.items()]
    return "\n".join(lines).rstrip() + "\n"


def verdicts(cmp: Comparison) -> list[tuple[str, Verdict]]:
    """The verdict table's labels and verdicts: headline, categories, metrics (text and
    HTML reports alike)."""
    headline = cmp.headline_name
    if headline != cmp.headline_unit:
        headline += f" ({cmp.headline_unit})"
    found = [(headline, cmp.headline)]
    found += [(_category(cmp, name), v) for name, v in cmp.categories.items()]
    return found + list(cmp.metrics.items())


def verdict_rows(cmp: Comparison) -> list[list[str]]:
    """The table under HEADERS: headline, categories, metrics."""
    return [row(label, v) for label, v in verdicts(cmp)]


CONTROLLED_HEADERS = ["changed", "raw Δ%", "raw CI", "raw p", "controlled Δ%",
                      "controlled CI", "controlled p"]  # fmt: skip


def _p(v: Verdict) -> str:
    return "n/a" if v.p_value is None else f"{v.p_value:.3g}"


def controlled_rows(cmp: Comparison) -> list[list[str]]:
    """Each changed kernel (CPU: category): raw, then against the unchanged ones."""
    rows = []
    for name, c in cmp.controlled.items():
        raw, ctl = c.raw, c.controlled
        rows.append([
            _short(name), f"{words.marker(raw)} {raw.delta_pct:+.2f}%", _ci(raw), _p(raw),
            f"{words.marker(ctl)} {ctl.delta_pct:+.2f}%" if ctl else "no control",
            _ci(ctl) if ctl else "", _p(ctl) if ctl else "",
        ])  # fmt: skip
    return rows


def controlled_lines(cmp: Comparison, style: str) -> list[str]:
    """The changed kernels' table, raw and controlled, and what the control was."""
    if not cmp.controlled:
        return []
    first = next(iter(cmp.controlled.values()))
    what = "kernels" if cmp.codegen is None or cmp.codegen.gpu else "categories"
    return [
        f"changed {what}, raw and against the unchanged {what} of the same runs "
        f"(control: {words.control(first)}):",
        tabulate(controlled_rows(cmp), headers=CONTROLLED_HEADERS, tablefmt=style),
        "",
    ]


def kernel_verdicts(cmp: Comparison) -> list[tuple[str, Verdict]]:
    """The kernel table's labels (names cut to KERNEL_NAME) and verdicts."""
    return [(f"{_short(name)} (µs)", v) for name, v in cmp.kernels.items()]


def kernel_rows(cmp: Comparison) -> list[list[str]]:
    """The kernel table under HEADERS."""
    return [row(label, v) for label, v in kernel_verdicts(cmp)]


def render(cmp: Comparison, fmt: Format = "simple") -> str:
    """The full report: headline, statistics, category table, kernel table and every caveat."""
    style = "github" if fmt == "markdown" else "simple"
    rows = verdict_rows(cmp)
    lines = [words.headline_text(cmp), words.stats_line(cmp)]
    noise = words.noise_headline(cmp)
    if noise:
        lines.append("⚠ " + noise + ":")
        lines += [f"  {line}" for line in words.noise_lines(cmp)[:NOISE_LINES]]
        if len(cmp.noise) > NOISE_LINES:
            lines.append(f"  … and {len(cmp.noise) - NOISE_LINES} more")
    lines += ["", tabulate(rows, headers=HEADERS, tablefmt=style), ""]
    if cmp.kernels:
        lines.append(f"top {len(cmp.kernels)} kernels, median call duration in each run:")
        lines += [tabulate(kernel_rows(cmp), headers=HEADERS, tablefmt=style), ""]
    lines += controlled_lines(cmp, style)
    lines += codegen_lines(cmp)
    if cmp.counters is not None:
        lines += [render_comparison(cmp.counters, "github" if fmt == "markdown" else "simple")]
    if cmp.instructions is not None:
        lines += instructions.lines(cmp.instructions, style)
    lines += words.findings(cmp)
    ceiling = words.ceiling_line(cmp)
    lines += [ceiling] if ceiling else []
    lines += ["⚠ " + n for n in (words.comparable_note(cmp), words.suspect_note(cmp)) if n]
    untestable = {words.note(v) for v in [*cmp.categories.values(), *cmp.metrics.values()]
                  if not v.testable}  # fmt: skip
    lines += [f"note: {note}" for note in sorted(untestable)]
    if cmp.unpaired:
        lines.append(f"note: left out, no pair partner: {', '.join(cmp.unpaired)}")
    if cmp.left_out and not cmp.too_busy:
        lines.append(f"note: left out, a run shared the machine: {', '.join(cmp.left_out)}")
    lines.append(f"baseline: {', '.join(cmp.baseline)}")
    lines.append(f"this:     {', '.join(cmp.candidate)}")
    return "\n".join(lines).rstrip() + "\n"


def webhook_text(cmp: Comparison) -> str:
    """Discord-sized: headline plus the per-category lines of the field report's format."""
    lines = [words.headline_text(cmp)]
    for name, v in cmp.categories.items():
        change = f"{v.delta_pct:+.2f}% vs {v.baseline_median:.2f}"
        lines.append(f"{words.marker(v)} {name}: {v.candidate_median:.2f} ms ({change})")
    moved = [f"{words.marker(v)} {_short(k)} {v.delta_pct:+.1f}%" for k, v in cmp.kernels.items()
             if v.direction is not Direction.NONE]  # fmt: skip
    if moved:
        more = f"; and {len(moved) - 3} more" if len(moved) > 3 else ""
        lines.append("kernels: " + "; ".join(moved[:3]) + more)
    lines += [f"{words.marker(v)} {name}: {v.candidate_median:.4g} ({v.delta_pct:+.2f}%)"
              for name, v in cmp.metrics.items() if v.direction is not Direction.NONE]  # fmt: skip
    lines += words.findings(cmp)[-1:]
    lines.append(words.stats_line(cmp))
    lines += ["⚠ " + n for n in (words.comparable_note(cmp), words.suspect_note(cmp)) if n]
    if cmp.too_busy:
        lines.append(f"⚠ no verdict: {words.too_busy(cmp.too_busy)}")
    elif cmp.left_out:
        lines.append(f"⚠ {len(cmp.noise)} of {cmp.runs} runs shared the machine: left out")
    elif cmp.noise:
        lines.append(f"⚠ {len(cmp.noise)} of {cmp.runs} runs shared the machine: not to be trusted")
    return "\n".join(lines)


def history_text(series: Series, fmt: Format = "simple") -> str:
    """A metric over builds, oldest first; change points marked and listed below."""
    better = "higher" if series.higher_is_better else "lower"
    title = (
        f"{series.system}: {series.metric} ({series.unit}, {better} is better), "
        f"{len(series.points)} builds, ordered by {words.ordered_by(series)}"
    )
    rows = []
    for point in series.points:
        change = point.change
        rows.append([
            f"{words.marker(change) if change and point.flagged else '•'} {point.key}",
            (point.commit_date or point.first_run)[:19],
            point.runs,
            f"{point.median:.4g}",
            _range(point.low, point.high),
            f"{change.delta_pct:+.2f}%" if change else "",
            "n/a" if change is None or change.p_value is None else f"{change.p_value:.3g}",
            ", ".join(point.hosts),
        ])  # fmt: skip
    headers = ["build", "date", "runs", "median", "range", "Δ% vs previous", "p", "host"]
    table = tabulate(rows, headers=headers, tablefmt="github" if fmt == "markdown" else "simple")
    found = [
        f"change point at {p.key}: {words.note(p.change)}" for p in series.change_points if p.change
    ]
    return "\n".join([title, "", table, "", *(found or ["no change points"])]) + "\n"


BISECT_HEADERS = ["step", "commit", "verdict", "Δ%", "p", "pairs", "why"]


def bisect_rows(found: Bisect) -> list[list[object]]:
    """One row a step under BISECT_HEADERS (text and HTML reports alike)."""
    return [
        [s.step, s.commit[:12], s.verdict,
         "" if s.delta_pct is None else f"{s.delta_pct:+.2f}%",
         "n/a" if s.p_value is None else f"{s.p_value:.3g}", s.pairs, s.note]
        for s in found.steps
    ]  # fmt: skip


def bisect_text(found: Bisect, fmt: Format = "simple") -> str:
    """Each step with its verdict, then the first bad commit (or why there is none)."""
    style = "github" if fmt == "markdown" else "simple"
    table = tabulate(bisect_rows(found), headers=BISECT_HEADERS, tablefmt=style)
    end = (
        f"first bad commit: {found.first_bad}"
        if found.first_bad
        else f"no first bad commit: {found.outcome}"
    )
    title = (
        f"{found.bisect_id}: {found.metric} on {found.system}, good {found.good[:12]}, "
        f"bad {found.bad[:12]}"
    )
    return "\n".join([title, "", table, "", end]) + "\n"
