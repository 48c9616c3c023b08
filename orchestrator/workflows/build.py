"""Building images on request: `build stable|dev|toolchain` and the toolchain of a bench.

A dev build needs a compiler; it comes from an existing toolchain image, a distribution
package (`--package clang-16`), an LLVM commit (`--llvm d7fead0f`, or a checkout path
for the working tree as it is), or an LLVM the user built already (`--from-build
~/llvm-project/build`, or that path given to `--toolchain`, so `bench --toolchain` and
`--against-toolchain` import it too).
"""

from __future__ import annotations

from orchestrator.core.errors import UsageError
from orchestrator.core.events import Emit, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.toolchain_import import ensure_toolchain_import, is_tree_path
from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm
from orchestrator.images.toolchain_package import ensure_toolchain_package


def toolchain_for(
    client: Client,
    settings: Settings,
    *,
    llvm: str | None = None,
    package: str | None = None,
    toolchain: str | None = None,
    from_build: str | None = None,
    rebuild: bool = True,
    emit: Emit = ignore,
) -> str | None:
    """The toolchain image tag for at most one of `llvm`, `package`, `toolchain` (an image,
    or a folder: an LLVM tree to import) and `from_build` (an LLVM tree to import)."""
    if len([x for x in (llvm, package, toolchain, from_build) if x]) > 1:
        raise UsageError("Give at most one of --llvm, --toolchain, --package and --from-build.")
    if toolchain and is_tree_path(toolchain):
        toolchain, from_build = None, toolchain
    if from_build:
        return ensure_toolchain_import(client, settings, from_build, emit=emit)
    if llvm:
        return ensure_toolchain_llvm(client, settings, llvm, rebuild=rebuild, emit=emit)
    if package:
        return ensure_toolchain_package(client, settings, package, emit)
    return toolchain
