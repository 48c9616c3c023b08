"""Toolchain images: the compiler of a dev build, from a distribution package or an LLVM commit.

A toolchain image is the platform's builder base plus one compiler, labelled with a
`Compiler` record; dev GROMACS images are built FROM it, so stable and dev differ
only in the compiler. LLVM toolchains build with BuildKit cache mounts (ccache and
the build tree) so the next commit recompiles only what changed.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import docker

from orchestrator import LABEL_PREFIX, engine
from orchestrator.buildspec import Compiler, package_compiler
from orchestrator.contexts import llvm_context
from orchestrator.engine import Log, stderr_log
from orchestrator.errors import UserError
from orchestrator.gitsource import ResolvedCommit, resolve_commit
from orchestrator.images import (
    ensure_builder,
    find_by_inputs,
    inputs_key,
    label_and_tag,
    now_iso,
    refuse_overwrite,
)
from orchestrator.provenance import ImageRecord
from orchestrator.render import render
from orchestrator.settings import Settings

TOOLCHAIN_REPO = "gmxbench-toolchain"


def _finish(
    client: docker.DockerClient,
    settings: Settings,
    image_id: str,
    tag: str,
    key: str,
    compiler: Compiler,
    log: Log,
) -> None:
    compiler.version = probe_version(client, image_id, compiler.cxx)
    record = ImageRecord(
        tag=tag,
        id=image_id,
        kind="toolchain",
        platform=settings.active_platform,
        base_image=settings.base,
        compiler=compiler.cxx,
        compiler_version=compiler.version,
        llvm_commit=compiler.llvm_commit,
        llvm_dirty=compiler.llvm_dirty,
        inputs=key,
        created=now_iso(),
    )
    extra = {LABEL_PREFIX + "toolchain_json": compiler.model_dump_json()}
    label_and_tag(client, image_id, record, [tag], log, extra_labels=extra)


def ensure_toolchain_package(
    client: docker.DockerClient, settings: Settings, package: str, log: Log = stderr_log
) -> str:
    """A toolchain image with a distribution compiler; returns its tag."""
    packages, compiler = package_compiler(package)
    builder = ensure_builder(client, settings, log)
    context = {"builder_image": builder, "packages": packages, "cxx": compiler.cxx}
    dockerfile = render("toolchain-package", context)
    key = inputs_key("toolchain-package", dockerfile, client.images.get(builder).id)
    tag = f"{TOOLCHAIN_REPO}:{settings.active_platform}-{package}"
    refuse_overwrite(client, tag, key)
    existing = find_by_inputs(client, key, "toolchain")
    if existing is not None and tag not in existing.tags:
        existing.tag(*tag.split(":"))
    if existing is None:
        image_id = engine.build(client, dockerfile, what=tag, log=log)
        _finish(client, settings, image_id, tag, key, compiler, log)
    log(f"toolchain image: {tag}")
    return tag


def resolve_llvm(settings: Settings, rev: str) -> ResolvedCommit:
    """`--llvm <commit>` in the configured source, or `--llvm <path>`: that working tree."""
    if rev == "." or Path(rev).expanduser().is_dir():
        return resolve_commit(str(Path(rev).expanduser().resolve()), ".")
    return resolve_commit(settings.llvm_source, rev)


def llvm_tag(settings: Settings, commit: ResolvedCommit) -> str:
    label = commit.label
    if commit.dirty and commit.diff_sha256:
        label += f"-{commit.diff_sha256[:8]}"  # each dirty state is its own toolchain
    return f"{TOOLCHAIN_REPO}:{settings.active_platform}-llvm-{label}"


def ensure_toolchain_llvm(
    client: docker.DockerClient,
    settings: Settings,
    rev: str,
    *,
    rebuild: bool = True,
    log: Log = stderr_log,
) -> str:
    """Build (or reuse) clang+lld at an LLVM commit; returns the toolchain image tag."""
    commit = resolve_llvm(settings, rev)
    tag = llvm_tag(settings, commit)
    existing = engine.image_or_none(client, tag)
    if existing is not None or not rebuild:
        if existing is None:
            raise UserError(
                f"--no-llvm-rebuild: no toolchain image {tag} exists yet. Run once without "
                f"--no-llvm-rebuild to build LLVM {commit.label}."
            )
        log(f"toolchain image {tag} exists: reusing it")
        return tag
    builder = ensure_builder(client, settings, log)
    context = llvm_context(
        settings,
        builder_image=builder,
        builder_id=str(client.images.get(builder).id),
        commit=commit.full + ("-dirty" if commit.dirty else ""),
        short=commit.label,
    )
    dockerfile = render("toolchain-llvm", context)
    prefix = context["llvm_prefix"]
    compiler = Compiler(
        name=f"llvm-{commit.label}",
        cc=f"{prefix}/bin/clang",
        cxx=f"{prefix}/bin/clang++",
        hip=f"{prefix}/bin/clang++",
        llvm_commit=commit.label,
        llvm_dirty=commit.dirty,
    )
    with tempfile.TemporaryDirectory(prefix="gmxbench-llvm-") as tmp:
        files: dict[str, bytes | Path] = {}
        if context["llvm_source_kind"] == "context":
            files["llvm-src.tar"] = _source_tarball(Path(commit.source), commit, Path(tmp))
        log(f"building LLVM {commit.label} (hours the first time, minutes after one-file edits)")
        image_id = engine.build(client, dockerfile, what=tag, files=files, buildkit=True, log=log)
    key = inputs_key("toolchain-llvm", dockerfile, commit.diff_sha256 or "")
    _finish(client, settings, image_id, tag, key, compiler, log)
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


def probe_version(client: docker.DockerClient, image: str, compiler: str) -> str:
    code, out = engine.run_capture(client, image, [compiler, "--version"])
    if code != 0:
        raise UserError(f"`{compiler} --version` failed in {image}: {out.strip()[:300]}")
    return out.strip().splitlines()[0]


def toolchain_compiler(client: docker.DockerClient, tag: str) -> tuple[Compiler, str]:
    """The compiler a toolchain image holds, from its labels; and the image id."""
    image: Any = engine.image_or_none(client, tag)
    if image is None:
        raise UserError(
            f"Toolchain image {tag} is not in the engine. Build one with `nox -s build -- "
            f"toolchain --package clang-16` (or --llvm <commit>), or `docker load` it."
        )
    raw = image.labels.get(LABEL_PREFIX + "toolchain_json")
    if raw is None:
        raise UserError(
            f"{tag} is not a toolchain image of this tool (it has no {LABEL_PREFIX}toolchain_json "
            f"label). Build one with `nox -s build -- toolchain --package clang-16`."
        )
    compiler = Compiler.model_validate_json(raw)
    compiler.toolchain_image, compiler.toolchain_id = tag, image.id
    return compiler, str(image.id)
