"""The LLVM toolchain block: clang + lld built at one commit of the user's llvm-project.

Built with BuildKit cache mounts (ccache and the build tree), so the next commit
recompiles only what changed. The source is a git URL fetched in the build, or a local
checkout sent as a `git archive` (of the working tree, when dirty).
Template: `toolchain-llvm`; tag: `gmxbench-toolchain:<platform>-llvm-<hash>[-dirty-<diff>]`.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from orchestrator.core import engine
from orchestrator.core.engine import Client
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.images import builder, toolchain
from orchestrator.images.catalog import inputs_key
from orchestrator.images.gitsource import ResolvedCommit, is_url, resolve_commit
from orchestrator.images.render import render
from orchestrator.platforms import active
from orchestrator.platforms.base import Compiler

TEMPLATE = "toolchain-llvm"
#: What the LLVM toolchains are built for: the GPU backend and the host.
LLVM_TARGETS = "AMDGPU;X86"
EXAMPLE_LLVM = "d7fead0f"


def source_kind(source: str) -> Literal["git", "context"]:
    """A URL is fetched in the build (`git`); a local checkout arrives as a context tarball."""
    return "git" if is_url(source) else "context"


def prefix_for(short: str) -> str:
    return f"/opt/llvm-{short}"


def context(
    settings: Settings,
    *,
    builder_image: str,
    builder_id: str,
    commit: str,
    short: str,
    targets: str = LLVM_TARGETS,
) -> dict[str, Any]:
    """Template variables of `toolchain-llvm`.

    The build-tree cache is keyed by what configures the tree (builder image, targets),
    not by the commit: the next commit then recompiles only the files that changed.
    """
    key = hashlib.sha256(f"{builder_id}\0{targets}".encode()).hexdigest()[:12]
    return {
        "builder_image": builder_image,
        "llvm_source_kind": source_kind(settings.llvm_source),
        "llvm_source": settings.llvm_source,
        "llvm_commit": commit,
        "llvm_short": short,
        "llvm_prefix": prefix_for(short),
        "targets": targets,
        "build_cache": f"gmxbench-llvm-build-{active(settings).name}-{key}",
    }


def llvm_compiler(short: str, commit: str | None = None, dirty: bool = False) -> Compiler:
    """clang/clang++ of the toolchain at `short`; HIP goes through the same clang++."""
    bin_dir = f"{prefix_for(short)}/bin"
    return Compiler(
        name=f"llvm-{short}",
        cc=f"{bin_dir}/clang",
        cxx=f"{bin_dir}/clang++",
        hip=f"{bin_dir}/clang++",
        llvm_commit=commit or short,
        llvm_dirty=dirty,
    )


def example_compiler() -> Compiler:
    return llvm_compiler(EXAMPLE_LLVM)


def example_context(name: str, settings: Settings) -> dict[str, Any]:
    return context(
        settings,
        builder_image=builder.example_tag(settings),
        builder_id="sha256:" + "0" * 64,
        commit=EXAMPLE_LLVM + "0" * 32,
        short=EXAMPLE_LLVM,
    )


def resolve_llvm(settings: Settings, rev: str) -> ResolvedCommit:
    """`--llvm <commit>` in the configured source, or `--llvm <path>`: that working tree."""
    if rev == "." or Path(rev).expanduser().is_dir():
        return resolve_commit(str(Path(rev).expanduser().resolve()), ".")
    return resolve_commit(settings.llvm_source, rev)


def llvm_tag(settings: Settings, commit: ResolvedCommit) -> str:
    label = commit.label
    if commit.dirty and commit.diff_sha256:
        label += f"-{commit.diff_sha256[:8]}"  # each dirty state is its own toolchain
    return toolchain.tag_for(settings, f"llvm-{label}")


def ensure_toolchain_llvm(
    client: Client,
    settings: Settings,
    rev: str,
    *,
    rebuild: bool = True,
    emit: Emit = ignore,
) -> str:
    """Build (or reuse) clang+lld at an LLVM commit; returns the toolchain image tag."""
    commit = resolve_llvm(settings, rev)
    tag = llvm_tag(settings, commit)
    if engine.image(client, tag) is not None:
        emit(Message(f"toolchain image {tag} exists: reusing it"))
        return tag
    if not rebuild:
        raise UserError(
            f"--no-llvm-rebuild: no toolchain image {tag} exists yet. Run once without "
            f"--no-llvm-rebuild to build LLVM {commit.label}."
        )
    base = builder.ensure_builder(client, settings, emit)
    ctx = context(
        settings,
        builder_image=base.tag,
        builder_id=base.id,
        commit=commit.full + ("-dirty" if commit.dirty else ""),
        short=commit.label,
    )
    dockerfile = render(TEMPLATE, ctx)
    compiler = llvm_compiler(commit.label, commit.label, commit.dirty)
    with tempfile.TemporaryDirectory(prefix="gmxbench-llvm-") as tmp:
        files: dict[str, bytes | Path] = {}
        if ctx["llvm_source_kind"] == "context":
            files["llvm-src.tar"] = _source_tarball(Path(commit.source), commit, Path(tmp))
        emit(
            Message(
                f"building LLVM {commit.label} (hours the first time, minutes after one-file edits)"
            )
        )
        image_id = engine.build(client, dockerfile, what=tag, files=files, buildkit=True, emit=emit)
    key = inputs_key(TEMPLATE, dockerfile, commit.diff_sha256 or "")
    toolchain.finish(client, settings, image_id, tag, key, compiler, emit)
    return tag


def _source_tarball(checkout: Path, commit: ResolvedCommit, tmp: Path) -> Path:
    """`git archive` of the commit, or of the working tree (`git stash create`) when dirty."""
    tree = commit.full
    if commit.dirty:
        stash = subprocess.run(
            ["git", "-C", str(checkout), "stash", "create"], capture_output=True, text=True
        ).stdout.strip()
        tree = stash or commit.full
    out = tmp / "llvm-src.tar"
    proc = subprocess.run(
        ["git", "-C", str(checkout), "archive", "--format=tar", "-o", str(out), tree],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise UserError(
            f"git archive of {commit.label} in {checkout} failed: {proc.stderr.strip()}"
        )
    return out
