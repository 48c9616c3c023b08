"""The LLVM toolchain block: clang + lld built at one commit of the user's llvm-project.

Built at the scale of a real llvm-project (2 GB, about 3,900 ninja steps): the clone,
the build tree and ccache live in a volume the tool owns (`llvm_workspace`), so a commit
costs what changed in it, not a 2 GB layer; the build runs in a container of the
`toolchain-llvm` environment image, and that container is committed as the toolchain
image, whose one new layer is the stripped distribution (`install-distribution-stripped`).
Tag: `gmxbench-toolchain:<platform>-llvm-<hash>[-dirty-<diff>]`.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator import engine
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Event, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client, ContainerBuildFailed, Image
from orchestrator.images import builder, llvm_workspace, toolchain
from orchestrator.images.catalog import inputs_key, probe
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.gitsource import (
    ResolvedCommit,
    credential_line,
    display_source,
    is_url,
    resolve_commit,
)
from orchestrator.images.provenance import label
from orchestrator.images.render import render, render_script
from orchestrator.platforms import active
from orchestrator.platforms.base import Compiler
from orchestrator.store.layout import build_log_path

TEMPLATE = "toolchain-llvm"
#: What the LLVM toolchains are built for: the GPU backend and the host.
LLVM_TARGETS = "AMDGPU;X86"
EXAMPLE_LLVM = "d7fead0f"
#: What the loop uses of LLVM (llvm/docs/BuildingADistribution.rst): the compilers, the
#: tools the codegen runs, and the two shared libraries they link.
COMPONENTS = (
    "clang", "clang-resource-headers", "clang-offload-bundler", "lld",
    "llvm-objdump", "llvm-readobj", "llvm-readelf", "LLVM", "clang-cpp",
)  # fmt: skip
#: Where LLVM installs in the build tree's configuration: one prefix for every commit
#: (a per-commit one would reconfigure), moved to `prefix_for(short)` after the install.
INSTALL_PREFIX = "/opt/llvm"
#: In the prefix: sha256 over its files, written by the build script (`Compiler.content_sha256`).
CONTENT_FILE = ".content-sha256"
CCACHE_SIZE = "20G"
#: On the build's container: the toolchain it makes (`runs clean` finds a dead one by it).
BUILD_LABEL = label("build")
#: Exit codes of the build script (images/toolchain-llvm.sh.j2).
LACKS_PREREQUISITES, DEVICE_LIBS_MISMATCH = 75, 76


def source_kind(source: str) -> Literal["git", "context"]:
    """A URL is fetched by the build; a local checkout is sent as a bundle."""
    return "git" if is_url(source) else "context"


def prefix_for(short: str) -> str:
    return f"/opt/llvm-{short}"


def context(
    settings: Settings, *, builder_image: str, builder_id: str, targets: str = LLVM_TARGETS
) -> dict[str, Any]:
    """Variables of the `toolchain-llvm` image and script: nothing per commit, so every
    commit shares one environment image and one workspace volume."""
    platform = active(settings)
    smoke = platform.build.device_smoke(settings)
    return {
        "builder_image": builder_image,
        "builder_id": builder_id,
        "targets": targets,
        "workspace": llvm_workspace.MOUNT,
        "credentials": f"{llvm_workspace.INBOX}/{llvm_workspace.CREDENTIALS}",
        "install_prefix": INSTALL_PREFIX,
        "components": ";".join(COMPONENTS),
        "ccache_size": CCACHE_SIZE,
        "gpu_arch": smoke.get("gpu_arch", ""),
        "rocm_path": smoke.get("rocm_path", ""),
        "device_libs": smoke.get("device_libs", ""),
        "code_object_flag": smoke.get("code_object_flag", ""),
    }


def configure_line(script: str) -> str:
    """The rendered script's `configure()` function: what defines a build tree."""
    start = script.index("configure() {")
    return script[start : script.index("\n}\n", start) + 2]


def workspace_volume(settings: Settings, environment: Environment, repository: str) -> str:
    """One volume per repository and build configuration (builder, configure line).

    A template change outside `configure()` keeps the volume, so it never costs a cold
    build; a change of the line or the builder is a new tree, as it must be. Two
    repositories (a test's stand-in, another clone) never share, or empty, a build tree.
    """
    ctx = environment.context
    parts = (ctx["builder_id"], ctx["targets"], configure_line(environment.script), repository)
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    return f"gmxbench-llvm-{active(settings).name}-{key[:12]}"


def _fetched(settings: Settings, commit: ResolvedCommit) -> bool:
    """The build fetches the commit from the configured URL (not a local checkout's)."""
    return is_url(commit.source) and source_kind(settings.llvm_source) == "git"


def repository_of(settings: Settings, commit: ResolvedCommit) -> str:
    """What clang names as its repository: the URL fetched, or the checkout's path."""
    return display_source(settings.llvm_source if _fetched(settings, commit) else commit.source)


def revision_of(commit: ResolvedCommit) -> str:
    """What clang names as its revision: the commit, `<commit>-dirty` for a working tree."""
    return commit.full + ("-dirty" if commit.dirty else "")


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
        settings, builder_image=builder.example_tag(settings), builder_id="sha256:" + "0" * 64
    )


def example_script(settings: Settings) -> str:
    """The build script as the example environment image carries it (golden tests)."""
    return render_script(TEMPLATE, example_context(TEMPLATE, settings))


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


@dataclass(frozen=True)
class Environment:
    """The image LLVM is built in, and what it was rendered from."""

    tag: str
    context: dict[str, Any]
    script: str  # the build script it carries
    key: str  # inputs key of its Dockerfile and script


def ensure_environment(client: Client, settings: Settings, emit: Emit = ignore) -> Environment:
    """The environment image (builder + ld.lld + the build script), built unless present."""
    base = builder.ensure_builder(client, settings, emit)
    ctx = context(settings, builder_image=base.tag, builder_id=base.id)
    dockerfile, script = render(TEMPLATE, ctx), render_script(TEMPLATE, ctx)
    key = inputs_key(TEMPLATE, dockerfile, script)
    tag = f"{toolchain.REPO}:{active(settings).name}-llvm-environment-{key[:12]}"
    environment = Environment(tag, ctx, script, key)

    def build() -> str:
        return engine.build(
            client, dockerfile, what=tag, files={"build-llvm.sh": script.encode()},
            log=build_log_path(settings.results_dir, tag), emit=emit,
        )  # fmt: skip

    block = Block[Environment](
        find=lambda: engine.image(client, tag),
        reuse=lambda _: environment,
        build=build,
        verify=lambda _: Stamp(None, [tag]),  # a tag alone: no record, nothing to check
        done=lambda *_: environment,
    )
    return ensure_image(client, block, emit)


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
    environment: Environment | None = None  # the build's, whose key is part of the inputs

    def reuse(_: Image) -> str:
        emit(Message(f"toolchain image {tag} exists: reusing it"))
        return tag

    def build() -> str:
        nonlocal environment
        if not rebuild:
            raise UserError(
                f"--no-llvm-rebuild: no toolchain image {tag} exists yet. Run once without "
                f"--no-llvm-rebuild to build LLVM {commit.label}."
            )
        emit(
            Message(
                f"building LLVM {commit.label} (hours the first time, minutes after one-file edits)"
            )
        )
        image_id, progress, environment = _run(client, settings, commit, tag, plan=False, emit=emit)
        if progress.seen:
            emit(Message(progress.summary()))
        return image_id

    def verify(image_id: str) -> Stamp:
        assert environment is not None
        key = inputs_key(environment.key, revision_of(commit), commit.diff_sha256 or "")
        compiler = llvm_compiler(commit.label, commit.label, commit.dirty)
        code, digest = probe(
            client, image_id, ["cat", f"{prefix_for(commit.label)}/{CONTENT_FILE}"]
        )
        if code != 0 or len(digest.strip()) != 64:
            raise UserError(
                f"The LLVM toolchain {tag} has no {CONTENT_FILE}: {digest.strip()[:200]}"
            )
        compiler.content_sha256 = digest.strip()
        return toolchain.stamp_for(client, settings, image_id, tag, key, compiler)

    block = Block[str](
        find=lambda: engine.image(client, tag),
        reuse=reuse,
        build=build,
        verify=verify,
        done=lambda *_: tag,
    )
    return ensure_image(client, block, emit)


def plan_toolchain_llvm(
    client: Client, settings: Settings, rev: str, *, emit: Emit = ignore
) -> NinjaProgress:
    """What building LLVM at `rev` would run, without building: the workspace's clone is
    brought to the commit and configured as a build would, then `ninja -n -d explain`."""
    commit = resolve_llvm(settings, rev)
    _image, progress, _environment = _run(
        client, settings, commit, llvm_tag(settings, commit) + "-plan", plan=True, emit=emit
    )
    return progress


def _run(
    client: Client, settings: Settings, commit: ResolvedCommit, tag: str, *, plan: bool,
    emit: Emit,
) -> tuple[str, NinjaProgress, Environment]:  # fmt: skip
    environment = ensure_environment(client, settings, emit)
    repository = repository_of(settings, commit)
    volume = workspace_volume(settings, environment, repository)
    if llvm_workspace.ensure_volume(client, volume, environment.context["builder_id"], repository):
        emit(Message(f"new LLVM workspace volume {volume}: this first build compiles all of LLVM"))
    progress = NinjaProgress()

    def watch(event: Event) -> None:
        if isinstance(event, Message):
            progress.feed(event.text)
        emit(event)

    with tempfile.TemporaryDirectory(prefix="gmxbench-llvm-") as tmp:
        image_id = _build(
            client, settings, commit, tag, environment.tag, volume, Path(tmp), watch, plan=plan
        )
    return image_id, progress, environment


def _build(
    client: Client, settings: Settings, commit: ResolvedCommit, tag: str,
    environment: str, volume: str, tmp: Path, emit: Emit, *, plan: bool,
) -> str:  # fmt: skip
    """Send what the clone lacks, run the build script, commit the container."""
    url = _fetched(settings, commit)
    scratch = None if url else llvm_workspace.Scratch(Path(commit.source), tmp)
    checkout = commit.full if scratch is None else llvm_workspace.checkout_commit(scratch, commit)
    have = set() if scratch is None else llvm_workspace.known_commits(client, environment, volume)
    llvm_workspace.sweep_orphans(client, volume, emit)
    for attempt in (1, 2):
        files: dict[str, bytes | Path] = {}
        # The URL without its user-info: the arguments are kept in the image's history.
        source = display_source(settings.llvm_source) if url else ""
        secret = credential_line(settings.llvm_source) if url else None
        if secret is not None:
            files[llvm_workspace.CREDENTIALS] = secret.encode()
        if scratch is not None and checkout not in have and scratch.lacks(checkout, have):
            bundle = scratch.bundle(checkout, have, tmp / f"{attempt}.bundle")
            files[llvm_workspace.BUNDLE] = bundle
            source = f"{llvm_workspace.INBOX}/{llvm_workspace.BUNDLE}"
            what = "the whole history" if not have else "the objects the clone lacks"
            emit(Message(f"bundle: {bundle.stat().st_size / 1e6:.3f} MB ({what})"))
        config = {
            "image": environment,
            "command": ["gmxbench-build-llvm", checkout, revision_of(commit),
                        prefix_for(commit.label), repository_of(settings, commit), source],
            "environment": {"GMXBENCH_LLVM_PLAN": "1"} if plan else {},
            "volumes": {volume: {"bind": llvm_workspace.MOUNT, "mode": "rw"}},
            "network_disabled": not url,
            "labels": {BUILD_LABEL: tag},
            "name": llvm_workspace.build_name(),
        }  # fmt: skip
        try:
            return engine.build_in_container(
                client, config, what=tag, files=files, put_at=llvm_workspace.INBOX,
                changes=None if plan else ['CMD ["/bin/bash"]'],
                absent=(f"{llvm_workspace.INBOX}/{llvm_workspace.CREDENTIALS}",),
                log=build_log_path(settings.results_dir, tag), emit=emit,
            )  # fmt: skip
        except ContainerBuildFailed as exc:
            if exc.code == LACKS_PREREQUISITES and attempt == 1:
                emit(Message(f"the LLVM clone in {volume} lacks this bundle's base: sending all"))
                have = set()
                continue
            if exc.code == DEVICE_LIBS_MISMATCH:
                raise UserError(_device_libs_message(settings, commit, exc)) from None
            raise
    raise AssertionError("unreachable")


def _device_libs_message(settings: Settings, commit: ResolvedCommit, exc: Exception) -> str:
    smoke = active(settings).build.device_smoke(settings)
    detail = str(exc)
    why = (
        "the device libraries were written by a newer LLVM than this clang (bitcode only "
        "reads forward)"
        if "Unknown attribute kind" in detail or "Invalid record" in detail
        else "this clang and the device libraries disagree (see the compiler's words below)"
    )
    return (
        f"The LLVM toolchain {commit.label} was built, but it cannot compile for "
        f"{smoke.get('gpu_arch')} with the device libraries in {smoke.get('device_libs')}: "
        f"{why}. A GROMACS build would fail the same way an hour later, so nothing was tagged. "
        f"Build LLVM at a commit no older than the one that wrote the device libraries, or "
        f"point the ROCm platform at device libraries built by this LLVM "
        f"(amd/device-libs in llvm-project), or pick the code-object version they support "
        f"with code_object_version (ORCH_CODE_OBJECT_VERSION).\n{detail}"
    )


# ninja's progress lines, bare or as BuildKit's plain log shows them (`#12 3.4 [5/8] …`).
_NINJA_STEP = re.compile(r"^(?:#\d+ \d+(?:\.\d+)? )?\[(\d+)/(\d+)\] (.+)$")
_NINJA_IDLE = re.compile(r"^(?:#\d+ \d+(?:\.\d+)? )?ninja: no work to do\.$")
_COMPILE = re.compile(r"^Building (?:C|CXX|ASM|HIP|CUDA) object (\S+)$")
_LINK = re.compile(r"^Linking (?:C|CXX) (?:shared library|executable|static library) (\S+)$")
_SHOWN = 10


class NinjaProgress:
    """How much of LLVM ninja rebuilt, read from its `[k/N] …` lines in the build log.

    This is the proof that a one-file edit rebuilt one file (plus what depends on it)
    and not LLVM: the user sees the step count and the sources compiled.
    """

    def __init__(self) -> None:
        self.idle = False
        self.compiled: dict[str, None] = {}  # in order, once each
        self.linked: dict[str, None] = {}
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
        linked = _LINK.match(match[3])
        if linked:
            self.linked[linked[1]] = None
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
