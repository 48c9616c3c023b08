"""`bisect` for real on the CPU platform: a mini llvm-project with a slowdown planted at a
known commit, a commit that does not build and a commit that changes the compiler but not
the code it makes, bisected with the bandwidth kernel recipe (each step builds that
commit's clang and the kernel with it, in seconds; the no-op commit's kernel is the good
end's, byte for byte, so it runs nothing); then `history` and `report --html` show the
step, from the results database the runs were recorded in."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from orchestrator.cli import main
from orchestrator.report import words
from orchestrator.report.text import bisect_text, history_text
from orchestrator.store.database import Database
from orchestrator.verdict import history
from orchestrator.workflows.bisect import BisectRequest, bisect
from tests.mini_llvm import EXTRA_FLAGS, make_mini_llvm

pytestmark = [pytest.mark.engine, pytest.mark.slow]

SYSTEM = "bandwidth:8MiB"  # a size no other test uses: its history is this test's alone
#: -O0 for the compiler proper: the driver puts -Xclang's arguments after its own -O3, and
#: cc1 takes the last -O, so the -O3 of the recipe cannot undo it (read-only 53 → 22 GB/s).
SLOW = ["-Xclang", "-O0"]
#: A different code at the same speed: a stack canary in every function's prologue and
#: epilogue (the bad end's code must differ from the planted commit's, or the planted
#: commit would take the bad end's verdict without runs and `history` would not see it).
OTHER_CODE = ["-fstack-protector-all"]


def _no_op(repo: Any, message: str) -> str:
    """A commit that fixes the driver and adds a comment to it: no flag, the good end's code."""
    repo.edit()
    driver = repo.path / "clang/lib/Driver/Driver.cpp"
    driver.write_text(driver.read_text() + "// No functional change.\n")
    repo.git("add", "-A")
    repo.git("commit", "--quiet", "-m", message)
    return str(repo.head())


def _broken(repo: Any, message: str) -> str:
    """A commit whose compiler driver does not compile."""
    (repo.path / EXTRA_FLAGS).write_text("this is not C++\n")
    repo.git("add", "-A")
    repo.git("commit", "--quiet", "-m", message)
    return str(repo.head())


def test_bisect_finds_the_planted_commit_and_skips_the_one_that_does_not_build(
    engine: Any,
    cpu_settings: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    chromium: Any,
) -> None:
    repo = make_mini_llvm(tmp_path / "llvm-project", message="Mini llvm-project for bisect")
    good = repo.head()
    repo.commit("Neutral: define a macro", host_flags=["-DGMXBENCH_NEUTRAL=1"])
    broken = _broken(repo, "Break the driver's build")
    no_op = _no_op(repo, "Fix the build; a comment in the driver")
    planted = repo.commit("The slowdown", host_flags=SLOW)
    bad = repo.commit("Other code after it", host_flags=[*SLOW, *OTHER_CODE])
    settings = cpu_settings.model_copy(update={"llvm_source": str(repo.path)})

    said: list[Any] = []
    request = BisectRequest(good=good, bad=bad, system=SYSTEM, repeats=5)
    outcome = bisect(engine, settings, request, said.append)
    texts = [getattr(event, "text", "") for event in said]
    assert "--repeats 5: 6 pairs instead" in "\n".join(texts)  # ABBA needs an even number
    found, text = outcome.record, bisect_text(outcome.record)
    assert found.first_bad == planted, text
    assert outcome.first_bad is not None and words.marker(outcome.first_bad.headline) == "🐢"
    assert found.steps[0].commit == bad and found.steps[0].verdict == "bad", text
    assert found.steps[0].delta_pct is not None and found.steps[0].delta_pct < -20, text
    by_commit = {s.commit: s for s in found.steps}
    assert by_commit[broken].verdict == "skip" and "does not build" in by_commit[broken].note
    # the no-op commit took the good end's verdict without running anything
    same = by_commit[no_op]
    assert same.verdict == "good" and same.note == f"code identical to {good}", text
    assert same.pairs == 0 and same.candidate_group is None, text
    tag = f"{found.bisect_id.removeprefix('bisect-')}-s{same.step}"
    assert not list(cpu_settings.results_dir.glob(f"*{tag}*")), tag
    order = subprocess.run(
        ["git", "-C", str(repo.path), "rev-list", "--reverse", f"{good}..{bad}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for step in found.steps:  # every verdict agrees with where the slowdown was planted
        if step.verdict in ("good", "bad"):
            expected = "bad" if order.index(step.commit) >= order.index(planted) else "good"
            assert step.verdict == expected, text

    db = Database.of(settings)
    stored = next(b for b in history.load_bisects(db) if b.bisect_id == found.bisect_id)
    assert stored.first_bad == planted and stored.steps == found.steps
    series = history.load_series(db, SYSTEM, llvm_source=str(repo.path))  # abbreviated name
    assert series.metric == "ro_peak" and words.ordered_by(series).startswith("commit date")
    keys = [p.key for p in series.points]
    assert planted[:8] in keys and good[:8] == keys[0], keys
    assert no_op[:8] not in keys, keys  # it ran nothing
    # the first change point is the planted commit; the bad end's other code (a stack canary
    # at -O0) may move the speed by a few percent more, which history may call a change too
    points = [p.key for p in series.change_points]
    assert points and points[0] == planted[:8], history_text(series)
    assert f"change point at {planted[:8]}" in history_text(series)

    # the same through the commands a person types, and the page in a real browser
    monkeypatch.setenv("ORCH_PLATFORM", "cpu")
    monkeypatch.setenv("ORCH_RESULTS_DIR", str(cpu_settings.results_dir))
    monkeypatch.setenv("ORCH_LLVM_SOURCE", str(repo.path))
    capsys.readouterr()
    assert main(["history", "--system", SYSTEM]) == 0
    assert f"change point at {planted[:8]}: slower by" in capsys.readouterr().out
    page = tmp_path / "report.html"
    assert main(["report", "--html", str(page), "--system", found.system]) == 0
    text_page = page.read_text()
    assert found.bisect_id in text_page and planted[:12] in text_page
    chromium.get(page.as_uri())
    WebDriverWait(chromium, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#chart-0 .scatterlayer .trace")
    )
    traces = chromium.find_elements(By.CSS_SELECTOR, "#chart-0 .scatterlayer .trace")
    assert len(traces) == 2  # the medians, and the change point marked
    first_bad = chromium.find_elements(By.CSS_SELECTOR, "#bisect-0 tr.first-bad td")
    assert first_bad[1].text == planted[:12]
    assert not [e for e in chromium.get_log("browser") if e["level"] == "SEVERE"]
    height = chromium.execute_script("return document.documentElement.scrollHeight")
    chromium.set_window_size(1400, max(1200, int(height) + 120))
    assert chromium.save_screenshot(str(tmp_path / "report.png"))  # kept with the test
