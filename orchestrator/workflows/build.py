"""Building images on request: `build stable|dev|toolchain` and the toolchain of a bench.

A dev build needs a compiler, one `CompilerSpec`; it comes from an existing toolchain
image, a distribution package (`--package clang-16`), an LLVM commit (`--llvm d7fead0f`,
or a checkout path for the working tree as it is), or an LLVM the user built already
(`--from-build ~/llvm-project/build`, or that path given to `--toolchain`, so `bench
--toolchain` and `--against-toolchain` import it too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast, get_args

from orchestrator.core.events import Emit, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.toolchain_import import ensure_toolchain_import, is_tree_path
from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm
from orchestrator.images.toolchain_package import ensure_toolchain_package
from orchestrator.workflows.options import OneOf, Option, option

#: What names a compiler: the stable image's (the vendor compiler), an existing GROMACS
#: build's, an LLVM commit or checkout, a toolchain image, a distribution package, or an
#: LLVM build tree or install prefix to import.
CompilerKind = Literal["stable", "build", "llvm", "toolchain", "package", "tree", "flags"]


@dataclass(frozen=True)
class CompilerSpec:
    """One side's compiler: one kind and what names it (the stable image needs no name),
    so that two compilers for one side cannot be written down."""

    kind: CompilerKind
    name: str = ""

    def __post_init__(self) -> None:
        if (self.kind == "stable") == bool(self.name):
            raise ValueError(f"a {self.kind} compiler {'has no' if self.name else 'needs a'} name")

    @staticmethod
    def of(kind: str, name: str) -> CompilerSpec:
        """The spec a flag's kind and value name (`OneOf.make`)."""
        if kind not in get_args(CompilerKind):
            raise ValueError(f"{kind!r} is not a kind of compiler")
        return CompilerSpec(cast(CompilerKind, kind), name)


#: `build`'s compiler flags; `build stable` names the one given when it refuses it.
BUILD_COMPILER = OneOf(
    {
        "toolchain": Option("--toolchain", help="toolchain image holding the dev compiler"),
        "package": Option(
            "--package", help="distribution compiler package for a toolchain (clang-16)"
        ),
        "llvm": Option(
            "--llvm", help="LLVM commit in ORCH_LLVM_SOURCE, or a checkout path (as it is)"
        ),
        "tree": Option(
            "--from-build", metavar="PATH",
            help="an LLVM you built: its build tree (~/llvm-project/build) or install prefix, "
            "imported as the toolchain instead of building LLVM again",
        ),
    },
    CompilerSpec.of, "Give one compiler at most (got {given}).",
    order=("llvm", "package", "toolchain", "tree"),
)  # fmt: skip


@dataclass
class BuildRequest:
    """`build stable|dev|toolchain`: what to build, and with which compiler (none: the
    stable one); each field declares its `build` option (`workflows.options`)."""

    what: Literal["stable", "dev", "toolchain"] = option(
        flag="what", choices=("stable", "dev", "toolchain"), required=True
    )
    compiler: CompilerSpec | None = option(BUILD_COMPILER)
    plan: bool = option(default=False, help="with `toolchain --llvm`: what building that commit "
                        "would compile and link (ninja -n in the workspace, configured as a "
                        "build), building nothing")  # fmt: skip


def toolchain_for(
    client: Client,
    settings: Settings,
    compiler: CompilerSpec | None,
    *,
    rebuild: bool = True,
    emit: Emit = ignore,
) -> str | None:
    """The toolchain image tag for `compiler` (None for the stable image, an existing
    GROMACS build or no compiler: they need no toolchain); a toolchain that is a folder
    is an LLVM tree to import."""
    if compiler is None:
        return None
    kind, name = compiler.kind, compiler.name
    if kind == "toolchain" and is_tree_path(name):
        kind = "tree"
    if kind == "tree":
        return ensure_toolchain_import(client, settings, name, emit=emit)
    if kind == "llvm":
        return ensure_toolchain_llvm(client, settings, name, rebuild=rebuild, emit=emit)
    if kind == "package":
        return ensure_toolchain_package(client, settings, name, emit)
    return name if kind == "toolchain" else None
