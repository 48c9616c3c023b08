"""`report --html`: the page's structure offline, then drawn by a real headless Chromium.

The browser test fails (not skips) when CI=true and Debian's chromium/chromedriver are
missing: `.ci/setup-tests` installs them.
"""

from __future__ import annotations

import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import main
from orchestrator.codegen.asm import AsmDiffs, collect_asm_diffs, load_asm_diffs, save_asm_diffs
from orchestrator.codegen.diff import CodegenDiff, diff, short_name
from orchestrator.codegen.html import BenchCodegen
from orchestrator.codegen.model import Codegen, KernelCode
from orchestrator.core.files import DamagedRecord
from orchestrator.parsers.breakdown import build_breakdown
from orchestrator.parsers.categories import CATEGORIES
from orchestrator.payloads import codegen_probe as probe
from orchestrator.report import words
from orchestrator.report.html import render_html
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.store.layout import CODEGEN_FILE
from orchestrator.store.records import ImageRef, RunResult
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.compare import Comparison, category_verdicts
from orchestrator.verdict.controlled import against_control
from orchestrator.verdict.history import Bisect, BisectStep, Sample, Series, build_series
from orchestrator.verdict.paired import compare_pairs
from orchestrator.verdict.stats import compare_samples
from tests.test_codegen import GROMACS as UNITS
from tests.test_codegen import _codegen, _gz

COMMITS = [f"{i:x}" * 40 for i in range(10, 16)]  # aaaa…, bbbb…, …, ffff…
RUNS = 6  # per point: 5+ a side lets the corrected change-point test fire
NASTY = "<script>alert('x')</script>&build"
GROMACS = "f00dfeed" * 5
JITTER = [-0.9, 0.4, -0.2, 0.7, -0.5, 0.3]


def _samples(values_at: list[float], *, llvm: bool = True, build: str = "dev") -> list[Sample]:
    """`RUNS` runs per point around each value (±1 %), oldest point first."""
    out = []
    for i, centre in enumerate(values_at):
        for r in range(RUNS):
            out.append(Sample(
                run_id=f"run-{i}-{r}", build=build if llvm else f"{build}-{i}",
                image_tag=f"gmx-dev:{i}", image_id=f"sha256:{i:064x}",
                llvm_commit=COMMITS[i] if llvm else None, gromacs_commit=GROMACS,
                compiler_version="clang 20", host="host-a" if r % 2 else "host-b",
                started=f"2025-01-{i + 1:02d}T10:{r:02d}:00", value=centre * (1 + JITTER[r] / 100),
            ))  # fmt: skip
    return out


@pytest.fixture
def series() -> list[Series]:
    """ns/day with a planted 20 % drop at the 4th commit; a category in ms, no change; a
    series keyed by build names, one of which is hostile markup."""
    drop = [100.0, 101.0, 100.5, 80.0, 80.5, 80.2]
    flat = [12.0, 12.1, 11.9, 12.0, 12.05, 11.95]
    by_name = _samples([50.0, 50.2, 49.9], llvm=False)
    for s in by_name:
        if s.build.endswith("-1"):
            s.build = NASTY
    return [
        build_series("benchMEM", "ns/day", "ns/day", True, _samples(drop)),
        build_series("benchMEM", "nbnxm", "ms", False, _samples(flat)),
        build_series("rnase", "ns/day", "ns/day", True, by_name),
    ]


@pytest.fixture
def verdict() -> Comparison:
    base, cand = [100.0, 101.0, 99.5, 100.4, 100.8], [80.0, 81.2, 79.6, 80.5, 80.9]
    return Comparison(
        baseline=["base-1", "base-2"], candidate=["dev-1", "dev-2"], system="benchMEM",
        label="dev vs stable", runs=10,
        headline=compare_samples(base, cand, higher_is_better=True),
        categories={"nbnxm": compare_samples([10.0, 10.1, 9.9, 10.0, 10.05],
                                             [12.0, 12.2, 11.9, 12.1, 12.0],
                                             higher_is_better=False)},
    )  # fmt: skip


@pytest.fixture
def bisects() -> list[Bisect]:
    def step(n: int, commit: str, verdict: str, delta: float | None) -> BisectStep:
        return BisectStep.model_validate({
            "step": n, "commit": commit, "verdict": verdict, "delta_pct": delta,
            "p_value": 0.004 if delta else None, "pairs": 4 if delta else 0,
            "note": "slower beyond the midpoint" if verdict == "bad" else f"{verdict} <ok>",
            "at": f"2025-02-01T0{n}:00:00",
        })  # fmt: skip

    found = Bisect(
        bisect_id="bisect-1", good=COMMITS[0], bad=COMMITS[5], system="benchMEM",
        metric="ns/day", started="2025-02-01T00:00:00", first_bad=COMMITS[3],
        steps=[step(1, COMMITS[2], "good", -0.4), step(2, COMMITS[4], "bad", -19.8),
               step(3, COMMITS[3], "bad", -20.1)],
    )  # fmt: skip
    stopped = Bisect(
        bisect_id="bisect-2", good=COMMITS[0], bad=COMMITS[2], system="rnase",
        metric="ns/day", started="2025-02-02T00:00:00", outcome="only skipped commits left",
        steps=[step(1, COMMITS[1], "skip", None)],
    )  # fmt: skip
    return [found, stopped]


class _Links(HTMLParser):
    """Every src/href attribute and the number of <script> tags, as a browser parses them
    (the inlined plotly.js is script text, not markup)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.ids: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"
        self.urls += [v or "" for k, v in attrs if k in ("src", "href")]
        self.ids += [v or "" for k, v in attrs if k == "id"]


def _page(series: list[Series], verdict: Comparison, bisects: list[Bisect]) -> str:
    return render_html(series, verdict=verdict, bisects=bisects, generated="2025-03-01 12:00 UTC")


def test_the_planted_drop_is_the_one_change_point(series: list[Series]) -> None:
    assert [p.key for p in series[0].change_points] == [COMMITS[3][:12]]
    assert series[1].change_points == [] and series[2].change_points == []


def test_page_is_self_contained_deterministic_and_escaped(
    series: list[Series], verdict: Comparison, bisects: list[Bisect]
) -> None:
    page = _page(series, verdict, bisects)
    links = _Links()
    links.feed(page)
    assert not [u for u in links.urls if u.lower().startswith(("http:", "https:", "//"))]
    # plotly.js once: its version banner and its bundle's define() appear exactly once
    assert page.count("plotly.js v") == 1
    assert page.count('<script charset="utf-8">') == 1
    assert page.index("plotly.js v") < page.index("</head>")
    for n, s in enumerate(series):
        assert f'id="chart-{n}" data-series-points="{len(s.points)}"' in page
        assert f'data-change-points="{len(s.change_points)}"' in page
    assert {"chart-0-plot", "chart-2-plot", "verdict", "bisect-0", "bisect-1"} <= set(links.ids)
    # hostile markup appears only escaped: entities in ticks and hover texts (inside
    # plotly's JSON, which writes / as \\u002f), entities in the tables
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;\\u002fscript&gt;&amp;build" in page
    assert "good &lt;ok&gt;" in page
    assert page == _page(series, verdict, bisects)


def test_verdict_and_bisect_tables_reuse_the_text_report(
    verdict: Comparison, bisects: list[Bisect]
) -> None:
    page = render_html([], verdict=verdict, bisects=bisects, generated="now")
    assert "no finished runs in the database yet" in page
    assert "chart-0" not in page
    assert words.headline_text(verdict) in page and "<th>CI of Δ</th>" in page
    assert "nbnxm (ms)" in page and f"{verdict.headline.delta_pct:+.2f}%" in page
    assert f'<tr class="first-bad"><td class="num">3</td><td>{COMMITS[3][:12]}</td>' in page
    assert page.count('class="first-bad"') == 1
    assert f"first bad commit: {COMMITS[3]}" in page
    assert "no first bad commit: only skipped commits left" in page


# --- the real browser ---------------------------------------------------------------

SEVERE = "SEVERE"


COUNT_JS = """
return Array.from(document.querySelectorAll('div.chart')).map(chart => ({
  id: chart.id,
  svg: chart.querySelectorAll('.main-svg').length,
  traces: Array.from(chart.querySelectorAll('.scatterlayer .trace')).map(
      t => t.querySelectorAll('.points path.point').length),
  errorbars: chart.querySelectorAll('.errorbars .errorbar').length,
  title: (chart.querySelector('.gtitle') || {}).textContent || '',
  ticks: Array.from(chart.querySelectorAll('.xtick text')).map(t => t.textContent),
}));
"""


def test_browser_draws_every_series_and_fetches_nothing(
    chromium: Any,
    series: list[Series],
    verdict: Comparison,
    bisects: list[Bisect],
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page = tmp_path / "report.html"
    page.write_text(_page(series, verdict, bisects), encoding="utf-8")
    started = time.monotonic()
    chromium.get(page.as_uri())
    WebDriverWait(chromium, 30).until(
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, "div.chart .scatterlayer .trace"))
            == sum(1 + bool(s.change_points) for s in series)
        )
    )
    drawn = time.monotonic() - started

    charts = chromium.execute_script(COUNT_JS)
    assert [c["id"] for c in charts] == [f"chart-{n}" for n in range(len(series))]
    for chart, s in zip(charts, series, strict=True):
        assert chart["svg"] >= 1, chart
        expected = [len(s.points)] + ([len(s.change_points)] if s.change_points else [])
        assert chart["traces"] == expected, (chart, s.metric)
        assert chart["errorbars"] == len(s.points)
        assert s.system in chart["title"] and s.metric in chart["title"]
        assert chart["ticks"] == [p.key for p in s.points]  # markup shown as text, not run
    nasty = chromium.execute_script(
        "return document.querySelectorAll('#chart-2 .xtick text')[1].textContent"
    )
    assert nasty == NASTY

    # a person's mouse over the change point: its provenance and the step's verdict
    marker = chromium.find_elements(By.CSS_SELECTOR, "#chart-0 .scatterlayer .trace")[1]
    ActionChains(chromium).move_to_element(
        marker.find_element(By.CSS_SELECTOR, "path.point")
    ).perform()
    hover = WebDriverWait(chromium, 10).until(
        lambda d: d.execute_script(
            "const h = document.querySelector('#chart-0 .hoverlayer .hovertext');"
            "return h && h.textContent"
        )
    )
    change = series[0].change_points[0].change
    assert change is not None
    provenance = ["change point", COMMITS[3][:12], "builds: dev", "hosts: host-a, host-b",
                  f"GROMACS: {GROMACS}", "(6 runs)", f"{change.delta_pct:+.2f}%"]  # fmt: skip
    assert [t for t in provenance if t not in hover] == [], hover

    assert chromium.find_element(By.ID, "verdict").find_elements(By.TAG_NAME, "tr")
    assert len(chromium.find_elements(By.CSS_SELECTOR, "#verdict tbody tr")) == 2
    bad = chromium.find_elements(By.CSS_SELECTOR, "#bisect-0 tr.first-bad td")
    assert bad[1].text == COMMITS[3][:12]
    assert len(chromium.find_elements(By.CSS_SELECTOR, "#bisect-1 tbody tr")) == 1

    resources = chromium.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert all(r.startswith(("file:", "data:", "blob:")) for r in resources), resources
    errors = [e for e in chromium.get_log("browser") if e["level"] == SEVERE]
    assert not errors, errors

    shot = tmp_path / "report.png"  # the page as it opens, tooltip gone
    ActionChains(chromium).move_to_element(chromium.find_element(By.TAG_NAME, "h1")).perform()
    height = chromium.execute_script("return document.documentElement.scrollHeight")
    chromium.set_window_size(1400, max(2000, int(height) + 120))
    assert chromium.save_screenshot(str(shot))
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 50_000
    print(f"drawn in {drawn:.2f}s; screenshot {shot} ({len(data)} bytes, page {height}px)")


# --- the codegen view ------------------------------------------------------------------
#
# Real code: the GROMACS 2026.3 HIP units of tests/data/codegen compiled by clang 21 as
# configured ("a") and with -fno-unroll-loops ("nounroll"), diffed by the product, and each
# changed kernel's code the probe's normalised objdump text of the stored code objects (what
# `function_asm` prints from an image). Synthetic: the per-run kernel times (no trace of these
# kernels was recorded on a GPU): six interleaved pairs with a machine drift shared by every
# kernel of a pair, judged by the product's own per-kernel and controlled rules.

CODEGEN_PAIRS = 6
DRIFT_BASE = [1.00, 1.03, 0.98, 1.05, 1.01, 0.99]
DRIFT_CAND = [1.01, 1.02, 1.00, 1.04, 0.99, 1.00]
NOISE = [0.002, -0.003, 0.001, 0.004, -0.002, 0.0]


def _asm_text(variant: str, kernel: KernelCode) -> str:
    """One kernel's normalised code from the stored objdump of its code object."""
    disasm = _gz(UNITS / variant / f"{kernel.code_object}.objdump.txt.gz")
    body = dict(probe.blocks(disasm.splitlines()))[kernel.name]
    return "\n".join(probe.gpu_normalise(body)) + "\n"


@pytest.fixture(scope="module")
def codegen_sides() -> tuple[Codegen, Codegen, CodegenDiff]:
    a, b = _codegen(UNITS / "a", "clang-21"), _codegen(UNITS / "nounroll", "clang-21+nounroll")
    return a, b, diff(a, b)


def _times(centre: float, ratio: float, k: int) -> tuple[list[float], list[float]]:
    base = [centre * d * (1 + NOISE[(i + k) % 6]) for i, d in enumerate(DRIFT_BASE)]
    cand = [centre * ratio * d * (1 - NOISE[(i + 2 * k) % 6]) for i, d in enumerate(DRIFT_CAND)]
    return base, cand


def _bench_view(
    sides: tuple[Codegen, Codegen, CodegenDiff], *, kept: AsmDiffs | None, control: bool = True
) -> BenchCodegen:
    """A bench of the real diff with synthetic traces: lincsKernel<false, false> 10 % faster,
    leapFrogKernel<1, 1> 6 % slower, settleKernel<true, true> the same; three pmeSolve
    kernels (code unchanged) and a runtime blit (not in the fingerprint) as the rest."""
    a, _b, d = sides
    by_short = {short_name(k.demangled or ""): k for k in d.changed}
    changed = {
        by_short["lincsKernel<false, false>"].demangled: (40.0, 0.90),
        by_short["leapFrogKernel<1, 1>"].demangled: (8.0, 1.06),
        by_short["settleKernel<true, true>"].demangled: (25.0, 1.00),
    }
    same = [a.kernels[key].demangled for key in d.categories["pme_solve"].unchanged[:3]]
    rest = {name: (60.0 - 10 * i, 1.0) for i, name in enumerate(same)}
    rest["__amd_rocclr_fillBufferAligned"] = (3.0, 1.0)
    base, cand = {}, {}
    for k, (name, (centre, ratio)) in enumerate({**changed, **rest}.items()):
        assert name is not None
        base[name], cand[name] = _times(centre, ratio, k)
    kernels = category_verdicts(base, cand, paired=True, threshold_pct=2.0, alpha=0.05)
    weights = {name: sorted(values)[3] * 1000 for name, values in base.items()}
    ctl = against_control(base, cand, list(changed), same, weights, paired=True) if control else {}
    ns = compare_pairs([100.0 * d for d in DRIFT_BASE], [99.0 * d for d in DRIFT_CAND],
                       higher_is_better=True)  # fmt: skip
    cmp = Comparison(
        baseline=[f"stable__water__kernel-baseline-llvm-r{i}" for i in range(1, 7)],
        candidate=[f"dev__water__llvm-r{i}" for i in range(1, 7)], system="water_lincs",
        label="LLVM 142414cf <b>", headline=ns, categories={}, kernels=kernels, paired=True,
        runs=12, codegen=d, controlled=ctl,
    )  # fmt: skip
    return BenchCodegen(cmp, kept)


@pytest.fixture(scope="module")
def kept(codegen_sides: tuple[Codegen, Codegen, CodegenDiff]) -> AsmDiffs:
    a, b, d = codegen_sides
    variants = ("a", "nounroll")
    return collect_asm_diffs(
        d, a, b, lambda side, kernel: _asm_text(variants[side], kernel),
        ("stable__water__kernel-baseline-llvm", "dev__water__llvm"), limit=12,
    )  # fmt: skip


def test_kept_code_diffs_are_bounded_and_stored_atomically(
    codegen_sides: tuple[Codegen, Codegen, CodegenDiff], kept: AsmDiffs, tmp_path: Path
) -> None:
    a, b, d = codegen_sides
    assert len(d.changed) == 15
    assert [k.key for k in kept.kernels] == [k.key for k in d.changed[:12]]
    assert kept.left_out == [k.key for k in d.changed[12:]]
    lincs = next(k for k in kept.kernels if "lincsKernelILb0ELb0E" in k.key)
    assert lincs.diff.startswith(f"--- clang-21 {lincs.name}\n+++ clang-21+nounroll {lincs.name}")
    assert not lincs.cut and len(lincs.diff.splitlines()) > 100  # unrolled loops went away
    small = collect_asm_diffs(d, a, b, lambda side, k: _asm_text(("a", "nounroll")[side], k),
                              ("x", "y"), limit=2, max_chars=500)  # fmt: skip
    assert all(k.cut and len(k.diff) == 500 for k in small.kernels) and len(small.left_out) == 13
    path = save_asm_diffs(tmp_path, kept)
    assert path == tmp_path / ".asm" / "dev__water__llvm.json"
    assert load_asm_diffs(tmp_path, "dev__water__llvm") == kept
    assert load_asm_diffs(tmp_path, "older__bench") is None
    path.write_text(path.read_text()[:200])
    with pytest.raises(DamagedRecord, match=r"a bench's kernel code diffs.*Delete it"):
        load_asm_diffs(tmp_path, "dev__water__llvm")


def test_codegen_view_rows_timings_and_code(
    codegen_sides: tuple[Codegen, Codegen, CodegenDiff], kept: AsmDiffs
) -> None:
    view = _bench_view(codegen_sides, kept=kept)
    page = render_html([], codegen=[view], generated="now")
    d = codegen_sides[2]
    assert '<table class="codegen" id="codegen-0" data-changed="15" data-asm-kept="12">' in page
    assert (
        page.count('<tr class="changed has-asm"') == 12 and page.count('<tr class="changed"') == 3
    )
    assert page.count('class="asm-row"') == 12 and page.count(" hidden><td") == 12
    # a changed kernel beside its time: the raw ratio and interval, then the controlled one
    cmp = view.comparison
    lincs = next(
        k for k in d.changed if short_name(k.demangled or "") == "lincsKernel<false, false>"
    )
    raw, ctl = cmp.kernels[lincs.demangled or ""], cmp.controlled[lincs.demangled or ""]
    row = page.split(f'data-key="{lincs.key}"', 1)[1].split("</tr>", 1)[0]
    a_instr, b_instr = lincs.instructions
    assert f"{a_instr}→{b_instr}" in row and f"{b_instr - a_instr:+d}" in row
    assert f"{lincs.vgprs[0]}→{lincs.vgprs[1]}" in row and '<td class="num">16</td>' in row
    assert f"{1 + raw.delta_pct / 100:.3f} ({raw.delta_pct:+.1f}%)" in row
    assert f"{raw.ci_low:.3f}–{raw.ci_high:.3f}" in row
    assert ctl.controlled is not None and f"{1 + ctl.controlled.delta_pct / 100:.3f}" in row
    assert words.marker(raw) == "🚀" and 'class="num better-cell"' in row
    # the unchanged: timed ones greyed as the control, the rest counted per category
    grey = page.count('<tr class="unchanged timed">')
    assert grey == 4 and "not in the fingerprint" in page and "code unchanged" in page
    assert "16 kernels with unchanged code: pmeSolveKernel ×16" in page
    assert "pme_solve" in page and page.count('class="unchanged category"') == 2
    assert "LLVM 142414cf &lt;b&gt; on water_lincs: clang-21 → clang-21+nounroll" in page
    assert "<b>" not in page.split('id="codegen-0-title"', 1)[1].split("</h3>", 1)[0]
    assert '<span class="add">+' in page and '<span class="del">-' in page


def test_codegen_view_of_an_older_bench_says_the_code_was_not_kept(
    codegen_sides: tuple[Codegen, Codegen, CodegenDiff],
) -> None:
    view = _bench_view(codegen_sides, kept=None, control=False)
    page = render_html([], codegen=[view], generated="now")
    assert "the assembly was not kept for this bench" in page
    assert "has-asm" not in page.split("<body>", 1)[1] and "asm-row" not in page.split("<body>")[1]
    assert "controlled ratio" not in page and page.count('<tr class="changed"') == 15
    assert "<h2>Codegen</h2>" not in render_html([], generated="now")  # no bench: no section


CODEGEN_JS = """
const rows = Array.from(document.querySelectorAll('#codegen-0 tbody > tr'));
const style = r => getComputedStyle(r.querySelector('td'));
return {
  changed: rows.filter(r => r.classList.contains('changed')).length,
  clickable: rows.filter(r => r.classList.contains('has-asm')).length,
  open: rows.filter(r => r.classList.contains('asm-row') && !r.hidden).length,
  grey: rows.filter(r => r.classList.contains('unchanged')).map(r => style(r).color),
  black: style(rows[0]).color,
  header: Array.from(document.querySelectorAll('#codegen-0 thead th')).map(h => h.textContent),
};
"""


def test_browser_opens_a_changed_kernels_code_diff(
    chromium: Any, codegen_sides: tuple[Codegen, Codegen, CodegenDiff], kept: AsmDiffs,
    series: list[Series], verdict: Comparison, tmp_path: Path,
) -> None:  # fmt: skip
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    view = _bench_view(codegen_sides, kept=kept)
    page = tmp_path / "report.html"
    page.write_text(render_html(series[:1], verdict=verdict, codegen=[view], generated="now"),
                    encoding="utf-8")  # fmt: skip
    chromium.get(page.as_uri())
    WebDriverWait(chromium, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "div.chart .scatterlayer .trace")
    )
    state = chromium.execute_script(CODEGEN_JS)
    assert state["changed"] == 15 and state["clickable"] == 12 and state["open"] == 0
    assert state["header"][-4:] == ["time ratio", "interval", "controlled ratio",
                                    "controlled interval"]  # fmt: skip
    assert len(state["grey"]) == 6 and set(state["grey"]) == {"rgb(153, 153, 153)"}
    assert state["black"] == "rgb(34, 34, 34)"

    lincs = next(k for k in codegen_sides[2].changed if "lincsKernelILb0ELb0E" in k.key)
    row = chromium.find_element(By.CSS_SELECTOR, f'tr[data-key="{lincs.key}"]')
    code = chromium.find_element(By.ID, row.get_attribute("data-asm"))
    assert not code.is_displayed()
    chromium.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    WebDriverWait(chromium, 5).until(lambda _d: code.is_displayed())
    text = code.text
    kept_diff = next(k.diff for k in kept.kernels if k.key == lincs.key)
    assert text.splitlines()[:2] == kept_diff.splitlines()[:2]
    added = code.find_elements(By.CSS_SELECTOR, "span.add")
    removed = code.find_elements(By.CSS_SELECTOR, "span.del")
    assert len(added) == sum(1 for line in kept_diff.splitlines()
                             if line.startswith("+") and not line.startswith("+++"))  # fmt: skip
    assert len(removed) > len(added)  # -fno-unroll-loops: the unrolled copies are gone
    assert row.get_attribute("aria-expanded") == "true"
    assert chromium.execute_script(CODEGEN_JS)["open"] == 1
    resources = chromium.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert all(r.startswith(("file:", "data:", "blob:")) for r in resources), resources
    assert not [e for e in chromium.get_log("browser") if e["level"] == SEVERE]

    shot = tmp_path / "codegen-view.png"  # the view with one kernel's code open
    chromium.set_window_size(1600, 1400)
    chromium.execute_script(
        "document.getElementById('codegen-0-title').scrollIntoView({block: 'start'})"
    )
    assert chromium.save_screenshot(str(shot))
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    shared = Path("/tmp/gmx-helpers")
    if shared.is_dir():  # the lead's copy, looked at by a person
        shutil.copy(shot, shared / "codegen-view.png")

    row.click()  # and closed again
    WebDriverWait(chromium, 5).until(lambda _d: not code.is_displayed())


def test_report_command_draws_the_latest_benchs_codegen_from_its_run_directories(
    codegen_sides: tuple[Codegen, Codegen, CodegenDiff], kept: AsmDiffs, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """`report --html` as a person runs it: the newest bench found in the database, its
    runs' codegen.json copies diffed, its traces judged, the code diffs it kept read back."""
    view = _bench_view(codegen_sides, kept=None)
    times = {name: ([v.baseline_median] * 6, [v.candidate_median] * 6)
             for name, v in view.comparison.kernels.items()}  # fmt: skip
    for name, (base, cand) in times.items():  # the per-run values behind each verdict
        centre, ratio = base[0], cand[0] / base[0]
        times[name] = _times(centre, ratio, list(times).index(name))
    runs = RunStore(tmp_path)
    for side, build, tag, codegen in (
        (0, "stable", "kernel-baseline-bench", codegen_sides[0]),
        (1, "dev", "bench", codegen_sides[1]),
    ):
        for i in range(CODEGEN_PAIRS):
            run = f"{build}__water__{tag}-r{i + 1}"
            path = runs.create(run)
            rows = [(name, "other", 1000, int(t[side][i] * 1e6), True) for name, t in times.items()]
            rows += [(f"{c}_untraced", c, 10, 10**6, True) for c in CATEGORIES]  # no call stats
            stats = {name: (t[side][i], t[side][i], t[side][i]) for name, t in times.items()}
            RunStore.save_breakdown(path, build_breakdown("rocprofv3 kernel_trace", [], rows,
                                                          call_stats=stats))  # fmt: skip
            (path / CODEGEN_FILE).write_text(codegen.model_dump_json())
            RunStore.save(path, RunResult.model_validate({
                "run_id": run, "build": build, "system": "water", "tag": f"{tag}-r{i + 1}",
                "platform": "rocm", "timestamp": f"2026-11-25T10:{2 * i + side:02d}:00+00:00",
                "finished": True, "ns_per_day": 100.0 * DRIFT_BASE[i] + side,
                "image": ImageRef(tag=f"gromacs:{build}", id=f"sha256:{side}"),
                "host": HostInfo(hostname="h", kernel="k"), "command": ["gmx", "mdrun"],
            }))  # fmt: skip
    save_asm_diffs(tmp_path, kept.model_copy(update={"candidate": "dev__water__bench"}))
    monkeypatch.setenv("ORCH_PLATFORM", "cpu")
    monkeypatch.setenv("ORCH_RESULTS_DIR", str(tmp_path))
    monkeypatch.delenv("ORCH_DATABASE_URL", raising=False)
    assert main(["db", "import"]) == 0
    page = tmp_path / "report.html"
    assert main(["report", "--html", str(page)]) == 0
    text = page.read_text()
    assert '<table class="codegen" id="codegen-0" data-changed="15" data-asm-kept="12">' in text
    assert "water: clang-21 → clang-21+nounroll" in text and "controlled ratio" in text
    lincs = next(k for k in kept.kernels if "lincsKernelILb0ELb0E" in k.key)
    row = text.split(f'data-key="{lincs.key}"', 1)[1].split("</tr>", 1)[0]
    assert "better-cell" in row and "(-10.0%)" in row  # its trace's 10 % faster, judged
    assert text.count('<tr class="unchanged timed">') == 4
    (tmp_path / ".asm" / "dev__water__bench.json").unlink()  # a bench from before
    assert main(["report", "--html", str(page)]) == 0
    assert "the assembly was not kept for this bench" in page.read_text()
