"""Every mistake in a bench's options is said in seconds, before anything is built.

`bench` runs as a user's shell runs it, with `DOCKER_HOST` pointing at no engine: an
option checked after the engine is asked (let alone after a build) would fail with the
engine's error instead of its own. The base of a comparison (a commit's parent, a working
tree's `HEAD`) is resolved in a real git repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mini_llvm import make_mini_llvm

from orchestrator.cli import build_parser
from orchestrator.cli.common import request_of
from orchestrator.core.errors import UsageError
from orchestrator.core.settings import load_settings
from orchestrator.images.gitsource import ResolvedCommit, base_of, resolve_commit
from orchestrator.workflows.bench_plan import BenchRequest, check_options, settle
from orchestrator.workflows.bisect import BisectRequest
from orchestrator.workflows.build import BuildRequest, CompilerSpec

REPO = Path(__file__).resolve().parent.parent
#: What a user would wait for, at most, to hear about a typo.
QUICK = 10.0


@pytest.fixture(scope="module")
def llvm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small llvm-project with two commits (the second changes a device flag)."""
    repo = make_mini_llvm(tmp_path_factory.mktemp("typo") / "llvm-project")
    repo.commit("second", device_flags=["-fno-unroll-loops"])
    return repo.path


def bench(llvm: Path, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    return command(llvm, tmp_path, "bench", *args)


def command(
    llvm: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`python -m orchestrator <args>` with no engine answering, as a user's shell runs it."""
    env = {
        **os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        "ORCH_RESULTS_DIR": str(tmp_path / "results"), "ORCH_LLVM_SOURCE": str(llvm),
        **(env or {}),
    }  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return proc, time.monotonic() - started


TYPOS = [
    (["--system", "watr"], "Unknown system 'watr'. Known systems: "),
    (["--alpha", "2"], "--alpha 2: the significance level lies between 0 and 1"),
    (["--alpha", "0"], "--alpha 0: the significance level lies between 0 and 1"),
    (["--threshold", "-1"], "--threshold -1: give a percentage of 0 or more"),
    (["--threshold", "nan"], "--threshold nan: give a percentage of 0 or more"),
    (["--steps", "-1"], "--steps -1: give a positive number of MD steps"),
    (["--steps", "0"], "--steps 0: give a positive number of MD steps"),
    (["--repeats", "x"], "--repeats 'x' is not understood"),
    (["--repeats", "auto:4"], "--repeats 'auto:4' is not understood"),
    (["--budget", "ten"], "--budget 'ten' (or ORCH_BENCH_BUDGET) is not understood"),
    (["--budget", "0m"], "--budget '0m' (or ORCH_BENCH_BUDGET) is not understood"),
    (["--llvm", "HEAD", "--package", "clang-16"], "Give at most one of --llvm, --toolchain"),
    (["--against", "stable", "--against-llvm", "HEAD"], "Give at most one of --against,"),
    (["--llvm", "no-such-commit"], "Commit 'no-such-commit' is not in the LLVM repository"),
    (["--llvm", "HEAD~1"], "is the first commit of"),
    (["--llvm", "HEAD", "--against-llvm", "nope"], "Commit 'nope' is not in the LLVM repository"),
    (["--gpu-arch", "gfx9x"], "--gpu-arch 'gfx9x'"),
    (["--executor", "lokal"], "argument --executor: invalid choice: 'lokal'"),
    (["--steps", "ten"], "argument --steps: invalid int value: 'ten'"),
    (
        ["--flags=-O2", "--llvm", "HEAD"],
        "Give at most one of --llvm, --toolchain, --package and --f",
    ),
    (["--flags=-O2 'x"], "--flags: the flags are not shell words"),
    (["--flags= "], "--flags needs the compiler flags to add"),
    (["--executor", "native", "--llvm", "HEAD"], "The native executor builds GROMACS with the s"),
    (["--executor", "native", "--against-package", "clang-16"], "so a package side cannot be"),
    (["--executor", "native", "--no-gmx-rebuild"], "--no-gmx-rebuild reuses dev-current"),
    (["--executor", "native", "--system", "bandwidth"], "bandwidth is a microbenchmark"),
]


@pytest.mark.parametrize(("args", "said"), TYPOS, ids=[" ".join(a) for a, _ in TYPOS])
def test_a_typo_fails_in_seconds_before_the_engine_is_asked(
    llvm: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    proc, seconds = bench(llvm, tmp_path, *args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "No Docker Engine" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # one paragraph
    assert seconds < QUICK, seconds
    assert not (tmp_path / "results" / "images").exists()  # nothing built, nothing recorded


BISECT_TYPOS = [
    (["--alpha", "1.5"], "--alpha 1.5: the significance level lies between 0 and 1"),
    (["--steps", "0"], "--steps 0: give a positive number of MD steps"),
    (["--system", "watr"], "Unknown system 'watr'"),
    (["--good", "HEAD", "--bad", "HEAD~1"], "is not an ancestor of --bad"),
    (["--good", "nope"], "'nope' is not a commit in"),
]


@pytest.mark.parametrize(("args", "said"), BISECT_TYPOS, ids=[" ".join(a) for a, _ in BISECT_TYPOS])
def test_a_bisect_typo_fails_in_seconds_before_the_engine_is_asked(
    llvm: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    ends = {"--good": "HEAD~1", "--bad": "HEAD"}
    for i, arg in enumerate(args):
        if arg in ends:
            ends[arg] = args[i + 1]
    rest = [a for i, a in enumerate(args) if a not in ends and (i == 0 or args[i - 1] not in ends)]
    proc, seconds = command(llvm, tmp_path, "bisect", "--good", ends["--good"], "--bad",
                            ends["--bad"], *rest)  # fmt: skip
    assert proc.returncode == 2 and said in proc.stderr, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "No Docker Engine" not in proc.stderr
    assert seconds < QUICK, seconds


def test_a_bisect_dry_run_plans_its_steps_without_the_engine(llvm: Path, tmp_path: Path) -> None:
    proc, _ = command(llvm, tmp_path, "bisect", "--good", "HEAD~1", "--bad", "HEAD",
                      "--repeats", "3", "--system", "water:3k", "--dry-run")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "--repeats 3: 4 pairs instead (ABBA order" in proc.stderr
    assert proc.stdout.startswith("plan (nothing is built or run):\n"), proc.stdout
    assert "1 commit after --good: about 1 step, each an LLVM build" in proc.stdout
    assert "4 pairs a step: — (no estimate: never run here)" in proc.stdout


BUILD_TYPOS = [
    (["stable", "--llvm", "HEAD"], "`build stable` uses the stable compiler; --llvm goes with"),
    (["dev", "--llvm", "HEAD", "--package", "clang-16"], "Give one compiler at most"),
    (["toolchain"], "`build toolchain` needs --package"),
    (["dev", "--llvm", "nope"], "Commit 'nope' is not in the LLVM repository"),
    (["dev", "--gpu-arch", "gfx9x"], "--gpu-arch 'gfx9x'"),
]


@pytest.mark.parametrize(("args", "said"), BUILD_TYPOS, ids=[" ".join(a) for a, _ in BUILD_TYPOS])
def test_a_build_typo_fails_in_seconds_before_the_engine_is_asked(
    llvm: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    proc, seconds = command(llvm, tmp_path, "build", *args)
    assert proc.returncode == 2 and said in proc.stderr, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "No Docker Engine" not in proc.stderr
    assert seconds < QUICK, seconds


def test_a_dry_run_needs_the_engine_only_to_look(llvm: Path, tmp_path: Path) -> None:
    """`--dry-run` checks everything first too, then asks the engine what exists."""
    proc, _ = bench(llvm, tmp_path, "--llvm", "HEAD", "--dry-run")
    assert proc.returncode == 1 and "No Docker Engine answers at unix://" in proc.stderr


def test_a_native_dry_run_plans_without_any_engine(llvm: Path, tmp_path: Path) -> None:
    """`--executor native`: the plan reads the native root, never an engine; a flags
    candidate is a stable build of its own, not a dev build."""
    root = tmp_path / "builds"
    proc, _ = command(llvm, tmp_path, "bench", "--executor", "native", "--flags=-O2",
                      "--dry-run", env={"ORCH_NATIVE_ROOT": str(root)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "baseline (stable): build GROMACS with the vendor compiler" in proc.stdout
    assert "candidate (flags -O2): build GROMACS with the stable compiler with these flags" in (
        proc.stdout
    )
    assert "No Docker Engine" not in proc.stderr and not root.exists()


def test_pairs_are_raised_to_what_a_verdict_needs_and_made_even() -> None:
    for given, pairs in ((1, 4), (2, 4), (3, 4), (5, 6), (4, 4)):
        req, notes = check_options(BenchRequest(repeats=given))
        assert req.repeats == pairs
        assert bool(notes) == (given != pairs), notes
    req, notes = check_options(BenchRequest(repeats=1))
    assert notes == ["--repeats 1: 4 pairs instead (a verdict needs at least 3 pairs)"]
    req, notes = check_options(BenchRequest(repeats=5))
    assert "ABBA order" in notes[0]
    assert check_options(BenchRequest(repeats="auto"))[0].repeats == "auto"


def test_a_commit_is_measured_against_its_parent_and_a_dirty_tree_against_head(
    llvm: Path, tmp_path: Path
) -> None:
    settings = load_settings(llvm_source=str(llvm), results_dir=tmp_path)
    head = resolve_commit(str(llvm), "HEAD")
    parent = resolve_commit(str(llvm), "HEAD~1")
    settled = settle(settings, BenchRequest(candidate=CompilerSpec("llvm", "HEAD")))
    assert settled.baseline.llvm == parent and settled.baseline.words == f"parent {parent.short}"
    assert settled.candidate is not None and settled.candidate.words == f"LLVM {head.short}"
    tree = CompilerSpec("llvm", str(llvm))
    clean = settle(settings, BenchRequest(candidate=tree))  # a clean tree is its HEAD commit
    assert clean.baseline.words == f"parent {parent.short}"
    (llvm / "new.cpp").write_text("// untracked: part of the change\n")
    try:
        dirty = settle(settings, BenchRequest(candidate=tree))
    finally:
        (llvm / "new.cpp").unlink()
    assert dirty.candidate is not None and dirty.candidate.llvm is not None
    assert dirty.candidate.llvm.dirty and dirty.baseline.words == f"HEAD {head.short}"
    assert dirty.baseline.llvm is not None and not dirty.baseline.llvm.dirty
    assert dirty.baseline.llvm.full == head.full and dirty.baseline.llvm_source == str(llvm)
    head_spec = CompilerSpec("llvm", "HEAD")
    other = settle(settings, BenchRequest(candidate=head_spec, baseline=CompilerSpec("stable")))
    assert other.baseline.stable and other.baseline.words == "stable"
    named = settle(settings, BenchRequest(candidate=head_spec, baseline=head_spec))
    assert named.baseline.llvm == head
    aa = settle(settings, BenchRequest())
    assert aa.candidate is None and aa.baseline.stable


def test_a_url_source_has_no_parent_to_find() -> None:
    remote = ResolvedCommit(source="https://example.invalid/llvm-project.git", full="a" * 40,
                            short="aaaaaaaa", dirty=False, label="aaaaaaaa")  # fmt: skip
    with pytest.raises(UsageError, match=r"cannot be known without a clone.*--against-llvm"):
        base_of(remote)


def test_each_sides_flags_become_one_compiler() -> None:
    """The parsed flags make the request its fields declare: one `CompilerSpec` a side
    (`--against stable` the stable image, another `--against` a GROMACS build), two
    refused where they are read, and each option's default the field's."""
    parser = build_parser()

    def bench(*args: str) -> BenchRequest:
        return request_of(BenchRequest, parser.parse_args(["bench", *args]))

    req = bench("--llvm", "HEAD", "--against", "stable", "--steps", "100")
    assert req.candidate == CompilerSpec("llvm", "HEAD") and req.baseline == CompilerSpec("stable")
    assert (req.steps, req.repeats, req.threshold_pct, req.alpha) == (100, "auto", 2.0, 0.05)
    assert bench("--against", "dev-x").baseline == CompilerSpec("build", "dev-x")
    assert bench("--against-package", "clang-16").baseline == CompilerSpec("package", "clang-16")
    assert bench().candidate is None and bench().baseline is None and bench() == BenchRequest()
    with pytest.raises(UsageError, match=r"\(got --against and --against-llvm\): they name"):
        bench("--against-llvm", "HEAD", "--against", "dev-x")
    ends = parser.parse_args(["bisect", "--good", "a", "--bad", "b", "--repeats", "5"])
    assert request_of(BisectRequest, ends) == BisectRequest(good="a", bad="b", repeats=5)
    build = request_of(BuildRequest, parser.parse_args(["build", "dev", "--from-build", "/x"]))
    assert build == BuildRequest(what="dev", compiler=CompilerSpec("tree", "/x"))
    with pytest.raises(ValueError, match="needs a name"):
        CompilerSpec("llvm")
