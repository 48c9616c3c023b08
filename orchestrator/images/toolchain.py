"""What every toolchain image is: the builder base plus one compiler, labelled with it.

Dev GROMACS images are built FROM a toolchain image, so stable and dev differ only in
the compiler. The two blocks that make them, `toolchain_package` (a distribution
compiler) and `toolchain_llvm` (LLVM at a commit), share this.
"""

from __future__ import annotations

from orchestrator import engine
from orchestrator.core.errors import UserError
from orchestrator.core.files import parse_model
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.catalog import new_record, probe
from orchestrator.images.ensure import Stamp
from orchestrator.images.provenance import TOOLCHAIN_LABEL
from orchestrator.platforms import active
from orchestrator.platforms.base import Compiler

REPO = "gmxbench-toolchain"


def tag_for(settings: Settings, name: str) -> str:
    """`gmxbench-toolchain:<platform>-<name>`, e.g. `cpu-clang-16`, `rocm-llvm-d7fead0f`."""
    return f"{REPO}:{active(settings).name}-{name}"


def example_tag(settings: Settings) -> str:
    """What stands for a toolchain's tag in example contexts."""
    return tag_for(settings, "example")


def stamp_for(
    client: Client, settings: Settings, image_id: str, tag: str, key: str, compiler: Compiler
) -> Stamp:
    """Check that the compiler runs and record its `--version`; what the image gets: its
    record and the compiler's label."""
    compiler.version = probe_version(client, image_id, compiler.cxx)
    record = new_record(
        settings, "toolchain", tag, image_id, key, compiler=compiler.cxx,
        compiler_version=compiler.version, llvm_commit=compiler.llvm_commit,
        llvm_dirty=compiler.llvm_dirty, imported_from=compiler.imported_from,
        imported_at=compiler.imported_at, llvm_commit_from=compiler.llvm_commit_from,
    )  # fmt: skip
    return Stamp(record, [tag], {TOOLCHAIN_LABEL: compiler.model_dump_json()})


def probe_version(client: Client, image: str, compiler: str) -> str:
    code, out = probe(client, image, [compiler, "--version"])
    if code != 0:
        raise UserError(f"`{compiler} --version` failed in {image}: {out.strip()[:300]}")
    return out.strip().splitlines()[0]


def compiler_of(client: Client, tag: str) -> Compiler:
    """The compiler a toolchain image holds, from its label, with the image's tag and id."""
    image = engine.image(client, tag)
    if image is None:
        raise UserError(
            f"Toolchain image {tag} is not in the engine. Build one with `nox -s build -- "
            f"toolchain --package clang-16` (or --llvm <commit>, or --from-build <your LLVM "
            f"build tree>), or `docker load` it."
        )
    raw = image.labels.get(TOOLCHAIN_LABEL)
    if raw is None:
        raise UserError(
            f"{tag} is not a toolchain image of this tool (it has no {TOOLCHAIN_LABEL} "
            f"label). Build one with `nox -s build -- toolchain --package clang-16`."
        )
    fix = f"Remove it (`docker rmi {tag}`) and build the toolchain again."
    compiler = parse_model(raw, Compiler, f"the {TOOLCHAIN_LABEL} label of {tag}", fix)
    compiler.toolchain_image, compiler.toolchain_id = tag, image.id
    return compiler
