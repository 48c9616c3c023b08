"""Example template contexts: what `render` shows and what golden tests pin.

They are the contexts a real build would pass, with stand-ins (marked `example`) for
what only exists at build time: parent image tags, resolved commits.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any, Literal

from orchestrator.buildspec import (
    Compiler,
    Kind,
    SourceSpec,
    dev_build_name,
    gromacs_context,
    package_compiler,
    stable_build_name,
)
from orchestrator.errors import UsageError
from orchestrator.images import SOURCE_DATE_EPOCH, builder_context
from orchestrator.settings import Platform, Settings

EXAMPLE_LLVM = "d7fead0f"
EXAMPLE_COMMIT = "7f24a2dbf3" + "0" * 30
#: The dev build time of the examples (the field report's dev-llvm-d7fead0f-20260516-0243).
EXAMPLE_WHEN = datetime(2026, 5, 16, 2, 43, tzinfo=UTC)
#: What the LLVM toolchains are built for: the GPU backend and the host.
LLVM_TARGETS = "AMDGPU;X86"
PLATFORMS: tuple[Platform, ...] = ("cpu", "rocm")


#: `scheme://...` or scp-like `user@host:path`: a repository to fetch, not a local checkout.
URLISH = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/\s]+@[^/\s]+:)", re.IGNORECASE)


def llvm_source_kind(source: str) -> Literal["git", "context"]:
    """A URL is fetched in the build (`git`); a local checkout arrives as a context tarball."""
    return "git" if URLISH.match(source) else "context"


def llvm_context(
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
        "llvm_source_kind": llvm_source_kind(settings.llvm_source),
        "llvm_source": settings.llvm_source,
        "llvm_commit": commit,
        "llvm_short": short,
        "llvm_prefix": f"/opt/llvm-{short}",
        "targets": targets,
        "build_cache": f"gmxbench-llvm-build-{settings.active_platform}-{key}",
    }


def _compiler(settings: Settings, kind: Kind) -> Compiler:
    rocm = settings.rocm_path
    if kind == "stable":
        if settings.active_platform == "rocm":
            return Compiler(name="rocm", cc="cc", cxx="c++", hip=f"{rocm}/bin/amdclang++")
        return Compiler(name="gcc12", cc="cc", cxx="c++")
    if settings.active_platform == "rocm":
        llvm = f"/opt/llvm-{EXAMPLE_LLVM}/bin"  # the prefix toolchain-llvm installs to
        return Compiler(
            name=f"llvm-{EXAMPLE_LLVM}",
            cc=f"{llvm}/clang",
            cxx=f"{llvm}/clang++",
            hip=f"{llvm}/clang++",
            llvm_commit=EXAMPLE_LLVM,
        )
    return package_compiler("clang-16")[1]


def template_platform(template: str) -> Platform | None:
    """The platform a template is written for; None for the platform-neutral toolchains."""
    for platform in PLATFORMS:
        if template in (
            f"{platform}-base",
            f"gromacs-stable-{platform}",
            f"gromacs-dev-{platform}",
        ):
            return platform
    return None


def on_platform(settings: Settings, platform: Platform) -> Settings:
    """`settings` for another platform, as if it were the active one.

    The base image setting is the active platform's, so it does not carry over;
    `model_copy` would also keep the cached `active_platform`, hence the pop.
    """
    if settings.active_platform == platform:
        return settings
    copy = settings.model_copy(update={"platform": platform, "base_image": None})
    copy.__dict__.pop("active_platform", None)
    return copy


def example_context(template: str, settings: Settings) -> dict[str, Any]:
    """The context `template` gets in a real build, with example parent tags and commits."""
    wanted = template_platform(template)
    if wanted is not None:
        settings = on_platform(settings, wanted)
    platform = settings.active_platform
    builder = f"gmxbench-builder:{platform}-example"
    if template in ("cpu-base", "rocm-base"):
        return builder_context(settings)
    if template == "toolchain-package":
        packages, compiler = package_compiler("clang-16")
        return {"builder_image": builder, "packages": packages, "cxx": compiler.cxx}
    if template == "toolchain-llvm":
        return llvm_context(
            settings,
            builder_image=builder,
            builder_id="sha256:" + "0" * 64,
            commit=EXAMPLE_LLVM + "0" * 32,
            short=EXAMPLE_LLVM,
        )
    if template in (f"gromacs-stable-{platform}", f"gromacs-dev-{platform}"):
        kind: Kind = "stable" if template.startswith("gromacs-stable-") else "dev"
        compiler = _compiler(settings, kind)
        source = SourceSpec.from_setting(settings.gromacs_source)
        if source.kind == "git":
            source.commit = EXAMPLE_COMMIT
        name = (
            stable_build_name(settings, compiler)
            if kind == "stable"
            else dev_build_name(compiler, EXAMPLE_WHEN)
        )
        toolchain = f"gmxbench-toolchain:{platform}-example"
        return gromacs_context(
            settings,
            kind=kind,
            builder_image=builder,
            compiler_image=builder if kind == "stable" else toolchain,
            compiler=compiler,
            source=source,
            build_name=name,
            source_date_epoch=SOURCE_DATE_EPOCH,
        )
    raise UsageError(f"No example context for template {template!r}.")
