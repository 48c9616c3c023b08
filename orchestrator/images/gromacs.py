"""The GROMACS block: stable and dev images, built from one source with one set of flags.

Stable and dev share everything but the compiler: the source stage is the same text
(one cached layer), the CMake flags come from the platform, and the compiler comes from
the builder (stable) or a toolchain image (dev). A build is checked (`gmx --version`,
`gromacs_check`) before it gets labels, a lockfile and a tag; a failed check tags nothing.
Templates: `gromacs-<flavor>-<platform>`; tags `gromacs:stable-…`, `gromacs:dev-…`.
"""

from __future__ import annotations

import hashlib
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from orchestrator import engine
from orchestrator.codegen import collect
from orchestrator.codegen.model import Codegen
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Caution, Emit, Message, ignore
from orchestrator.core.settings import GromacsSource, Settings
from orchestrator.engine import Client, Image
from orchestrator.images import builder, toolchain, toolchain_llvm, toolchain_package
from orchestrator.images.catalog import Ref, find_by_inputs, inputs_key, keep_tag, new_record, probe
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.gromacs_check import check_build
from orchestrator.images.provenance import (
    LOCK_LABEL,
    ImageRecord,
    Lockfile,
    label,
    parse_lockfile,
    save_lockfile,
)
from orchestrator.images.render import render, uses_buildkit
from orchestrator.images.toolchain_llvm import CONTENT_FILE
from orchestrator.platforms import PLATFORMS, active, on
from orchestrator.platforms.base import (
    CompileCacheStats,
    Compiler,
    Flavor,
    flags_suffix,
)
from orchestrator.platforms.roles import Platform
from orchestrator.store.layout import build_log_path, codegen_path, lockfile_path

REPO = "gromacs"
DEV_CURRENT = f"{REPO}:dev-current"
FLAVORS: tuple[Flavor, ...] = ("stable", "dev")
#: Fixed build date (`__DATE__`, GROMACS build info): identical rebuilds need one.
SOURCE_DATE_EPOCH = 1704067200
#: The build argument (`ARG` in `_gromacs-build.j2`) that bypasses the compile cache.
NO_COMPILE_CACHE = "GMXBENCH_NO_COMPILE_CACHE"

EXAMPLE_COMMIT = "7f24a2dbf3" + "0" * 30
EXAMPLE_BUILDER_ID = "sha256:" + "b" * 64
#: The dev build time of the examples (the field report's dev-llvm-d7fead0f-20260516-0243).
EXAMPLE_WHEN = datetime(2026, 5, 16, 2, 43, tzinfo=UTC)


class SourceSpec(BaseModel):
    """GROMACS source pinned as far as it can be before the build (sha256 is known after)."""

    scheme: Literal["git", "deb-src", "tarball", "file"]
    url: str
    ref: str
    package: str | None = None
    commit: str | None = None
    sha256: str | None = None

    @classmethod
    def from_setting(cls, source: GromacsSource) -> SourceSpec:
        if source.url.startswith("git+"):
            return cls(scheme="git", url=source.url.removeprefix("git+"), ref=source.ref)
        if source.url.startswith("deb-src:"):
            package = source.url.removeprefix("deb-src:")
            return cls(scheme="deb-src", url=source.url, ref=source.ref, package=package)
        if source.local:
            return cls(scheme="file", url=str(source.path), ref=source.ref, sha256=source.sha256)
        return cls(scheme="tarball", url=source.url, ref=source.ref, sha256=source.sha256)

    def context_files(self) -> dict[str, bytes | Path]:
        """What the build context must carry: a local tarball, checked against its sha256."""
        if self.scheme != "file":
            return {}
        path = Path(self.url)
        if not path.is_file():
            raise UserError(
                f"The GROMACS source tarball {path} does not exist. Set ORCH_GROMACS__URL to "
                f"the absolute path of a GROMACS .tar.gz on this machine."
            )
        digest = file_sha256(path)
        if self.sha256 is None:
            raise UsageError(
                f"A local GROMACS tarball needs its sha256, so every image names exactly "
                f"what it was built from: set ORCH_GROMACS__SHA256={digest} (the sha256 of "
                f"{path} now) after checking it against the published checksum."
            )
        if digest != self.sha256:
            raise UserError(
                f"{path} has sha256 {digest}, but ORCH_GROMACS__SHA256 says {self.sha256}: "
                f"the file changed or is not the one meant. Restore it or fix the setting."
            )
        return {"gromacs.tar.gz": path}

    @property
    def revision(self) -> str | None:
        """The most exact identity known: a git commit, else the tarball's sha256."""
        if self.commit:
            return self.commit
        return f"sha256:{self.sha256}" if self.sha256 else None

    def cache_key(self) -> str:
        """What identifies this source for the compile cache (short and stable).

        A tarball is its content: the same file at another path (another checkout,
        another machine) is the same source and shares the cache and the image.
        """
        if self.scheme in ("file", "tarball") and self.sha256:
            return hashlib.sha256(f"tarball\0{self.sha256}".encode()).hexdigest()[:12]
        ident = f"{self.scheme}\0{self.url}\0{self.ref}\0{self.commit}\0{self.sha256}"
        return hashlib.sha256(ident.encode()).hexdigest()[:12]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def gromacs_ref(name: str) -> str:
    """A bare build name means `gromacs:<build>`; anything with a tag or repo is as given."""
    return name if ":" in name or "/" in name else f"{REPO}:{name}"


def template(flavor: Flavor, platform: str) -> str:
    return f"gromacs-{flavor}-{platform}"


def templates() -> list[str]:
    return [template(flavor, p.name) for p in PLATFORMS for flavor in FLAVORS]


def dev_build_name(compiler: Compiler, when: datetime | None = None, suffix: str = "") -> str:
    """`dev-<compiler><suffix>-<UTC minute>`: `dev-llvm-d7fead0f-20260516-0243`, or with
    the platform's suffix (its GPU targets) `dev-llvm-d7fead0f-gfx1201_gfx942-20260516-0243`."""
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%d-%H%M")
    return f"dev-{compiler.name}{suffix}-{stamp}"


#: The longest tag Docker accepts (the part after `:`).
MAX_TAG = 128


def refuse_long_name(build_name: str, settings: Settings) -> None:
    """A build name too long for a Docker tag is refused before anything is built."""
    if len(build_name) > MAX_TAG:
        raise UsageError(
            f"The build name {build_name} is {len(build_name)} characters, more than the "
            f"{MAX_TAG} a Docker tag allows: it names each GPU target ({settings.gpu_arch}). "
            "Build for fewer targets at once (ORCH_GPU_ARCH or --gpu-arch)."
        )


def shell_words(flags: list[str]) -> list[str]:
    """Quote flags for a RUN line, keeping `-G Ninja` together on one line."""
    words: list[str] = []
    for flag in flags:
        if words and words[-1] == "-G":
            words[-1] = f"-G {shlex.quote(flag)}"
        else:
            words.append(shlex.quote(flag))
    return words


#: Said after a dev build that found nothing in the compile cache: it cost a full compile.
EMPTY_CACHE = (
    "the compile cache {cache} was empty, so this build compiled every unit, not only those "
    "of the compiler under test (`docker builder prune`, or BuildKit's garbage collection "
    "when the build cache outgrows its limit, empties it); it holds this build's units now, "
    "so the next dev build takes the rest from it again"
)


def cache_was_empty(stats: CompileCacheStats) -> bool:
    """A build that compiled units and found none of them cached: the cache had nothing
    (a dev build shares every host unit with the stable build that filled it)."""
    return not stats.disabled and stats.hits == 0 and stats.misses > 0


def compile_cache_id(platform: str, builder_id: str, source: SourceSpec) -> str:
    """The BuildKit cache mount of the compile cache: one per platform, builder and source,
    shared by stable and dev builds (ccache keeps what each compiler made apart)."""
    return f"gmxbench-ccache-{platform}-{builder_id.removeprefix('sha256:')[:12]}-" + (
        source.cache_key()
    )


def context(
    settings: Settings,
    *,
    flavor: Flavor,
    builder_image: str,
    builder_id: str,
    compiler_image: str,
    compiler: Compiler,
    source: SourceSpec,
    build_name: str,
    prefix: str | None = None,
) -> dict[str, Any]:
    """Template variables of `gromacs-<flavor>-<platform>` (and of a native build, whose
    `prefix` is on the host); also stored in the lockfile."""
    platform = active(settings)
    prefix = prefix or f"/opt/gromacs/{build_name}"
    flags = platform.build.cmake_flags(settings, flavor, compiler, prefix)
    return {
        "builder_image": builder_image,
        "compiler_image": compiler_image,
        "source": source.model_dump(),
        "source_date_epoch": SOURCE_DATE_EPOCH,
        "build_name": build_name,
        "prefix": prefix,
        "cmake_flags": shell_words(flags),
        "raw_cmake_flags": flags,
        "launchers": launchers(platform.build.languages, platform.build.tested_languages, compiler),
        "compile_cache": compile_cache_id(platform.name, builder_id, source),
        "cc": compiler.cc,
        "cxx": compiler.cxx,
        "hip_compiler": compiler.hip or "",
        **platform.build.gromacs_values(settings),
    }


def launchers(languages: tuple[str, ...], tested: tuple[str, ...], compiler: Compiler) -> list[str]:
    """ccache as every language's compiler launcher. An LLVM toolchain's compilers also
    hash its prefix's digest (`CCACHE_EXTRAFILES`): with the dylib, clang's binary, which
    `compiler_check=content` hashes, is the same when only libLLVM.so changes. Languages
    the builder's compiler compiles keep plain ccache, so they share the stable build's cache.
    """
    found = []
    for lang in languages:
        if compiler.content_sha256 and lang in tested:
            digest = f"{compiler.cxx.rsplit('/bin/', 1)[0]}/{CONTENT_FILE}"
            launcher = f"env;CCACHE_EXTRAFILES={digest};ccache"
            found.append(shlex.quote(f"-DCMAKE_{lang}_COMPILER_LAUNCHER={launcher}"))
        else:
            found.append(f"-DCMAKE_{lang}_COMPILER_LAUNCHER=ccache")
    return found


def example_probe(command: list[str]) -> tuple[int, str]:
    """What `c++` (or nvcc) answers in the example builder (a stand-in: no engine is asked)."""
    if "nvcc" in " ".join(command):
        return 0, "Cuda compilation tools, release 12.4, V12.4.131\n"
    return 0, "12\nc++ (Debian 12.2.0-14+deb12u1) 12.2.0\n"


def example_context(name: str, settings: Settings) -> dict[str, Any]:
    """The context `name` gets in a real build, with example parent tags and commits."""
    flavor: Flavor = "stable" if name.startswith("gromacs-stable-") else "dev"
    settings = on(settings, name.removeprefix(f"gromacs-{flavor}-"))
    platform = active(settings)
    if flavor == "stable":
        compiler = platform.build.stable_compiler(settings, example_probe)
        build_name = platform.build.stable_build_name(settings, compiler)
    else:
        compiler = _example_dev_compiler(platform)
        build_name = dev_build_name(compiler, EXAMPLE_WHEN, platform.build.build_suffix(settings))
    source = SourceSpec.from_setting(platform.build.gromacs_source(settings))
    if source.scheme == "git":
        source.commit = EXAMPLE_COMMIT
    builder_image = builder.example_tag(settings)
    return context(
        settings,
        flavor=flavor,
        builder_image=builder_image,
        builder_id=EXAMPLE_BUILDER_ID,
        compiler_image=builder_image if flavor == "stable" else toolchain.example_tag(settings),
        compiler=compiler,
        source=source,
        build_name=build_name,
    )


def _example_dev_compiler(platform: Platform) -> Compiler:
    if platform.build.example_toolchain == "package":
        return toolchain_package.package_compiler(toolchain_package.EXAMPLE_PACKAGE)[1]
    return toolchain_llvm.example_compiler()


def build_gromacs(
    client: Client,
    settings: Settings,
    flavor: Flavor,
    *,
    toolchain_tag: str | None = None,
    emit: Emit = ignore,
) -> ImageRecord:
    """Build (or reuse) a stable or dev GROMACS image; returns its record."""
    platform = active(settings)
    base = builder.ensure_builder(client, settings, emit)
    if flavor == "dev":
        if toolchain_tag is None:
            raise UsageError(
                "A dev build needs a compiler: pass --toolchain <image> or --llvm <commit>."
            )
        compiler = toolchain.compiler_of(client, toolchain_tag)
        compiler_image = Ref(toolchain_tag, compiler.toolchain_id or "")
    else:
        compiler = platform.build.stable_compiler(
            settings, lambda command: probe(client, base.tag, command)
        )
        compiler_image = base
    source = SourceSpec.from_setting(platform.build.gromacs_source(settings))
    name = template(flavor, platform.name)
    flagged = flags_suffix(settings)
    planned = (
        "dev-<stamp>"
        if flavor == "dev"
        else platform.build.stable_build_name(settings, compiler) + flagged
    )

    def context_for(build_name: str) -> dict[str, Any]:
        return context(
            settings, flavor=flavor, builder_image=base.tag, builder_id=base.id,
            compiler_image=compiler_image.tag, compiler=compiler, source=source,
            build_name=build_name,
        )  # fmt: skip

    key = inputs_key(name, render(name, context_for(planned)), base.id, compiler_image.id)
    suffix = platform.build.build_suffix(settings) + flagged
    build_name = planned if flavor == "stable" else dev_build_name(compiler, suffix=suffix)
    tag = gromacs_ref(build_name)
    ctx = context_for(build_name)
    dockerfile = render(name, ctx)
    build_seconds = 0.0

    def reuse(existing: Image) -> ImageRecord:
        record = record_of(existing)
        keep_tag(client, existing, record.tag)
        emit(Message(f"up to date: {record.tag} ({existing.id[:19]}), nothing to build"))
        ensure_lockfile(settings.results_dir, existing, record)
        if not codegen_path(settings.results_dir, record.tag).exists():
            codegen = _codegen(client, existing.id, record, emit)
            if codegen is not None:
                collect.save(settings.results_dir, codegen, record.tag)
        if flavor == "dev":
            engine.tag(client, existing.id, DEV_CURRENT)
        return record

    def claim() -> str:
        refuse_long_name(build_name, settings)
        return tag

    def build() -> str:
        nonlocal build_seconds
        emit(Message(f"building {tag} with {platform.build.compiler_under_test(compiler)}"))
        started = time.monotonic()
        image_id = engine.build(
            client, dockerfile, what=tag, files=source.context_files(),
            buildkit=uses_buildkit(dockerfile), log=build_log_path(settings.results_dir, tag),
            emit=emit,
        )  # fmt: skip
        build_seconds = round(time.monotonic() - started, 1)
        return image_id

    def verify(image_id: str) -> Stamp:
        facts = check_build(client, image_id, settings, flavor, compiler, ctx["prefix"])
        if facts.compile_cache is not None:
            emit(Message(f"compile cache: {facts.compile_cache.summary()}"))
            if flavor == "dev" and cache_was_empty(facts.compile_cache):
                emit(Message(EMPTY_CACHE.format(cache=ctx["compile_cache"])))
        builder_image = engine.image(client, base.id)
        base_digest = builder_image.labels.get(label("base_digest")) if builder_image else None
        source.sha256 = facts.source_sha256 or source.sha256
        ctx["source"]["sha256"] = source.sha256
        record = new_record(
            settings, "gromacs", tag, "", key,
            build=build_name,
            base_digest=base_digest,
            gromacs_source=source.url,
            gromacs_ref=source.ref,
            gromacs_commit=source.revision,
            gmx_version=facts.version_info.get("GROMACS version"),
            compiler=platform.build.recorded_compiler(facts, compiler),
            compiler_version=facts.compiler_version,
            toolchain=compiler.toolchain_image,
            llvm_commit=compiler.llvm_commit,
            llvm_dirty=compiler.llvm_dirty,
            imported_from=compiler.imported_from,
            imported_at=compiler.imported_at,
            llvm_commit_from=compiler.llvm_commit_from,
            cmake_flags=ctx["raw_cmake_flags"],
            gpu_arch=platform.build.gpu_target(settings),
            simd=settings.simd,
            **platform.build.record_values(settings),
        )  # fmt: skip
        codegen = _codegen(client, image_id, record, emit)
        lock = Lockfile(
            record=record,
            template=name,
            context=ctx,
            dockerfile_sha256=hashlib.sha256(dockerfile.encode()).hexdigest(),
            dockerfile=dockerfile,
            parents={base.tag: base.id, compiler_image.tag: compiler_image.id},
            builder=base.tag,
            packages=facts.packages,
            gmx_version_info=facts.version_info,
            build_seconds=build_seconds,
            compile_cache=facts.compile_cache,
            codegen_functions=len(codegen.kernels) if codegen else None,
            codegen_seconds=codegen.probe_seconds if codegen else None,
            code_object_versions=(codegen.code_object_versions or None) if codegen else None,
        )

        def save(_: str) -> None:  # the lock's record carries the final id by now
            save_lockfile(settings.results_dir, lock)
            if codegen is not None:
                collect.save(settings.results_dir, codegen, tag)

        tags = [tag, DEV_CURRENT] if flavor == "dev" else [tag]
        return Stamp(record, tags, lock.embedded(), save)

    def done(_: str, stamp: Stamp) -> ImageRecord:
        path = lockfile_path(settings.results_dir, tag)
        emit(Message(f"tagged {', '.join(stamp.tags)}; lockfile {path}"))
        assert stamp.record is not None
        return stamp.record

    block = Block[ImageRecord](
        find=lambda: find_by_inputs(client, key, "gromacs"),
        reuse=reuse,
        build=build,
        verify=verify,
        done=done,
        key=key,
        claim=claim,
    )
    return ensure_image(client, block, emit)


def _codegen(client: Client, image_id: str, record: ImageRecord, emit: Emit) -> Codegen | None:
    """The new image's codegen fingerprint; a failed probe is said, not fatal (the image
    keeps what the probe reads, so `codegen diff` can take it again later)."""
    try:
        codegen = collect.run_probe(client, image_id, record)
    except UserError as exc:
        emit(Caution(f"no codegen fingerprint for {record.tag}: {exc.message}"))
        return None
    versions = ", ".join(f"v{v}" for v in codegen.code_object_versions)
    emit(Message(f"codegen fingerprint: {len(codegen.kernels)} functions "
                 f"({codegen.probe_seconds:.1f} s)"
                 + (f", code object {versions}" if versions else "")))  # fmt: skip
    return codegen


def record_of(image: Image) -> ImageRecord:
    """The record of a GROMACS image; its tag follows from the build label."""
    return ImageRecord.from_labels(
        gromacs_ref(image.labels[label("build")]), image.id, image.labels
    )


def lockfile_of(image: Image) -> Lockfile | None:
    """The lockfile a GROMACS image carries in its label, if it has one."""
    raw = image.labels.get(LOCK_LABEL)
    if raw is None:
        return None
    return parse_lockfile(raw, f"the label of {', '.join(image.tags) or image.id}", image.id)


def ensure_lockfile(results_dir: Path, image: Image, record: ImageRecord) -> None:
    """Write the image's lockfile into this results dir from its label, if missing here."""
    if lockfile_path(results_dir, record.tag).exists():
        return
    lock = lockfile_of(image)
    if lock is not None:
        save_lockfile(results_dir, lock)
