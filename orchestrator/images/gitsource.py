"""Resolve an LLVM revision in a configured source: a local checkout or a git URL.

* Local checkout: any revision `git rev-parse` knows (short or full hash, branch, tag).
  `.` (or a path to a checkout) means "the working tree as it is now": HEAD, marked
  dirty when it has uncommitted changes, new files that git does not ignore included
  (a new `.cpp` is part of the change under test).
* Git URL: `git ls-remote --heads --tags` only, no clone (llvm-project's other refs, its
  pull requests, number in the hundreds of thousands): branch and tag names, and hashes
  (full or abbreviated) of branch or tag tips. A full 40-hex hash that is no tip cannot be checked
  without fetching; it is accepted as given (`ResolvedCommit.verified` is False).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.idents import is_commit_id
from orchestrator.core.urls import without_userinfo

HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")
URLISH = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/\s]+@[^/\s]+:)", re.IGNORECASE)
TIMEOUT = 120
SHORT = 8


class ResolvedCommit(BaseModel):
    """One LLVM revision, as stamped on builds and results."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str  # checkout path or URL (credentials removed)
    full: str  # 40-hex commit
    short: str  # `git rev-parse --short=8` (longer when 8 is ambiguous)
    dirty: bool  # working tree with uncommitted changes or untracked, unignored files
    label: str  # "<short>" or "<short>-dirty"
    ref: str | None = None  # e.g. refs/heads/main when resolved through a ref
    diff_sha256: str | None = None  # of the changes when dirty (see `diff_digest`)
    verified: bool = True  # False: a remote hash that is no ref tip, taken as given


def is_url(source: str) -> bool:
    """A repository to fetch (`scheme://…`, `user@host:path`), not a local checkout."""
    return bool(URLISH.match(source))


def display_source(source: str) -> str:
    """`source` without credentials (`https://user:token@host/...` → `https://host/...`)."""
    return without_userinfo(source)


def credential_line(url: str) -> str | None:
    """What git's `store` credential helper reads for `url`'s user-info, or None.

    The build container fetches the URL without it and reads this from a file removed
    before `docker commit`: arguments, environment and labels are all kept in the image.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or parts.password is None:
        return None
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[0]}@{host}\n"


def refuse_option(value: str, what: str, fix: str) -> str:
    """`value`, unless git (or any command) could take it for an option: it starts with `-`."""
    if value.startswith("-"):
        raise UsageError(
            f"{what} {value!r} starts with '-', so git would read it as an option, not a "
            f"name. {fix}"
        )
    return value


def checked_commit(value: str, where: str) -> str:
    """An LLVM commit read from an image label or a record, checked to be one before git
    sees it (`--output=…` would otherwise be an option of `git show`)."""
    if not is_commit_id(value):
        raise UserError(
            f"The LLVM commit {value[:80]!r} in {where} is not a commit hash, so it was not "
            "used. The label or record was not written by gmxbench, or was altered: rebuild "
            "the image or re-import the results from a trusted source."
        )
    return value


def git(
    args: list[str],
    cwd: Path | None = None,
    check: bool = True,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C",
        **(env or {}),
    }  # fmt: skip
    try:
        result = subprocess.run(
            ["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True,
            timeout=TIMEOUT, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        raise UserError(
            "git is not installed; install it (apt-get install -y git) and run again."
        ) from None
    except subprocess.TimeoutExpired:
        raise UserError(f"git {args[0]} took longer than {TIMEOUT} s; check the source.") from None
    if check and result.returncode != 0:
        where = f" in {cwd}" if cwd else ""
        raise UserError(f"git {args[0]} failed{where}: {_last_line(result.stderr)}.")
    return result


def _last_line(data: bytes) -> str:
    lines = [line for line in data.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no message"


def _checkout(path: Path, shown: str) -> Path:
    """The top of the work tree containing `path`, or a UsageError."""
    if not path.is_dir():
        raise UsageError(
            f"LLVM source {shown} does not exist. Set llvm_source (ORCH_LLVM_SOURCE) to an "
            "llvm-project checkout or a git URL."
        )
    result = git(["rev-parse", "--show-toplevel"], cwd=path, check=False)
    if result.returncode != 0:
        raise UsageError(
            f"LLVM source {shown} is not a git repository ({_last_line(result.stderr)}). "
            "Point llvm_source (ORCH_LLVM_SOURCE) at an llvm-project checkout or a git URL."
        )
    return Path(result.stdout.decode().strip())


def _is_path(text: str) -> bool:
    return text == "." or (
        ("/" in text or text.startswith(("~", "."))) and Path(text).expanduser().is_dir()
    )


def resolve_commit(source: str, rev: str) -> ResolvedCommit:
    """Resolve `rev` in `source` (checkout path or git URL), or raise a `UsageError`."""
    rev = rev.strip()
    if not rev:
        raise UsageError("Empty LLVM revision: give a commit hash, a branch, or '.'.")
    refuse_option(rev, "The LLVM revision", "Give a commit hash, a branch, a tag or '.'.")
    refuse_option(
        source, "The LLVM source (llvm_source, ORCH_LLVM_SOURCE)",
        "Set it to an llvm-project checkout or a git URL.",
    )  # fmt: skip
    if rev != "." and _is_path(rev):
        return _working_tree(Path(rev).expanduser(), rev)
    local = Path(source).expanduser()
    if local.is_dir() or not is_url(source):
        top = _checkout(local, source)
        if rev == ".":
            return _working_tree(top, source)
        return _local(top, source, rev)
    if rev == ".":
        raise UsageError(
            f"Revision '.' means a local working tree, but the LLVM source is the URL "
            f"{display_source(source)}. Give a commit or branch, or set llvm_source to a "
            "checkout."
        )
    return _remote(source, rev)


def _working_tree(path: Path, shown: str) -> ResolvedCommit:
    top = _checkout(path, shown)
    head = git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", "HEAD^{commit}"],
        cwd=top,
        check=False,
    )
    if head.returncode != 0:
        raise UsageError(f"The checkout {top} has no commits yet; commit something first.")
    full = head.stdout.decode().strip()
    status = git(["status", "--porcelain", "--untracked-files=normal"], cwd=top)
    dirty = bool(status.stdout.strip())
    return _make(str(top), full, _short(top, full), dirty, diff_digest(top) if dirty else None)


def _short(top: Path, full: str) -> str:
    result = git(["rev-parse", f"--short={SHORT}", "--end-of-options", full], cwd=top)
    return result.stdout.decode().strip()


def _make(
    source: str,
    full: str,
    short: str,
    dirty: bool = False,
    diff: str | None = None,
    ref: str | None = None,
    verified: bool = True,
) -> ResolvedCommit:
    return ResolvedCommit(
        source=display_source(source),
        full=full,
        short=short,
        dirty=dirty,
        label=f"{short}-dirty" if dirty else short,
        ref=ref,
        diff_sha256=diff,
        verified=verified,
    )


def _local(top: Path, source: str, rev: str) -> ResolvedCommit:
    at = f"{rev}^{{commit}}"
    result = git(["rev-parse", "--verify", "--quiet", "--end-of-options", at], cwd=top, check=False)
    if result.returncode != 0:
        probe = git(["rev-parse", "--verify", "--end-of-options", at], cwd=top, check=False)
        detail = _last_line(probe.stderr)
        hint = (
            "Give more characters of the hash."
            if "ambiguous" in detail
            else f"Check the hash, or fetch it first (git -C {top} fetch)."
        )
        raise UsageError(f"Commit {rev!r} is not in the LLVM repository {top} ({detail}). {hint}")
    full = result.stdout.decode().strip()
    ref = None
    # `rev` was refused above if it starts with '-' (this mode echoes --end-of-options).
    named = git(["rev-parse", "--symbolic-full-name", rev], cwd=top, check=False)
    if named.returncode == 0 and named.stdout.strip():
        ref = named.stdout.decode().strip().splitlines()[0]
    return _make(str(top), full, _short(top, full), ref=ref)


def _remote(url: str, rev: str) -> ResolvedCommit:
    shown = display_source(url)
    result = git(["ls-remote", "--heads", "--tags", "--", url], check=False)
    if result.returncode != 0:
        raise UsageError(
            f"Cannot list the LLVM repository {shown} "
            f"({_last_line(result.stderr).replace(url, shown)}). Check "
            "the URL and the network, or set llvm_source to a local checkout."
        )
    refs: dict[str, str] = {}
    for line in result.stdout.decode().splitlines():
        sha, _, name = line.partition("\t")
        if name.endswith("^{}"):  # peeled tag: the commit, preferred over the tag object
            refs[name[:-3]] = sha
        else:
            refs.setdefault(name, sha)
    for name in (rev, f"refs/heads/{rev}", f"refs/tags/{rev}"):
        if name in refs:
            return _make(url, refs[name], refs[name][:SHORT], ref=name)
    if HEX.match(rev):
        prefix = rev.lower()
        matches = {sha for sha in refs.values() if sha.startswith(prefix)}
        if len(matches) == 1:
            full = matches.pop()
            ref = next(name for name, sha in sorted(refs.items()) if sha == full)
            return _make(url, full, full[:SHORT], ref=ref)
        if len(matches) > 1:
            raise UsageError(
                f"Commit {rev!r} is ambiguous in {shown}; give more characters of the hash."
            )
        if len(prefix) == 40:
            return _make(url, prefix, prefix[:SHORT], verified=False)
    raise UsageError(
        f"Commit {rev!r} is not a branch, tag or branch/tag tip of the LLVM repository "
        f"{shown}. Without a clone only tips can be resolved: give the full 40-character "
        "hash, or set llvm_source to a local checkout that has the commit."
    )


def diff_digest(path: Path | str) -> str | None:
    """sha256 of the working tree's changes, None when clean: `git diff HEAD` of tracked
    files plus the name and blob id of every untracked file git does not ignore (hashed,
    not written: resolving a revision leaves the repository as it was)."""
    top = _checkout(Path(path).expanduser(), str(path))
    diff = git(["diff", "HEAD", "--no-ext-diff", "--no-color", "--binary"], cwd=top)
    listed = git(["ls-files", "--others", "--exclude-standard", "-z"], cwd=top).stdout
    names = [name for name in listed.split(b"\0") if name]
    if not diff.stdout and not names:
        return None
    digest = hashlib.sha256(diff.stdout)
    if names:
        blobs = git(["hash-object", "--stdin-paths"], cwd=top, stdin=b"\n".join(names) + b"\n")
        for name, blob in zip(names, blobs.stdout.split(), strict=True):
            digest.update(b"\0untracked\0" + name + b"\0" + blob)
    return digest.hexdigest()


def base_of(commit: ResolvedCommit) -> ResolvedCommit:
    """What a change is measured against: a working tree's `HEAD` (its uncommitted edits
    are the change), else the commit's first parent (the commit is the change).

    Only a local checkout knows parents; for a URL the caller names the base."""
    if is_url(commit.source):
        raise UsageError(
            f"The LLVM source {commit.source} is a URL, and the parent of {commit.label} "
            "cannot be known without a clone. Name the base with --against-llvm <commit> "
            "(or --against stable), or set llvm_source (ORCH_LLVM_SOURCE) to a local checkout."
        )
    top = Path(commit.source)
    if commit.dirty:
        return _make(str(top), commit.full, commit.short, ref="HEAD")
    first = f"{commit.full}^1"
    parent = git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", first], cwd=top, check=False
    )
    if parent.returncode != 0:
        raise UsageError(
            f"LLVM {commit.label} is the first commit of {top}: it has no parent to compare "
            "with. Name the base with --against-llvm <commit> or --against stable."
        )
    full = parent.stdout.decode().strip()
    return _make(str(top), full, _short(top, full))
