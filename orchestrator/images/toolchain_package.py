"""The package toolchain block: the builder base plus a distribution compiler (`clang-16`).

Template: `toolchain-package`; tag: `gmxbench-toolchain:<platform>-<package>`.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator import engine
from orchestrator.core.errors import UsageError
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images import builder, toolchain
from orchestrator.images.catalog import find_by_inputs, inputs_key
from orchestrator.images.ensure import Block, ensure_image
from orchestrator.images.render import render
from orchestrator.platforms.base import Compiler
from orchestrator.store.layout import build_log_path

TEMPLATE = "toolchain-package"
#: The package example renders use.
EXAMPLE_PACKAGE = "clang-16"


def package_compiler(package: str) -> tuple[list[str], Compiler]:
    """Debian/Ubuntu packages and compiler for `clang-N` or `gcc-N`."""
    match = re.fullmatch(r"(clang|gcc)-(\d+)", package)
    if not match:
        raise UsageError(
            f"--package {package!r} is not a compiler package this tool knows. "
            f"Use clang-<N> (e.g. clang-16) or gcc-<N> (e.g. gcc-12)."
        )
    family, major = match.groups()
    if family == "clang":
        return [f"clang-{major}", f"libomp-{major}-dev"], Compiler(
            name=f"clang{major}", cc=f"clang-{major}", cxx=f"clang++-{major}", package=package
        )
    return [f"gcc-{major}", f"g++-{major}"], Compiler(
        name=f"gcc{major}", cc=f"gcc-{major}", cxx=f"g++-{major}", package=package
    )


def context(builder_image: str, package: str) -> dict[str, Any]:
    packages, compiler = package_compiler(package)
    return {"builder_image": builder_image, "packages": packages, "cxx": compiler.cxx}


def example_context(name: str, settings: Settings) -> dict[str, Any]:
    return context(builder.example_tag(settings), EXAMPLE_PACKAGE)


def ensure_toolchain_package(
    client: Client, settings: Settings, package: str, emit: Emit = ignore
) -> str:
    """A toolchain image with a distribution compiler; returns its tag."""
    _, compiler = package_compiler(package)
    base = builder.ensure_builder(client, settings, emit)
    dockerfile = render(TEMPLATE, context(base.tag, package))
    key = inputs_key(TEMPLATE, dockerfile, base.id)
    tag = toolchain.tag_for(settings, package)

    def said(*_: object) -> str:  # found or made, the same line
        emit(Message(f"toolchain image: {tag}"))
        return tag

    def build() -> str:
        log = build_log_path(settings.results_dir, tag)
        return engine.build(client, dockerfile, what=tag, log=log, emit=emit)

    block = Block[str](
        find=lambda: find_by_inputs(client, key, "toolchain"),
        reuse=said,
        build=build,
        verify=lambda image_id: toolchain.stamp_for(client, settings, image_id, tag, key, compiler),
        done=said,
        tag=tag,
        key=key,
    )
    return ensure_image(client, block, emit)
