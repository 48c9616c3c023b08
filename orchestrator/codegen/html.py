"""The codegen view of `report --html`: what a compiler change did to each kernel's code,
beside what it did to the kernel's time.

One table per bench: the changed kernels, most important first (`KernelDelta.sort_key`),
with their instruction, register, spill and occupancy deltas next to the kernel's time
ratio and its interval (and the controlled ratio, judged against the unchanged kernels of
the same runs, when the comparison has one). The unchanged kernels follow, greyed: those
that were timed are the control, the rest are counted per category. A click on a changed
kernel opens its code diff, which `bench` kept beside its runs (`codegen.asm.AsmDiffs`)
because the images that hold the code may be gone when the report is made. Like the rest
of the page, it fetches nothing: the diffs are in the page and the script is inline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from orchestrator.codegen.asm import AsmDiffs, KernelAsm
from orchestrator.codegen.diff import (
    CategoryDiff,
    CodegenDiff,
    KernelDelta,
    Pair,
    short_name,
)
from orchestrator.codegen.table import headers as vendor_headers
from orchestrator.codegen.targets import verdict_note
from orchestrator.parsers.categories import base_name, strip_kernel_suffix
from orchestrator.report import words
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.controlled import Controlled
from orchestrator.verdict.model import Direction, Verdict

NOT_KEPT = (
    "the assembly was not kept for this bench (made before `bench` saved code diffs, or "
    "the images could not be probed): `gmxbench codegen diff <baseline> <candidate> "
    "--kernel REGEX --asm` prints it while both images exist"
)

CSS = """
table.codegen { font-size: 0.85em; }
table.codegen td.kernel { font-family: ui-monospace, monospace; white-space: nowrap; }
table.codegen td.num { white-space: nowrap; }
table.codegen tr.changed.has-asm { cursor: pointer; }
table.codegen tr.changed.has-asm:hover td, table.codegen tr.changed.open td {
  background: #eef4fb; }
table.codegen tr.unchanged td { color: #999; background: #fafafa; }
table.targets { font-size: 0.85em; margin-bottom: 0.6em; }
table.targets tr.timed td { font-weight: bold; }
table.codegen tr.asm-row td { background: #fcfcfc; padding: 0; }
pre.asm { margin: 0; padding: 0.5em 0.8em; max-height: 32em; overflow: auto;
          font-size: 0.85em; line-height: 1.35; }
pre.asm .add { color: #116611; background: #e6ffec; display: block; }
pre.asm .del { color: #a31515; background: #ffebe9; display: block; }
pre.asm .hunk { color: #6f42c1; display: block; }
.worse-cell { color: #d62728; font-weight: bold; }
.better-cell { color: #2ca02c; font-weight: bold; }
"""

#: Toggles a changed kernel's code diff: a click, or Enter/Space on the focused row.
SCRIPT = """<script>
document.addEventListener('DOMContentLoaded', function () {
  function toggle(row) {
    var target = document.getElementById(row.dataset.asm);
    if (!target) { return; }
    target.hidden = !target.hidden;
    row.classList.toggle('open', !target.hidden);
    row.setAttribute('aria-expanded', String(!target.hidden));
  }
  document.querySelectorAll('tr.has-asm').forEach(function (row) {
    row.addEventListener('click', function () { toggle(row); });
    row.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(row); }
    });
  });
});
</script>"""

HEADERS = ["kernel", "category", "instructions", "Δ instr", "VGPR", "SGPR", "spills",
           "occupancy", "note", "time ratio", "interval"]  # fmt: skip
CONTROLLED = ["controlled ratio", "controlled interval"]


@dataclass(frozen=True)
class BenchCodegen:
    """One bench as the view draws it: its comparison (with `codegen` set) and the code
    diffs `bench` kept (None: an older bench, or none could be had)."""

    comparison: Comparison
    asm: AsmDiffs | None = None


def section(views: Sequence[BenchCodegen]) -> str:
    """The whole codegen part of the page; empty when no bench has a codegen diff."""
    shown = [v for v in views if v.comparison.codegen is not None]
    if not shown:
        return ""
    return "\n".join(["<h2>Codegen</h2>", *(_view(v, n) for n, v in enumerate(shown))])


def timed(delta: KernelDelta, names: Sequence[str]) -> str | None:
    """The trace's name of a changed kernel, when it was timed: the profiler's spelling
    (mangled with `.kd`, or demangled) equal to the codegen's, spaces aside."""
    wanted = {_plain(n) for n in (delta.key.split("@", 1)[0], delta.demangled) if n}
    return next((name for name in names if _plain(name) in wanted), None)


def _plain(name: str) -> str:
    text = strip_kernel_suffix(name)
    return "".join(text.split())


def _view(view: BenchCodegen, n: int) -> str:
    cmp, asm = view.comparison, view.asm
    d = cmp.codegen
    assert d is not None
    ctl = cmp.controlled  # keyed like `kernels` (CPU: like `categories`)
    headers = vendor_headers(HEADERS, d.arch) + (CONTROLLED if ctl else [])
    kept = {k.key: k for k in asm.kernels} if asm is not None else {}
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    rows: list[str] = []
    matched: set[str] = set()
    for i, delta in enumerate(d.changed):
        name = timed(delta, list(cmp.kernels))
        if name is not None:
            matched.add(name)
        rows += _changed(delta, cmp, ctl, name, kept, f"asm-{n}-{i}", len(headers))
    measured = [k for k in cmp.kernels if k not in matched]
    rows += [_unchanged_timed(name, cmp, ctl, d) for name in measured]
    rows += [_unchanged_category(c, d, len(headers)) for c in d.categories.values()
             if c.unchanged or c.only_baseline or c.only_candidate]  # fmt: skip
    notes = [f"{len(d.changed)} kernels changed; unchanged ones greyed"]
    if d.changed and asm is not None:
        notes[0] += "; click a changed kernel for its code diff"
    if cmp.kernels:
        notes.append(
            f"time ratio: {d.candidate} / {d.baseline}, median call duration in each run; "
            f"interval: its "
            f"{1 - cmp.headline.alpha:.0%} confidence interval"
            + ("; controlled: against the unchanged kernels of the same runs" if ctl else "")
        )
    if asm is None and d.changed:
        notes.append(NOT_KEPT)
    elif asm is not None and asm.left_out:
        notes.append(f"code diffs kept for the first {len(asm.kernels)} changed kernels; "
                     f"{len(asm.left_out)} left out (beyond the limit)")  # fmt: skip
    if len(d.targets) > 1:
        notes.insert(0, f"kernels of {verdict_note(d)}, whose code the timings are; the "
                        "other targets' code runs on other GPUs (table above)")  # fmt: skip
    if (warning := d.code_object_note()) is not None:
        notes.insert(0, "⚠ " + warning)
    if cmp.cpu_only and d.gpu:
        notes.append("the runs were on the host CPU only (--cpu-only): no GPU kernel was timed")
    return "\n".join([
        f'<h3 id="codegen-{n}-title">{escape(cmp.label)} on {escape(cmp.system)}: '
        f"{escape(d.baseline)} → {escape(d.candidate)}</h3>",
        *(f'<p class="note">{escape(note)}</p>' for note in notes[:1]),
        *_targets(d, n),
        *(f'<p class="note">{escape(note)}</p>' for note in notes[1:]),
        f'<table class="codegen" id="codegen-{n}" data-changed="{len(d.changed)}" '
        f'data-asm-kept="{len(kept)}">',
        f"<thead><tr>{head}</tr></thead>",
        "<tbody>",
        *rows,
        "</tbody>",
        "</table>",
    ])  # fmt: skip


TARGET_HEADERS = ["target", "kernels changed", "kernels", "lower occupancy", "more spills",
                  "timings"]  # fmt: skip


def _targets(d: CodegenDiff, n: int) -> list[str]:
    """A multi-target build's targets, one row each, the timed one first and marked."""
    if len(d.targets) < 2:
        return []
    head = "".join(f"<th>{escape(h)}</th>" for h in TARGET_HEADERS)
    rows = []
    for t in sorted(d.targets, key=lambda t: t.arch != d.arch):
        mine = t.arch == d.arch
        both = t.in_baseline and t.in_candidate
        changed = (
            str(t.changed) if both else f"only in {d.baseline if t.in_baseline else d.candidate}"
        )
        why = ("this host's GPU" if d.host else "primary target") if mine else "not timed here"
        numbers = [str(t.total), str(t.occupancy_drops), str(t.more_spills)]
        cells = [_td(t.arch), _td(changed, "num"), *(_td(x, "num") for x in numbers), _td(why)]
        css = "target timed" if mine else "target"
        rows.append(f'<tr class="{css}" data-arch="{escape(t.arch)}">{"".join(cells)}</tr>')
    return [f'<table class="targets" id="targets-{n}">', f"<thead><tr>{head}</tr></thead>",
            "<tbody>", *rows, "</tbody>", "</table>"]  # fmt: skip


def _changed(
    delta: KernelDelta, cmp: Comparison, ctl: Mapping[str, Controlled], name: str | None,
    kept: Mapping[str, KernelAsm], ident: str, width: int,
) -> list[str]:  # fmt: skip
    """A changed kernel's row, and the hidden row under it holding its code diff."""
    base_instr, cand_instr = delta.instructions
    pct = f"{100 * (cand_instr or 0) / base_instr - 100:+.1f}%" if base_instr else "n/a"
    change, full = _signed(cand_instr, base_instr), delta.demangled or delta.name
    cells = [
        _td(short_name(full), "kernel", title=full),
        _td(delta.category), _td(_arrow(delta.instructions), "num"),
        _td(f"{change} ({pct})" if change else "0", "num"), _td(_arrow(delta.vgprs), "num"),
        _td(_arrow(delta.sgprs), "num"), _td(_arrow(delta.spills), "num"),
        _td(_arrow(delta.occupancy), "num"), _td(delta.note()),
        *_timing(cmp.kernels.get(name) if name else None, "not timed"),
    ]  # fmt: skip
    if ctl:
        entry = ctl.get(name) if name else ctl.get(delta.category) if not _gpu(cmp) else None
        cells += _against_control(entry)
    code = kept.get(delta.key)
    if code is None:
        return [f'<tr class="changed" data-key="{escape(delta.key)}">{"".join(cells)}</tr>']
    cut = f"\n… cut at {len(code.diff):,} characters" if code.cut else ""
    return [
        f'<tr class="changed has-asm" data-key="{escape(delta.key)}" data-asm="{ident}" '
        f'tabindex="0" aria-expanded="false">{"".join(cells)}</tr>',
        f'<tr class="asm-row" id="{ident}" hidden><td colspan="{width}">'
        f'<pre class="asm">{_diff_html(code.diff + cut)}</pre></td></tr>',
    ]


def _unchanged_timed(
    name: str, cmp: Comparison, ctl: Mapping[str, Controlled], d: CodegenDiff
) -> str:
    """A timed kernel that is not among the changed ones: the control, greyed."""
    same = {base_name(k) for c in d.categories.values() for k in c.unchanged}
    what = "code unchanged" if base_name(name) in same else "not in the fingerprint"
    cells = [_td(short_name(name), "kernel", title=name), _td(""), *[_td("")] * 6, _td(what)]
    cells += _timing(cmp.kernels[name], "")
    if ctl:
        cells += [_td(""), _td("")]  # a control is not judged against itself
    return f'<tr class="unchanged timed">{"".join(cells)}</tr>'


def _unchanged_category(c: CategoryDiff, d: CodegenDiff, width: int) -> str:
    """A category's unchanged kernels, counted by name (template instances together)."""
    counts: dict[str, int] = {}
    for key in c.unchanged:
        name = base_name(key.split("@", 1)[0])
        counts[name] = counts.get(name, 0) + 1
    names = ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in sorted(counts.items()))
    extra = [f"{len(c.only_baseline)} only in {d.baseline}"] * bool(c.only_baseline)
    extra += [f"{len(c.only_candidate)} only in {d.candidate}"] * bool(c.only_candidate)
    text = f"{len(c.unchanged)} kernels with unchanged code" + (f": {names}" if names else "")
    text += "".join(f"; {e}" for e in extra)
    return (
        f'<tr class="unchanged category"><td>{escape(c.category)}</td>'
        f'<td colspan="{width - 1}">{escape(text)}</td></tr>'
    )


def _timing(v: Verdict | None, missing: str, control: str = "") -> list[str]:
    """The time ratio (candidate / baseline, µs per call) with Δ%, and its interval; the
    verdict's note (and what the control was) shows on hovering."""
    if v is None:
        return [_td(missing), _td("")]
    css = {Direction.SLOWER: "num worse-cell", Direction.FASTER: "num better-cell"}.get(
        v.claimed, "num"
    )
    pct = v.delta_pct if abs(v.delta_pct) >= 0.05 else 0.0  # no "-0.0%"
    ratio = f"{1 + v.delta_pct / 100:.3f} ({pct:+.1f}%)"
    interval = "n/a" if v.ci_low is None or v.ci_high is None else (
        f"{v.ci_low:.3f}–{v.ci_high:.3f}"
    )  # fmt: skip
    note = f"{control}; {words.note(v)}" if control else words.note(v)
    return [_td(ratio, css, title=note), _td(interval, "num")]


def _against_control(entry: Controlled | None) -> list[str]:
    """A changed kernel's verdict against the control, or why there is none."""
    if entry is None:
        return [_td("not timed"), _td("")]
    if entry.controlled is None:
        return [_td("raw only", title=words.control(entry)), _td("")]
    return _timing(entry.controlled, "", words.control(entry))


def _gpu(cmp: Comparison) -> bool:
    return cmp.codegen is not None and cmp.codegen.gpu


def _td(text: str, css: str = "", title: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    tip = f' title="{escape(title)}"' if title else ""
    return f"<td{klass}{tip}>{escape(text)}</td>"


def _arrow(pair: Pair) -> str:
    base, cand = pair
    if base == cand:
        return "–" if base is None else str(base)
    return f"{'–' if base is None else base}→{'–' if cand is None else cand}"


def _signed(cand: int | None, base: int | None) -> str:
    if base is None or cand is None or base == cand:
        return ""
    return f"{cand - base:+d}"


def _diff_html(text: str) -> str:
    """A unified diff, its added, removed and hunk lines marked (every line escaped)."""
    out = []
    for line in text.splitlines():
        if line.startswith(("+++", "---")):
            css = ""
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        elif line.startswith("@@"):
            css = "hunk"
        else:
            css = ""
        out.append(f'<span class="{css}">{escape(line)}</span>' if css else escape(line) + "\n")
    return "".join(out)
