"""Made to be scripted: exit codes, `--json`, nox passing codes on, file modes, version,
and plain messages where a setting, a template name or the output encoding is wrong.

Comparisons are of real md.logs stored as `bench` stores them (`tests/test_compare.py`);
the commands run as subprocesses, as a script runs them.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import main
from orchestrator.codegen.model import Codegen, KernelCode
from orchestrator.core.exits import EPILOG, MEANING, SIGNALLED, ExitCode
from orchestrator.core.files import write_atomic
from orchestrator.runs.inputs import fetch_inputs
from orchestrator.store.database import Database, import_runs
from orchestrator.store.layout import CODEGEN_FILE
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.compare import compare_runs
from orchestrator.workflows.bench import NOTHING_CHANGED, BenchOutcome
from tests.test_compare import BUSY, PAIRS, _bench_groups, _flag, load_runs, make_run
from tests.test_inputs import make_zip, zip_system
from tests.test_store import _save

REPO = Path(__file__).resolve().parent.parent
BASE, CAND = "stable__w__kernel-baseline-aa", "stable__w__aa"


def cli(
    *args: str, results: Path | None = None, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """`python -m orchestrator ARGS` as a script runs it, with only the variables given."""
    given = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), **(env or {})}
    if results is not None:
        given["ORCH_RESULTS_DIR"] = str(results)
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True,
        cwd=results or REPO, env=given, **kwargs,
    )  # fmt: skip


def _scaled(factor: float) -> list[tuple[float, float]]:
    """`bench`'s pairs with every candidate run `factor` times as fast."""
    return [(base, cand * factor) for base, cand in PAIRS]


# --- exit codes ---------------------------------------------------------------------------


def test_exit_codes_are_one_table_in_help_and_manual() -> None:
    """Every code is distinct, below the signal codes, and said alike by `--help` of both
    verdict commands and by docs/usage.md."""
    assert len(ExitCode) == len(ExitCode.__members__) and max(ExitCode) < SIGNALLED  # no alias
    manual = (REPO / "docs" / "usage.md").read_text()
    for command in ("bench", "compare"):
        shown = cli(command, "--help").stdout
        assert EPILOG in shown, command
    for code, meaning in MEANING.items():
        assert f"| {int(code)} |" in manual, code
        assert meaning.split(":")[0] in manual, meaning


@pytest.mark.parametrize(
    ("scales", "busy", "code", "verdict", "direction"),
    [
        (_scaled(0.9), False, ExitCode.SLOWER, "slower", "slower"),
        (_scaled(1.1), False, ExitCode.OK, "faster", "faster"),
        (PAIRS, False, ExitCode.OK, "no change", "none"),
        (BUSY, True, ExitCode.UNJUDGED, "could not judge", "none"),
    ],
    ids=["slower", "faster", "no-change", "too-busy"],
)
def test_compare_exits_with_its_verdict_and_says_it_in_json(
    tmp_path: Path, scales: list[tuple[float, float]], busy: bool, code: int, verdict: str,
    direction: str,
) -> None:  # fmt: skip
    _bench_groups(tmp_path, scales)
    for i in (2, 4, 5, 6) if busy else ():
        _flag(tmp_path / f"{CAND}-r{i}")
    plain = cli("compare", BASE, CAND, results=tmp_path)
    assert plain.returncode == code, plain.stderr
    done = cli("compare", BASE, CAND, "--json", results=tmp_path)
    assert done.returncode == code, done.stderr
    out = json.loads(done.stdout)  # stdout is the JSON and nothing else
    assert (out["verdict"], out["exit_code"]) == (verdict, code)
    head = out["headline"]
    expected = ("ns/day", direction, 2.0, 0.05)
    assert (head["name"], head["direction"], head["threshold_pct"], head["alpha"]) == expected
    assert out["categories"] and out["kernels"]  # the trace's categories and top kernels
    assert all({"direction", "ratio", "interval", "p_value"} <= set(v)
               for v in [*out["categories"].values(), *out["kernels"].values()])  # fmt: skip
    if busy:
        assert "too busy to judge" in out["reason"] and head["p_value"] is None
    else:
        factor = {"slower": 0.9, "faster": 1.1, "none": 1.0}[direction]
        assert head["ratio"] == pytest.approx(factor, abs=0.02) and head["test"] == "paired-t"
        low, high = head["interval"]["low"], head["interval"]["high"]
        assert low < head["ratio"] < high and head["p_value"] is not None
        assert (high < 1 or low > 1) == (direction != "none")


def test_too_few_runs_to_judge_exit_3(tmp_path: Path) -> None:
    """One run a side can never reach a marker: could not judge, not "no change"."""
    a = make_run(tmp_path, "stable__w__kernel-baseline", "water-2022.5.log")
    b = make_run(tmp_path, "dev__w__t", "water-2022.5.log", ns_scale=0.9)
    done = cli("compare", str(a), str(b), "--json", results=tmp_path)
    assert done.returncode == ExitCode.UNJUDGED, done.stderr
    out = json.loads(done.stdout)
    assert out["verdict"] == "could not judge" and "single run per side" in out["reason"]
    assert out["headline"]["testable"] is False


def test_a_suspect_candidate_is_not_judged(tmp_path: Path) -> None:
    """10% faster, but its energies disagree with the baseline's: it may compute something
    else, so no speed-up and no "no change" either."""
    _bench_groups(tmp_path, _scaled(1.1))
    for run in tmp_path.glob(f"{CAND}-r*"):
        result = RunStore.load(run)
        energies = {k: v * 1.05 for k, v in (result.energies or {}).items()}
        RunStore.save(run, result.model_copy(update={"energies": energies}))
    done = cli("compare", BASE, CAND, "--json", results=tmp_path)
    assert done.returncode == ExitCode.UNJUDGED, done.stderr
    out = json.loads(done.stdout)
    assert out["verdict"] == "could not judge" and out["suspect"] is True
    assert "potential energy" in out["reason"] and out["headline"]["direction"] == "none"
    assert out["headline"]["marker"] == "⚠" and out["headline"]["significant"] is True


def _bench_with(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], outcome: BenchOutcome,
    *args: str,
) -> tuple[int, str]:  # fmt: skip
    """`bench ARGS` through the front door, its workflow replaced by `outcome` (the
    workflow itself needs the engine; what is tested is what the command makes of it)."""
    from orchestrator.cli import workflows

    monkeypatch.setattr(workflows.engine, "connect", lambda: None)
    monkeypatch.setattr(workflows, "bench", lambda *_: outcome)
    code = main(["bench", *args])
    return code, capsys.readouterr().out


def test_bench_exits_with_its_verdict_and_says_it_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ORCH_RESULTS_DIR", str(tmp_path))
    _bench_groups(tmp_path, _scaled(0.9))
    slower = compare_runs(load_runs(tmp_path, BASE), load_runs(tmp_path, CAND))
    outcome = BenchOutcome(slower, 12, 600.0, 700.0, system=slower.system)
    code, text = _bench_with(monkeypatch, capsys, outcome)
    assert code == ExitCode.SLOWER and "🐢 ns/day" in text
    code, text = _bench_with(monkeypatch, capsys, outcome, "--json")
    out = json.loads(text)
    assert code == ExitCode.SLOWER and out["verdict"] == "slower"
    assert (out["elapsed_seconds"], out["container_seconds"], out["runs"]) == (700.0, 600.0, 12)
    nothing = BenchOutcome(None, 0, 0.0, 9.0, nothing_measured=NOTHING_CHANGED, system="water")
    code, text = _bench_with(monkeypatch, capsys, nothing, "--json")
    out = json.loads(text)
    assert code == ExitCode.OK and out["verdict"] == "nothing measured"
    assert out["reason"] == NOTHING_CHANGED and out["headline"] is None


# --- --json on the other commands ---------------------------------------------------------


def _codegen(build: str, instructions: int) -> Codegen:
    """A CPU build's fingerprint with one hot function of `instructions` instructions."""
    code = KernelCode(
        name="_Z5nbnxmv", kind="function", category="nbnxm", category_known=True,
        unit="libgromacs.so", arch="x86_64", code_object="libgromacs.so",
        sha256=f"{instructions:064x}", instructions=instructions,
        classes={"vector": instructions},
    )  # fmt: skip
    return Codegen(platform="cpu", build=build, archs=["x86_64"], tools={}, probe_seconds=0.0,
                   code_objects=[], kernels={code.name: code})  # fmt: skip


def test_codegen_diff_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs' fingerprints diffed (no engine needed for runs): the diff as JSON."""
    from orchestrator.cli import results

    monkeypatch.setenv("ORCH_RESULTS_DIR", str(tmp_path))
    monkeypatch.setattr(results.engine, "connect", lambda: None)
    runs = []
    for name, size in (("stable__w__a", 10), ("dev__w__b", 12)):
        run = make_run(tmp_path, name, "water-2022.5.log")
        (run / CODEGEN_FILE).write_text(_codegen(name, size).model_dump_json())
        runs.append(str(run))
    assert main(["codegen", "diff", *runs, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [k["name"] for k in out["changed"]] == ["_Z5nbnxmv"]
    assert out["changed"][0]["instructions"] == [10, 12]
    assert out["categories"]["nbnxm"]["changed"] == ["_Z5nbnxmv"]
    assert main(["codegen", "diff", *runs, "--json", "--asm", "--kernel", "n"]) == 2


def test_history_json(tmp_path: Path) -> None:
    runs = RunStore(tmp_path)
    for day, (build, value) in enumerate((("llvm-aaaa", 100.0), ("llvm-bbbb", 90.0)), 1):
        for r in range(4):
            started = f"2026-02-0{day}T00:00:0{r}+00:00"
            _save(runs, f"{build}__water__t-r{r}", ns_per_day=value + r / 10, timestamp=started)
    import_runs(Database(f"sqlite:///{tmp_path / 'runs.sqlite'}"), runs)
    done = cli("history", "--system", "water", "--json", results=tmp_path)
    assert done.returncode == 0, done.stderr
    series = json.loads(done.stdout)
    assert (series["system"], series["metric"], series["unit"]) == ("water", "ns/day", "ns/day")
    assert [p["builds"] for p in series["points"]] == [["llvm-aaaa"], ["llvm-bbbb"]]
    assert [p["median"] for p in series["points"]] == pytest.approx([100.15, 90.15])


def test_runs_list_json(tmp_path: Path) -> None:
    runs = RunStore(tmp_path)
    _save(runs, "dev__water__ok", ns_per_day=123.5)
    _save(runs, "dev__water__bad", finished=False, ns_per_day=None, failure="mdrun exited 1")
    done = cli("runs", "list", "--json", results=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {row["run"]: row for row in json.loads(done.stdout)}
    assert rows["dev__water__ok"]["state"] == "finished"
    assert (rows["dev__water__ok"]["value"], rows["dev__water__ok"]["unit"]) == (123.5, "ns/day")
    assert rows["dev__water__bad"]["state"] == "failed"
    failed = rows["dev__water__bad"]
    assert (failed["value"], failed["why"]) == (None, "mdrun exited 1")


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`gmxbench … | head`: the reader went away; no traceback, the SIGPIPE code."""
    runs = RunStore(tmp_path)
    for i in range(3):
        _save(runs, f"dev__water__t-r{i}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "runs", "list", "--json"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before it writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait() == SIGNALLED + 13 and err == ""


# --- nox passes the command's code on -----------------------------------------------------


def _nox(session: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`nox -s SESSION -- ARGS` in this interpreter: no virtualenv, nothing installed."""
    bin_dir = Path(sys.executable).parent
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO),
           "ORCH_RESULTS_DIR": str(cwd)}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(REPO / "noxfile.py"), "--no-venv",
         "--no-install", "-s", session, "--", *args],
        capture_output=True, text=True, cwd=cwd, env=env,
    )  # fmt: skip


def test_nox_sessions_exit_with_the_commands_code(tmp_path: Path) -> None:
    """`nox -s compare` ends with the CLI's 4 for a slowdown and `nox -s render` with its
    2, not nox's 1 for any failure; the command's stderr stays apart from its JSON."""
    _bench_groups(tmp_path, _scaled(0.9))
    slower = _nox("compare", BASE, CAND, "--json", cwd=tmp_path)
    assert slower.returncode == ExitCode.SLOWER, slower.stdout + slower.stderr
    assert json.loads(slower.stdout)["verdict"] == "slower"
    usage = _nox("render", "no-such-template", cwd=tmp_path)
    assert usage.returncode == ExitCode.USAGE, usage.stdout + usage.stderr
    assert "Unknown template 'no-such-template'" in usage.stderr


# --- files keep the umask -----------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_results_and_reports_are_written_with_the_umask(tmp_path: Path, umask_022: None) -> None:
    """A result, a report and a written file are 0644 under umask 022 (atomic writes go
    through a private temporary file first), and follow another umask as well."""
    run = make_run(tmp_path, "dev__w__t", "water-2022.5.log")
    assert _mode(run / "result.json") == 0o644 and _mode(run / "kernel_result.json") == 0o644
    report = cli("report", "--html", str(tmp_path / "report.html"), results=tmp_path)
    assert report.returncode == 0, report.stderr
    assert _mode(tmp_path / "report.html") == 0o644
    os.umask(0o027)
    assert _mode(write_atomic(tmp_path / "team.json", "{}")) == 0o640


# --- version, render, settings, encodings -------------------------------------------------


def test_version() -> None:
    done = cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"gmxbench {metadata.version('gmxbench')} from {REPO}")


def test_version_of_a_tree_never_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.cli import version

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert version().startswith("gmxbench 0.1.0 (not installed) from ")


def test_render_names_the_templates_and_the_values() -> None:
    unknown = cli("render", "gromacs-stabel-cpu")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "Unknown template 'gromacs-stabel-cpu'. Known templates: cpu-base, " in unknown.stderr
    typo = cli("render", "cpu-base", "--set", "base_imag=debian:sid")
    assert typo.returncode == 2
    assert "--set base_imag: cpu-base has no such value. Its values: base_image." in typo.stderr
    done = cli("render", "cpu-base", "--set", "base_image=debian:sid")
    assert done.returncode == 0 and "FROM debian:sid" in done.stdout


@pytest.mark.parametrize(
    ("value", "expected"),
    [("--mem=16G", ["--mem=16G"]), ("--mem=16G --comment='a b'", ["--mem=16G", "--comment=a b"]),
     ('["--mem=16G", "-N 1"]', ["--mem=16G", "-N 1"])],
)  # fmt: skip
def test_sbatch_arguments_as_a_command_line_or_json(value: str, expected: list[str]) -> None:
    done = cli("settings", env={"ORCH_SLURM__EXTRA_ARGS": value})
    assert done.returncode == 0, done.stderr
    assert f"'extra_args': {expected!r}" in done.stdout


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [("ORCH_SLURM__EXTRA_ARGS", '["--mem=16G"', "as a JSON list ('[\"--mem=16G\", "),
     ("ORCH_SLURM", "partition=gpu", "ORCH_SLURM='partition=gpu' could not be read"),
     ("ORCH_GROMACS", "git+https://x", "(ORCH_GROMACS__KEY=value)")],
)  # fmt: skip
def test_a_setting_that_is_not_json_is_one_paragraph(name: str, value: str, said: str) -> None:
    done = cli("settings", env={name: value})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: Invalid setting") and said in done.stderr
    assert done.stderr.count("\n") == 1


def test_an_ascii_output_gets_plain_markers(tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii: the report's markers as words, its Δ as d; no traceback."""
    _bench_groups(tmp_path, _scaled(0.9))
    done = cli("compare", BASE, CAND, results=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == ExitCode.SLOWER, done.stderr
    assert "[slower] ns/day" in done.stdout and "(baseline 126.2, d -" in done.stdout
    assert done.stdout.isascii() and "Traceback" not in done.stderr


def test_inputs_are_written_with_the_umask(tmp_path: Path, umask_022: None) -> None:
    """The inputs cache is shared as the results are: the archive 0644 and its unpacked
    folder 0755 (not `mkdtemp`'s private 0700)."""
    body = make_zip({"benchTEST/benchTEST.tpr": b"TPR"})
    offline = tmp_path / "offline"
    offline.mkdir()
    (offline / "benchTEST.zip").write_bytes(body)
    system = zip_system("https://example.invalid/benchTEST.zip", body)
    unpacked = fetch_inputs(system, tmp_path / "cache", inputs_dir=offline)
    assert unpacked is not None
    (archive,) = (tmp_path / "cache" / "inputs").glob("*-benchTEST.zip")
    modes = (_mode(archive), _mode(unpacked), _mode(unpacked / "benchTEST.tpr"))
    assert modes == (0o644, 0o755, 0o644)
