"""The imported LLVM toolchain block: clang + lld from an LLVM the user already built.

`build toolchain --from-build ~/llvm-project/build` (or `--toolchain <that path>` to
`build` and `bench`) saves building LLVM again (27 min on 16 cores, hours on 2). What
the loop uses of the tree (`llvm_tree`) is put into a container of the builder at
`/opt/llvm-imported-<hash>`, with the digest an LLVM toolchain's prefix carries
(`CONTENT_FILE`), and the container is committed as the toolchain image. Before it is
tagged, its compilers must run there: a tree made for another system (a newer glibc or
libstdc++) is refused in one paragraph naming both systems. The record says it was
imported, from where and when, so `rebuild` says it cannot make it again.
Tag: `gmxbench-toolchain:<platform>-llvm-<commit>-imported-<hash>`.
"""

from __future__ import annotations

import io
import re
import tarfile
import tempfile
from pathlib import Path

from orchestrator import engine
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client, Image
from orchestrator.images import builder, toolchain, toolchain_check
from orchestrator.images.catalog import find_by_inputs, inputs_key, keep_tag, now_iso
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.llvm_tree import (
    LlvmTree,
    TreeCommit,
    collect,
    content_sha256,
    find_commit,
    validate,
)
from orchestrator.images.provenance import ImageRecord
from orchestrator.images.toolchain_llvm import BUILD_LABEL, CONTENT_FILE
from orchestrator.platforms import active
from orchestrator.platforms.base import Compiler
from orchestrator.store.layout import build_log_path

#: What names an import's inputs (its files' digest and the builder), like a template name.
INPUTS = "toolchain-import"


def is_tree_path(value: str) -> bool:
    """`--toolchain` names a folder (an LLVM tree to import), not an image: image
    references never start with `/`, `.` or `~`."""
    return value.startswith(("/", "./", "../", "~")) or value in (".", "..") or Path(value).is_dir()


def prefix_for(digest: str) -> str:
    return f"/opt/llvm-imported-{digest[:12]}"


def ensure_toolchain_import(
    client: Client, settings: Settings, path: str, *, emit: Emit = ignore
) -> str:
    """Import (or reuse) the LLVM at `path` as a toolchain image; returns its tag."""
    root = validate(path)
    smoke = active(settings).build.device_smoke(settings)
    tree = collect(root, device=bool(smoke))
    digest = content_sha256(tree.files)
    for shown in dict.fromkeys(tree.left_out):
        emit(Message(f"not imported: {shown} leads out of the tree"))
    base = builder.ensure_builder(client, settings, emit)
    key = inputs_key(INPUTS, digest, base.id)
    prefix = prefix_for(digest)
    system: toolchain_check.BuilderSystem | None = None  # the builder's, read before the import
    commit: TreeCommit | None = None  # the LLVM commit the check found

    def reuse(existing: Image) -> str:
        record = ImageRecord.from_labels("", existing.id, existing.labels)
        compiler = toolchain.compiler_of(client, existing.id)
        tag = toolchain.tag_for(settings, compiler.name)
        keep_tag(client, existing, tag)
        emit(Message(f"toolchain image {tag} holds this LLVM already (imported from "
                     f"{record.imported_from} at {record.imported_at}): reusing it"))  # fmt: skip
        return tag

    def build() -> str:
        nonlocal system
        system = toolchain_check.builder_system(client, base.tag)
        toolchain_check.refuse_other_system(tree, system)
        size = sum(p.stat().st_size for p in tree.files.values())
        emit(Message(f"importing the LLVM {tree.kind} {root}: {len(tree.files)} files, "
                     f"{size / 1e6:.0f} MB"))  # fmt: skip
        return _commit_image(client, settings, tree, base.tag, prefix, digest, emit)

    def verify(image_id: str) -> Stamp:
        nonlocal commit
        assert system is not None
        ran = toolchain_check.run_check(client, image_id, tree, prefix, system, smoke)
        for line in ran.notes:
            emit(Message(line))
        commit = find_commit(tree, ran.version_line)
        compiler = imported_compiler(prefix, digest, commit, ran.version_line, root)
        tag = toolchain.tag_for(settings, compiler.name)
        return toolchain.stamp_for(client, settings, image_id, tag, key, compiler)

    def done(_: str, stamp: Stamp) -> str:
        assert commit is not None
        said = (
            f"LLVM {commit.commit} (from {commit.read_from})" if commit.commit else "no LLVM commit"
        )
        emit(Message(f"toolchain image: {stamp.tags[0]}, imported from {root}; {said}"))
        return stamp.tags[0]

    block = Block[str](
        find=lambda: find_by_inputs(client, key, "toolchain"),
        reuse=reuse,
        build=build,
        verify=verify,
        done=done,
        key=key,
        discard=True,
    )
    return ensure_image(client, block, emit)


def imported_compiler(
    prefix: str, digest: str, commit: TreeCommit, version_line: str, root: Path
) -> Compiler:
    """clang/clang++ of an import; HIP goes through the same clang++."""
    label = commit_label(commit.commit, commit.dirty, version_line)
    return Compiler(
        name=f"llvm-{label}-imported-{digest[:8]}",
        cc=f"{prefix}/bin/clang",
        cxx=f"{prefix}/bin/clang++",
        hip=f"{prefix}/bin/clang++",
        llvm_commit=label if commit.commit else None,
        llvm_dirty=commit.dirty,
        content_sha256=digest,
        imported_from=str(root),
        imported_at=now_iso(),
        llvm_commit_from=commit.read_from,
    )


def commit_label(commit: str | None, dirty: bool, version_line: str) -> str:
    """What names an import in its tag: the commit's 8 digits (`-dirty`), else clang's
    version (`21.1.8`), else `unknown`."""
    if commit:
        return commit[:8] + ("-dirty" if dirty else "")
    match = re.search(r"clang version (\S+)", version_line)
    return re.sub(r"[^A-Za-z0-9_.-]", "_", match[1]) if match else "unknown"


def _commit_image(
    client: Client, settings: Settings, tree: LlvmTree, builder_tag: str, prefix: str,
    digest: str, emit: Emit,
) -> str:  # fmt: skip
    """The builder with the tree's files at `prefix`, committed (untagged)."""
    tag = f"{toolchain.REPO}:{active(settings).name}-llvm-imported-{digest[:8]}"
    with tempfile.TemporaryDirectory(prefix="gmxbench-import-") as tmp:
        archive = Path(tmp) / "llvm.tar"
        write_archive(tree, prefix, digest, archive)
        config = {
            "image": builder_tag,
            "command": ["true"],
            "network_disabled": True,
            "labels": {BUILD_LABEL: tag},
        }
        return engine.build_in_container(
            client, config, what=f"import of {tree.root}", files={}, archive=archive,
            put_at="/", changes=['CMD ["/bin/bash"]'],
            log=build_log_path(settings.results_dir, tag, "import"), emit=emit,
        )  # fmt: skip


def write_archive(tree: LlvmTree, prefix: str, digest: str, archive: Path) -> None:
    """The prefix as a tar (dated 0, owned by root, modes kept), its digest file included."""
    top = prefix.strip("/")
    with tarfile.open(archive, "w") as tar:
        folders = {str(Path(top, rel).parent) for rel in (*tree.files, *tree.links)}
        for folder in sorted({str(p) for f in folders for p in (Path(f), *Path(f).parents)}):
            if folder == top or folder.startswith(top + "/"):
                tar.addfile(_info(folder, tarfile.DIRTYPE, 0o755))
        for rel, source in sorted(tree.files.items()):
            executable = source.stat().st_mode & 0o111
            info = _info(f"{top}/{rel}", tarfile.REGTYPE, 0o755 if executable else 0o644)
            info.size = source.stat().st_size
            with source.open("rb") as data:
                tar.addfile(info, data)
        for rel, target in sorted(tree.links.items()):
            info = _info(f"{top}/{rel}", tarfile.SYMTYPE, 0o777)
            info.linkname = target
            tar.addfile(info)
        content = (digest + "\n").encode()
        info = _info(f"{top}/{CONTENT_FILE}", tarfile.REGTYPE, 0o644)
        info.size = len(content)
        tar.addfile(info, io.BytesIO(content))


def _info(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime, info.uid, info.gid = kind, mode, 0, 0, 0
    return info


def cannot_rebuild(record: ImageRecord) -> str:
    """Why `rebuild` refuses an image whose compiler was imported, and what to do instead."""
    made = "is an LLVM toolchain imported" if record.kind == "toolchain" else (
        "was built with an LLVM imported"
    )  # fmt: skip
    commit = record.llvm_commit.removesuffix("-dirty") if record.llvm_commit else None
    if commit:
        how = (
            f"To reproduce it, build that LLVM from source with `nox -s build -- dev --llvm "
            f"{commit}` (the commit recorded at the import, from {record.llvm_commit_from}"
            + ("; the tree had uncommitted changes, which no commit holds" if record.llvm_dirty
               else "")
            + ") and compare the two with `nox -s codegen -- diff`."
        )  # fmt: skip
    else:
        how = (
            "The import recorded no LLVM commit (clang --version names none, and no checkout "
            "was found beside the tree), so nothing names its source: to reproduce it, build "
            "the LLVM you meant with `nox -s build -- dev --llvm <commit>`."
        )
    return (
        f"{record.tag} {made} from {record.imported_from} at {record.imported_at} (`build "
        "toolchain --from-build`), "
        "not built by this tool from source, so `rebuild` cannot make its compiler again "
        f"and does not try; nothing was built. {how} The image itself can be kept and moved "
        "as it is with `nox -s share -- save`."
    )
