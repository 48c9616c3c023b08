"""The console: how library events look to a person, streamed (`--verbose`, and any
console made outside the CLI) or summarised, on a terminal (rich bars) and off one
(plain lines, no control codes)."""

from __future__ import annotations

import gzip
import io
import re
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import build_parser
from orchestrator.cli import console as console_mod
from orchestrator.cli.console import Console
from orchestrator.cli.meters import BuildMeter, RunMeter, clock, short_step
from orchestrator.core.events import (
    BuildEnded,
    BuildOutput,
    BuildStarted,
    BuildStep,
    Caution,
    Folded,
    Message,
    Output,
    RunNext,
    Step,
    Transfer,
)
from orchestrator.core.settings import load_settings
from orchestrator.runs.hostinfo import HostInfo, HostNoise
from orchestrator.runs.runner import RunEnded, RunStarted
from orchestrator.store.records import ImageRef, RunResult

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # any control code but \t and \n
STEPS = 1119
WHAT = "gromacs:stable-cpu-gcc12"


def test_events_become_lines() -> None:
    out = io.StringIO()
    console = Console(load_settings(), out)
    console(Message("built gromacs:x"))
    console(Step("GROMACS stable image"))
    console(Caution("CPU governor is 'powersave'"))
    console(Output("step 100\r"))
    console.error("run x did not finish")
    assert out.getvalue() == (
        "built gromacs:x\n[00:00] GROMACS stable image\nwarning: CPU governor is 'powersave'\n"
        "step 100\rerror: run x did not finish\n"
    )


def test_transfers_print_every_ten_percent_off_a_terminal() -> None:
    out = io.StringIO()
    console = Console(load_settings(), out)
    total = 100 * 2**20
    for done in range(0, total + 1, total // 40):
        console(Transfer("benchMEM.zip", done, total))
    console(Transfer("benchMEM.zip", total, total, finished=True))
    lines = out.getvalue().splitlines()
    assert [line.split()[3] for line in lines] == [f"{p}%" for p in range(10, 101, 10)]
    assert all(line.startswith("  benchMEM.zip: ") for line in lines)
    console(Transfer("unknown.tgz", 5 * 2**20, None, finished=True))
    assert out.getvalue().splitlines()[-1].startswith("  unknown.tgz: 5.0 MiB ")


# A build as BuildKit's plain log shows it: a real cold GROMACS build's whole log
# (`tests/data/build_logs/`), its steps, apt's chatter, cmake, ninja's [n/N], the install.

COLD_LOG = (
    Path(__file__).parent / "data" / "build_logs" / "gromacs__stable-cpu-gcc12.cold.build.log.gz"
)
_HEADER = re.compile(r"^#\d+ \[")


def _build(console: Console, log: Path, *, on_half: Any = None, tick: Any = None) -> None:
    console(Message(f"building {WHAT} with gcc 12"))
    console(BuildStarted(f"building {WHAT}", what=WHAT, log=log))
    for line in gzip.decompress(COLD_LOG.read_bytes()).decode().splitlines():
        console(BuildStep(line) if _HEADER.match(line) else BuildOutput(line))
        counted = f"/{STEPS}] " in line
        if tick is not None:
            tick(1.0 if counted else 0.05)
        if counted and f" [{STEPS // 2}/{STEPS}] " in line and on_half is not None:
            on_half()
    console(BuildEnded(f"built {WHAT} as sha256:0123 in 1200.0 s", what=WHAT, log=log,
                       seconds=1200.0))  # fmt: skip
    # a label-only build (no log) says nothing at all
    console(BuildStarted(f"building labels of {WHAT}", what=f"labels of {WHAT}"))
    console(BuildStep("Step 1/2 : FROM sha256:0123"))
    console(BuildEnded(f"built labels of {WHAT} as sha256:4567 in 0.3 s", what=f"labels of {WHAT}"))


class Clock:
    """time.monotonic, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def test_a_build_off_a_terminal_says_where_it_is_every_tenth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    out = io.StringIO()
    with Console(load_settings(), out, verbose=False) as console:
        _build(console, tmp_path / "x.build.log", tick=clock.tick)
    text = out.getvalue()
    assert not CONTROL.search(text), "no control codes off a terminal"
    lines = text.splitlines()
    assert lines[:2] == [f"building {WHAT} with gcc 12", f"  log: {tmp_path / 'x.build.log'}"]
    progress = lines[2:-1]
    # ninja's last line is [1118/1119] (the install edge): 90% is the last tenth said
    assert [line.split()[1] for line in progress] == [f"{p}%" for p in range(10, 91, 10)]
    assert progress[0].startswith(f"  {WHAT}: 10% [112/{STEPS}], ")
    assert "elapsed, about " in progress[0] and progress[0].endswith(" left")
    assert lines[-1] == f"built {WHAT} as sha256:0123 in 1200.0 s"
    assert len(lines) == 12  # a real log's 2,000 lines (1,119 compiles, apt, cmake): twelve


def test_a_quiet_build_off_a_terminal_says_its_step_every_few_minutes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    out = io.StringIO()
    with Console(load_settings(), out, verbose=False) as console:
        console(BuildStarted("building b", what="b", log=tmp_path / "b.log"))
        console(BuildStep("Step 4/4 : RUN apt-get update  &&  apt-get install -y cmake"))
        for n in range(1000):  # a line a second: 1000 s
            clock.tick(1.0)
            console(BuildOutput(f"Unpacking thing-{n} ..."))
    lines = out.getvalue().splitlines()
    step = "Step 4/4 : RUN apt-get update && apt-get install -y cmake"  # spaces squeezed
    assert lines[1] == f"  b: {step}, 5:00 elapsed"
    assert len(lines) == 1 + 3 + 1  # the log, every 300 s, and stopped (never ended)
    assert lines[-1] == f"  b: stopped after 16:40; its log: {tmp_path / 'b.log'}"


def test_a_build_on_a_terminal_is_a_bar(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(load_settings(), out, verbose=False, tty=True)

    def drawn() -> None:  # rich redraws four times a second, from its own thread
        deadline = time.monotonic() + 10
        while f"{STEPS // 2}/{STEPS}" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)

    with console:
        _build(console, tmp_path / "x.build.log", on_half=drawn)
    text = out.getvalue()
    assert "\x1b[" in text, "a terminal gets control codes: the bar is drawn in place"
    assert f"{STEPS // 2}/{STEPS}" in text and "━" in text
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    assert f"  log: {tmp_path / 'x.build.log'}" in plain
    assert f"built {WHAT} as sha256:0123 in 1200.0 s" in plain
    assert "Get:1" not in plain and "Building CXX" not in plain  # the log is the file's


def test_verbose_streams_every_build_line(tmp_path: Path) -> None:
    out = io.StringIO()
    with Console(load_settings(), out, verbose=True) as console:
        _build(console, tmp_path / "x.build.log")
    lines = out.getvalue().splitlines()
    assert f"  log: {tmp_path / 'x.build.log'}" in lines
    assert f"#9 574.7 [1118/{STEPS}] Install the project..." in lines
    assert len(lines) > STEPS + 800
    assert f"built labels of {WHAT} as sha256:4567 in 0.3 s" in lines  # as before


# Runs: a line each, with ns/day and the noise flag; a failed one with its log's tail.


def _result(run_id: str, **update: Any) -> RunResult:
    result = RunResult(
        run_id=run_id, build="stable", system="water:3k:pme", tag="t", platform="cpu",
        timestamp="2026-11-23T00:00:00+00:00", image=ImageRef(tag="gromacs:stable", id="sha256:0"),
        host=HostInfo(hostname="h", kernel="k"), command=["gmx", "mdrun"], steps=1000,
    )  # fmt: skip
    return result.model_copy(update=update)


def _noise(*warnings: str) -> HostNoise:
    return HostNoise(
        samples=3, seconds=40.0, cpu_count=2, run_threads=2, other_cpus=0.8,
        other_cpus_max=1.0, warnings=list(warnings),
    )  # fmt: skip


def _runs(console: Console) -> None:
    for n, noise in ((1, _noise()), (2, _noise("other processes used 0.80 CPUs (peak 1.0)"))):
        console(Step(f"pair {n} of 3–10, baseline: stable on water"))
        console(Caution("CPU frequency governor is 'powersave'"))  # every run says it
        run = _result(f"stable__water__aa-r{n}")
        console(RunStarted(f"{run.run_id} started", run))
        console(Output("Command line:\n  gmx mdrun -v\nstep 500, will finish at noon\r"))
        console(Output("step 1000, remaining wall clock time: 0 s\n"))
        done = {"finished": True, "ns_per_day": 12.345, "duration_seconds": 41.0, "noise": noise}
        console(RunEnded(f"{run.run_id} ended", run.model_copy(update=done)))
    failed = _result("stable__water__aa-r3", failure="mdrun exited with code 1",
                     duration_seconds=3.0)  # fmt: skip
    console(RunStarted("started", failed))  # no step named it
    console(RunEnded("ended", failed, "Fatal error:\nLINCS warnings"))
    console(Step("diff"))


def test_a_run_is_a_line_with_its_ns_per_day_and_noise_flag(tmp_path: Path) -> None:
    out = io.StringIO()
    settings = load_settings(results_dir=tmp_path)
    with Console(settings, out, verbose=False) as console:
        _runs(console)
    text = out.getvalue()
    assert not CONTROL.search(text)
    assert text.splitlines() == [
        "warning: CPU frequency governor is 'powersave'",  # said once
        f"  run logs: {tmp_path}/<run id>/ (stdout.log, stderr.log, topol.log)",
        "[00:00] pair 1 of 3–10, baseline: stable on water: 12.35 ns/day in 0:41, quiet "
        "[stable__water__aa-r1]",
        "[00:00] pair 2 of 3–10, baseline: stable on water: 12.35 ns/day in 0:41, "
        "noisy: other processes used 0.80 CPUs [stable__water__aa-r2]",
        "[00:00] stable__water__aa-r3: FAILED after 0:03: mdrun exited with code 1",
        "    Fatal error:",
        "    LINCS warnings",
        f"  its logs: {tmp_path / 'stable__water__aa-r3'}/",
        "[00:00] diff",  # said when the console closes: no run came
    ]


def _pair(console: Console, n: int, *noisy: str, fail: bool = False) -> None:
    """Pair `n` of a bench through the console as the local executor announces it: each
    side's `RunNext` with its line, then its run; `noisy` names the sides that shared the
    machine, `fail` fails the second run."""
    for k, side in enumerate(("baseline", "candidate") if n % 2 else ("candidate", "baseline")):
        folded = Folded(f"pair {n} of 6–10 on water", side, 2)
        console(RunNext(f"pair {n} of 6–10, {side}: stable on water", folded))
        run = _result(f"stable__water__{'kernel-baseline-' if side == 'baseline' else ''}aa-r{n}")
        console(RunStarted(f"{run.run_id} started", run))
        console(Output("step 500, will finish at noon\r"))
        if fail and k == 1:
            failed = {"duration_seconds": 3.0, "failure": "mdrun exited with code 1"}
            console(RunEnded(f"{run.run_id} ended", run.model_copy(update=failed), "Fatal"))
            return
        why = ["other processes used 0.80 CPUs (peak 1.0)"] if side in noisy else []
        done = {"finished": True, "ns_per_day": 12.345 if side == "baseline" else 12.0,
                "duration_seconds": 41.0, "noise": _noise(*why)}  # fmt: skip
        console(RunEnded(f"{run.run_id} ended", run.model_copy(update=done)))


def test_a_pair_is_one_line_with_both_sides(tmp_path: Path) -> None:
    """The two runs of a bench's pair are one line when the second ends: what each side
    measured, which shared the machine, and both run ids (where their logs are)."""
    out = io.StringIO()
    with Console(load_settings(results_dir=tmp_path), out, verbose=False) as console:
        _pair(console, 1)
        _pair(console, 2, "candidate")
    assert out.getvalue().splitlines() == [
        f"  run logs: {tmp_path}/<run id>/ (stdout.log, stderr.log, topol.log)",
        "[00:00] pair 1 of 6–10 on water: baseline 12.35 ns/day in 0:41, candidate 12 ns/day "
        "in 0:41; quiet [stable__water__kernel-baseline-aa-r1, stable__water__aa-r1]",
        "[00:00] pair 2 of 6–10 on water: candidate 12 ns/day in 0:41, baseline 12.35 ns/day "
        "in 0:41; noisy: candidate: other processes used 0.80 CPUs "
        "[stable__water__aa-r2, stable__water__kernel-baseline-aa-r2]",
    ]


def test_a_pair_not_whole_says_what_ran_of_it(tmp_path: Path) -> None:
    """A pair whose second run fails says its first run's number, then the failure; one
    the command left half way (Ctrl-C) says its finished run when the console closes."""
    out = io.StringIO()
    with Console(load_settings(results_dir=tmp_path), out, verbose=False) as console:
        _pair(console, 1, fail=True)
        console(RunNext("pair 2 of 6–10, candidate: stable on water",
                        Folded("pair 2 of 6–10 on water", "candidate", 2)))  # fmt: skip
        run = _result("stable__water__aa-r2")
        console(RunStarted("started", run))
        console(RunEnded("ended", run.model_copy(update={"finished": True, "ns_per_day": 9.0})))
    lines = out.getvalue().splitlines()
    assert lines[1:] == [
        "[00:00] pair 1 of 6–10 on water: baseline 12.35 ns/day in 0:41; quiet (1 of 2 runs) "
        "[stable__water__kernel-baseline-aa-r1]",
        "[00:00] pair 1 of 6–10, candidate: stable on water: FAILED after 0:03: mdrun exited "
        "with code 1 [stable__water__aa-r1]",
        "    Fatal",
        f"  its logs: {tmp_path / 'stable__water__aa-r1'}/",
        "[00:00] pair 2 of 6–10 on water: candidate 9 ns/day in 0:00; quiet (1 of 2 runs) "
        "[stable__water__aa-r2]",
    ]


def test_the_most_pairs_a_bench_runs_are_as_many_lines(tmp_path: Path) -> None:
    """However busy the host, the runs of a bench cost a line a pair: the default plan's
    most (twice its 10 pairs, every run shared the machine) is 20 lines, not 40."""
    from orchestrator.verdict.paired import AUTO_MOST

    out = io.StringIO()
    with Console(load_settings(results_dir=tmp_path), out, verbose=False) as console:
        for n in range(1, 2 * AUTO_MOST + 1):
            _pair(console, n, "baseline", "candidate")
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 + 2 * AUTO_MOST, lines  # the run logs line, then a line a pair
    for line in lines[1:]:
        assert "baseline: other processes" in line and "candidate: other processes" in line


def test_a_run_on_a_terminal_draws_its_steps(tmp_path: Path) -> None:
    out = io.StringIO()
    with Console(load_settings(results_dir=tmp_path), out, verbose=False, tty=True) as console:
        _runs(console)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "pair 1 of 3–10, baseline: stable on water: 12.35 ns/day in 0:41, quiet" in plain
    assert "gmx mdrun -v" not in plain  # mdrun's output is the run's logs'


def test_a_step_no_run_follows_is_said_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console_mod, "HOLD_SECONDS", 0.05)
    out = io.StringIO()
    console = Console(load_settings(), out, verbose=False)
    console(Step("diff"))
    deadline = time.monotonic() + 5
    while not out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert out.getvalue() == "[00:00] diff\n"
    console.close()
    assert out.getvalue() == "[00:00] diff\n"


def test_verbose_streams_mdrun_as_before(tmp_path: Path) -> None:
    out = io.StringIO()
    with Console(load_settings(results_dir=tmp_path), out) as console:
        _runs(console)
    text = out.getvalue()
    assert "gmx mdrun -v\nstep 500, will finish at noon\r" in text
    assert text.count("warning: CPU frequency governor") == 2


def test_meter_reads_ninja_and_make_and_ignores_buildah_stages() -> None:
    meter = BuildMeter("x", None)
    assert not meter.feed("[1/2] STEP 3/4: RUN make", now=0.0)  # buildah's stage, not ninja
    assert meter.feed("[ 10%] Building CXX object a.o", now=0.0)
    assert meter.counted() == "10%" and meter.fraction() == 0.1
    assert meter.feed("[ 55%] Building CXX object b.o", now=90.0)
    assert meter.left(now=90.0) == pytest.approx(90.0)  # 45 % in 90 s: 45 % more to do
    assert meter.feed("#12 3.4 [5/80] Linking CXX executable gmx", now=100.0)  # a new run
    assert meter.counted() == "5/80"
    assert not meter.feed("[1/3] Install the project...", now=101.0)  # a short one: kept
    assert meter.counted() == "5/80"
    run = RunMeter("pair 1", "b__w__t-r1", steps=2000)
    assert not run.feed("step 11: One or more water molecules can not be settled.", now=0.0)
    assert run.feed("\rstep 0\rstep 100, remaining wall clock time: 6 s", now=1.0)
    assert run.feed("\rstep 1100, will finish Wed Nov 25 05:41:40 2026", now=2.0)
    assert run.count.done == 1100 and run.left(now=2.0) == pytest.approx(0.9)
    assert clock(59) == "0:59" and clock(3723) == "1:02:03"
    assert short_step("#9 [stage-1 3/4] RUN  a \\\n   b", width=20) == "[stage-1 3/4] RUN a…"


def test_verbose_is_a_flag_of_every_command() -> None:
    parser = build_parser()
    assert not parser.parse_args(["bench"]).verbose
    assert parser.parse_args(["--verbose", "bench"]).verbose
    assert parser.parse_args(["bench", "-v"]).verbose
    assert parser.parse_args(["share", "save", "gromacs:x", "--verbose"]).verbose
