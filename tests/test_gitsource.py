"""Commit resolution against real git repositories made in tmp_path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.images.gitsource import diff_digest, display_source, resolve_commit


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "llvm-project"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.cpp").write_text("int a;\n")
    git(path, "add", "a.cpp")
    git(path, "commit", "-q", "-m", "first")
    git(path, "tag", "-a", "v1", "-m", "tag v1")
    (path / "a.cpp").write_text("int a = 2;\n")
    git(path, "commit", "-q", "-am", "second")
    return path


def test_short_and_full_hash(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD~1")
    for rev in (first, first[:7], first[:12].upper()):
        resolved = resolve_commit(str(repo), rev)
        assert resolved.full == first
        assert resolved.short == git(repo, "rev-parse", "--short=8", first)
        assert len(resolved.short) >= 8
        assert resolved.label == resolved.short and not resolved.dirty
        assert resolved.source == str(repo)


def test_branch_and_tag(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    main = resolve_commit(str(repo), "main")
    assert main.full == head and main.ref == "refs/heads/main"
    assert resolve_commit(str(repo), "v1").full == git(repo, "rev-parse", "HEAD~1")


def test_named_commit_is_clean_even_in_a_dirty_tree(repo: Path) -> None:
    (repo / "a.cpp").write_text("changed\n")
    resolved = resolve_commit(str(repo), "HEAD")
    assert not resolved.dirty and resolved.diff_sha256 is None


def test_working_tree_dot_and_path(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = git(repo, "rev-parse", "HEAD")
    clean = resolve_commit(str(repo), ".")
    assert clean.full == head and not clean.dirty and clean.label == clean.short
    assert diff_digest(repo) is None

    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")
    head = git(repo, "rev-parse", "HEAD")
    (repo / "build.log").write_text("ignored\n")
    assert not resolve_commit(str(repo), ".").dirty  # an ignored file is not a change

    # A new file is part of the change under test (a new pass is a new .cpp).
    (repo / "NewPass.cpp").write_text("int p = 1;\n")
    untracked = resolve_commit(str(repo), ".")
    assert untracked.dirty and untracked.diff_sha256 == diff_digest(repo) is not None
    (repo / "NewPass.cpp").write_text("int p = 2;\n")
    assert diff_digest(repo) != untracked.diff_sha256  # its content counts, not its name
    (repo / "NewPass.cpp").unlink()

    (repo / "a.cpp").write_text("int a = 3;\n")
    dirty = resolve_commit(str(repo), ".")
    assert dirty.dirty and dirty.full == head
    assert dirty.label == f"{dirty.short}-dirty"
    assert dirty.diff_sha256 == diff_digest(repo) is not None

    (repo / "a.cpp").write_text("int a = 4;\n")
    assert diff_digest(repo) != dirty.diff_sha256  # two dirty states are told apart

    # A path as the revision: that checkout's working tree, whatever the source.
    by_path = resolve_commit("https://example.invalid/llvm.git", str(repo))
    assert by_path.dirty and by_path.source == str(repo)
    monkeypatch.chdir(repo.parent)
    assert resolve_commit("elsewhere", "./llvm-project").full == head
    monkeypatch.chdir(repo / "")
    assert resolve_commit(".", ".").dirty


def test_unknown_commit(repo: Path) -> None:
    with pytest.raises(UsageError) as err:
        resolve_commit(str(repo), "deadbeef")
    assert "'deadbeef'" in err.value.message and str(repo) in err.value.message
    assert err.value.exit_code == 2
    with pytest.raises(UsageError, match="not in the LLVM repository"):
        resolve_commit(str(repo), "no-such-branch")


def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match="is not a git repository") as err:
        resolve_commit(str(plain), "HEAD")
    assert str(plain) in err.value.message
    with pytest.raises(UsageError, match="is not a git repository"):
        diff_digest(plain)
    with pytest.raises(UsageError, match="does not exist"):
        resolve_commit(str(tmp_path / "missing"), "HEAD")


def test_remote_url_via_ls_remote(repo: Path) -> None:
    url = repo.as_uri()  # file:///.../llvm-project
    head = git(repo, "rev-parse", "HEAD")
    first = git(repo, "rev-parse", "HEAD~1")

    main = resolve_commit(url, "main")
    assert main.full == head and main.short == head[:8] and main.ref == "refs/heads/main"
    assert main.source == url and not main.dirty and main.verified
    assert resolve_commit(url, head[:10]).full == head  # abbreviated hash of a tip
    assert resolve_commit(url, "v1").full == first  # annotated tag → the commit
    assert resolve_commit(url, first).full == first  # tip of tag v1 (peeled)

    with pytest.raises(UsageError) as err:
        resolve_commit(url, "deadbeef")
    assert "'deadbeef'" in err.value.message and url in err.value.message

    unverified = resolve_commit(url, "ab" * 20)
    assert unverified.full == "ab" * 20 and not unverified.verified

    with pytest.raises(UsageError, match="local working tree"):
        resolve_commit(url, ".")


def test_remote_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="Cannot list the LLVM repository"):
        resolve_commit((tmp_path / "nothing").as_uri(), "main")


def test_credentials_are_not_shown() -> None:
    assert (
        display_source("https://user:tok@github.com/x/llvm.git") == "https://github.com/x/llvm.git"
    )
    assert display_source("/home/me/llvm-project") == "/home/me/llvm-project"
