"""The LLVM toolchain block: clang + lld built at one commit of the user's llvm-project.

Built with BuildKit cache mounts (ccache and the build tree), so the next commit
recompiles only what changed. The source is a git URL fetched in the build, or a local
checkout sent as a `git archive` (of the working tree, when dirty).
Template: `toolchain-llvm`; tag: `gmxbench-toolchain:<platform>-llvm-<hash>[-dirty-<diff>]`.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from orchestrator.core import engine
from orchestrator.core.engine import Client
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Event, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.images import builder, toolchain
from orchestrator.images.catalog import inputs_key
from orchestrator.images.gitsource import ResolvedCommit, is_url, resolve_commit
from orchestrator.images.provenance import build_log_path
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
        progress = NinjaProgress()

        def watch(event: Event) -> None:
            if isinstance(event, Message):
                progress.feed(event.text)
            emit(event)

        image_id = engine.build(
            client, dockerfile, what=tag, files=files, buildkit=True,
            log=build_log_path(settings.results_dir, tag), emit=watch,
        )  # fmt: skip
    if progress.seen:
        emit(Message(progress.summary()))
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


# ninja's progress lines as BuildKit's plain log shows them: `#12 3.4 [5/8] Linking …`.
_NINJA_STEP = re.compile(r"^(?:#\d+ \d+(?:\.\d+)? )?\[(\d+)/(\d+)\] (.+)$")
_NINJA_IDLE = re.compile(r"^(?:#\d+ \d+(?:\.\d+)? )?ninja: no work to do\.$")
_COMPILE = re.compile(r"^Building (?:C|CXX|ASM|HIP|CUDA) object (\S+)$")
_SHOWN = 10


class NinjaProgress:
    """How much of LLVM ninja rebuilt, read from its `[k/N] …` lines in the build log.

    This is the proof that a one-file edit rebuilt one file (plus what depends on it)
    and not LLVM: the user sees the step count and the sources compiled.
    """

    def __init__(self) -> None:
        self.idle = False
        self.compiled: dict[str, None] = {}  # in order, once each
        self._done, self._planned = 0, 0  # earlier ninja runs in the same log
        self._lines, self._step, self._of = 0, 0, 0  # the current run

    @property
    def steps(self) -> int:
        return self._done + self._lines

    @property
    def total(self) -> int:
        return self._planned + self._of

    @property
    def seen(self) -> bool:
        return self.idle or self.steps > 0

    def feed(self, text: str) -> None:
        if _NINJA_IDLE.match(text):
            self.idle = True
            return
        match = _NINJA_STEP.match(text)
        if match is None:
            return
        step, of = int(match[1]), int(match[2])
        # One line per step: a step is shown when it ends, except one that owns the
        # console (the install), shown when it starts. N may shrink within a run (restat).
        if step < self._step:  # ninja started again
            self._done, self._planned, self._lines = self.steps, self.total, 0
        self._lines, self._step, self._of = self._lines + 1, step, of
        compiled = _COMPILE.match(match[3])
        if compiled:
            source = re.sub(r"CMakeFiles/[^/]+\.dir/", "", compiled[1])
            self.compiled[re.sub(r"\.(o|obj)$", "", source)] = None

    def summary(self) -> str:
        """`ninja: 8 of 8 steps, compiled 2 files: a.cpp, b.cpp`, or `ninja: no work to do`."""
        if not self.steps:
            return "ninja: no work to do"
        files = list(self.compiled)
        text = f"ninja: {self.steps} of {self.total} steps, compiled "
        if not files:
            return text + "nothing"
        text += f"{len(files)} file{'s' if len(files) != 1 else ''}: "
        text += ", ".join(files[:_SHOWN])
        return text + (f" and {len(files) - _SHOWN} more" if len(files) > _SHOWN else "")
