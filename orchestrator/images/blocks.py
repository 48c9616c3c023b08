"""Which building block owns which template, and the example context each renders with.

Example contexts are the contexts a real build passes, with stand-ins for what only
exists at build time (parent image tags, resolved commits, the build time). `render`
prints them, the golden tests pin them, `lint` runs hadolint over them.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings
from orchestrator.images import builder, gromacs, microbench, toolchain_llvm, toolchain_package
from orchestrator.platforms import PLATFORMS

ExampleContext = Callable[[str, Settings], dict[str, Any]]

#: Template name → the block that renders it.
OWNERS: dict[str, ModuleType] = {
    **{name: builder for name in builder.templates()},
    toolchain_package.TEMPLATE: toolchain_package,
    toolchain_llvm.TEMPLATE: toolchain_llvm,
    **{name: gromacs for name in gromacs.templates()},
    **{name: microbench for name in microbench.templates()},
}


def example_context(template: str, settings: Settings) -> dict[str, Any]:
    """The context `template` gets in a real build, with example parent tags and commits."""
    block = OWNERS.get(template)
    if block is None:
        raise UsageError(f"No example context for template {template!r}.")
    make: ExampleContext = block.example_context
    return make(template, settings)


def template_platform(template: str) -> str | None:
    """The platform a template is written for; None for the platform-neutral toolchains."""
    if template == microbench.template("tune"):
        return "cpu"  # Kernel Tuner's C backend; see microbench.ensure
    for platform in PLATFORMS:
        flavors = (gromacs.template(flavor, platform.name) for flavor in gromacs.FLAVORS)
        if template in (*platform.build.builder_templates(), *flavors):
            return platform.name
    return None
