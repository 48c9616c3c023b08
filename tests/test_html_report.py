"""`report --html`: the page's structure offline, then drawn by a real headless Chromium.

The browser test fails (not skips) when CI=true and Debian's chromium/chromedriver are
missing: `.ci/setup-host` installs them.
"""

from __future__ import annotations

import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from orchestrator.results.compare import Comparison
from orchestrator.results.history import Bisect, BisectStep, Sample, Series, build_series
from orchestrator.results.html import render_html
from orchestrator.results.stats import compare_samples

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
        ns_per_day=compare_samples(base, cand, higher_is_better=True),
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
    assert verdict.headline in page and "<th>CI of Δ</th>" in page
    assert "nbnxm (ms)" in page and f"{verdict.ns_per_day.delta_pct:+.2f}%" in page
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
