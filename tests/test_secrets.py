"""Secrets stay secret and untrusted strings are never options (issue 39, findings 3 and 4):
the attacks reproduced with real git, real files and the real CLI."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from mini_llvm import make_mini_llvm

from orchestrator.cli import main
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.files import DamagedRecord
from orchestrator.core.settings import GromacsSource, environment_of, load_settings
from orchestrator.images import gitsource
from orchestrator.images.gitsource import credential_line, display_source, resolve_commit
from orchestrator.images.provenance import ImageRecord
from orchestrator.store.database import Database, import_runs, shown
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.history import Sample, _dates, build_series, commit_dates
from orchestrator.workflows.bisect import _commit
from tests.test_store import _save

REPO = Path(__file__).resolve().parent.parent
TOKEN = "PLANTEDTOKEN123"
INJECTION = "--upload-pack=touch${IFS}X;false@h:x"


@pytest.fixture(scope="module")
def llvm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_mini_llvm(tmp_path_factory.mktemp("llvm") / "llvm-project").path


def test_an_option_as_the_llvm_source_is_refused_by_the_cli_and_runs_nothing(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "ORCH_PLATFORM": "cpu", "ORCH_LLVM_SOURCE": INJECTION,
           "PYTHONPATH": str(REPO)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "toolchain", "--llvm", "main"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and not (tmp_path / "X").exists()
    assert "Traceback" not in done.stderr
    assert "ORCH_LLVM_SOURCE" in done.stderr and "starts with '-'" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # one paragraph


def test_an_orchestrator_toml_here_gets_the_same_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "orchestrator.toml").write_text(f"llvm_source = {INJECTION!r}\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"LLVM_SOURCE.*starts with '-'"):
        load_settings()


def test_git_never_takes_the_source_as_an_option(
    llvm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git ls-remote -- <url>`: below the settings' check, git itself is told. Run in a
    clone, whose `origin` git would otherwise list with the planted upload-pack."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(llvm), str(clone)], check=True)
    monkeypatch.chdir(clone)
    with pytest.raises(UsageError, match="Cannot list the LLVM repository"):
        gitsource._remote(INJECTION, "main")
    assert not (clone / "X").exists()
    with pytest.raises(UsageError, match="starts with '-'"):
        resolve_commit(INJECTION, "main")
    assert not (clone / "X").exists()


def test_a_revision_that_is_an_option_is_refused(llvm: Path, tmp_path: Path) -> None:
    out = tmp_path / "written"
    for rev in (f"--output={out}", "-h"):
        with pytest.raises(UsageError, match="starts with '-'"):
            resolve_commit(str(llvm), rev)
        with pytest.raises(UsageError, match="starts with '-'"):
            _commit(llvm, rev)
    assert not out.exists()


def test_history_dates_only_commits_and_never_crashes_on_a_planted_one(
    llvm: Path, tmp_path: Path
) -> None:
    out = tmp_path / "written"
    head = subprocess.run(["git", "-C", str(llvm), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    dates = commit_dates(str(llvm), [f"--output={out}", "HEAD", head])
    assert set(dates) == {head} and not _written(tmp_path)  # `HEAD` is no commit id: not asked
    assert _dates_take_no_options(llvm, out) and not _written(tmp_path)
    samples = [
        Sample(run_id=f"r{i}", build="b", image_tag="t", image_id="sha256:0", llvm_commit=c,
               host="h", started=f"2026-01-0{i + 1}", value=1.0)
        for i, c in enumerate([f"--output={out}", head])
    ]  # fmt: skip
    series = build_series("s", "m", "u", True, samples, llvm_source=str(llvm))
    assert len(series.points) == 2 and not _written(tmp_path)


def _written(folder: Path) -> list[Path]:
    """What `git show --output=<folder>/written…` would have made."""
    return list(folder.glob("written*"))


def _dates_take_no_options(llvm: Path, out: Path) -> bool:
    """`git show` gets `--end-of-options`: an option reaching it is a revision, and fails."""
    return _dates(llvm, [f"--output={out}"]) is None


def test_a_label_or_record_whose_commit_is_an_option_is_refused(tmp_path: Path) -> None:
    bad = f"--output={tmp_path / 'written'}"
    labels = {"gmxbench.kind": "toolchain", "gmxbench.llvm_commit": bad}
    with pytest.raises(DamagedRecord, match="not an LLVM commit hash"):
        ImageRecord.from_labels("gmxbench-toolchain:x", "sha256:" + "0" * 64, labels)
    ok = ImageRecord.from_labels("t", "sha256:0", {**labels, "gmxbench.llvm_commit": "1a2b3c4d"})
    assert ok.llvm_commit == "1a2b3c4d"
    store = RunStore(tmp_path / "results")
    path = _save(store, "dev__water__planted", llvm_commit="abcdef12")
    record = path / "result.json"
    record.write_text(record.read_text().replace('"abcdef12"', f'"{bad}"'))
    done = import_runs(Database(f"sqlite:///{tmp_path / 'db.sqlite'}"), store)
    assert done.written == 0 and len(done.left_out) == 1
    assert "not an LLVM commit hash" in done.left_out[0], done.left_out


def test_credentials_are_shown_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"https://alice:{TOKEN}@git.example/llvm-project.git"
    monkeypatch.setenv("ORCH_LLVM_SOURCE", url)
    monkeypatch.setenv("ORCH_RESULTS_DIR", str(tmp_path))
    assert main(["settings"]) == 0
    printed = capsys.readouterr().out
    assert "https://git.example/llvm-project.git" in printed and TOKEN not in printed
    settings = load_settings()
    env = environment_of(settings)  # what a SLURM job script exports
    assert env["ORCH_LLVM_SOURCE"] == "https://git.example/llvm-project.git"
    assert display_source(url) == "https://git.example/llvm-project.git"
    assert credential_line(url) == f"https://alice:{TOKEN}@git.example\n"
    assert credential_line("https://git.example/llvm.git") is None
    monkeypatch.setenv("ORCH_LLVM_SOURCE", url + "\n")  # refused, and said without its token
    with pytest.raises(UsageError, match="control character") as refused:
        load_settings()
    assert TOKEN not in refused.value.message
    db = f"postgresql://alice@db.example/bench?password={TOKEN}&sslmode=require"
    assert TOKEN not in shown(db) and "sslmode=require" in shown(db)
    assert TOKEN not in shown(f"postgresql://alice:{TOKEN}@db.example/bench")


@pytest.mark.parametrize(
    ("url", "ref", "why"),
    [
        (f"git+https://alice:{TOKEN}@gitlab.example/gromacs.git", "main", "credentials"),
        ("git+https://gitlab.example/g.git;touch${IFS}X", "main", "plain URL"),
        ("git+--upload-pack=touch${IFS}X", "main", "plain URL"),
        ("git+https://gitlab.example/gromacs.git", "--output=/tmp/x", "not starting with '-'"),
    ],
)
def test_a_gromacs_source_is_one_word_without_credentials(url: str, ref: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        GromacsSource(url=url, ref=ref)


def test_a_commit_that_is_not_hex_never_reaches_git(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a commit hash"):
        gitsource.checked_commit("--output=/tmp/x", "the label gmxbench.llvm_commit")
    assert gitsource.checked_commit("1a2b3c4d-dirty", "a label") == "1a2b3c4d-dirty"


@pytest.mark.engine
def test_a_run_of_an_image_labelled_with_a_planted_commit_is_refused_before_it_starts(
    engine: Any, tmp_path: Path
) -> None:
    """The image is made here (a label on the base image): a shared archive could carry it."""
    from orchestrator.runs.runner import RunRequest, plan_run

    bad = f"--output={tmp_path / 'written'}"
    tag = f"gromacs:planted-{uuid.uuid4().hex[:8]}"
    dockerfile = f"FROM gmxbench-base/debian:bookworm\nLABEL gmxbench.llvm_commit={bad}\n"
    image, _ = engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True)
    try:
        settings = load_settings(platform="cpu", results_dir=tmp_path / "results")
        with pytest.raises(UserError, match="is not a commit hash"):
            plan_run(engine, settings, RunRequest(build=tag, system="water:3k"))
        assert not _written(tmp_path) and not (tmp_path / "results").exists()
    finally:
        engine.images.remove(image.id, force=True)
