"""The builder block: the platform's base plus compilers and GROMACS' build dependencies.

Stable GROMACS images and every toolchain start here, so stable and dev differ only in
the compiler. Template: `<platform>-base`; tag: `gmxbench-builder:<platform>-<inputs>`.
"""

from __future__ import annotations

from typing import Any

from orchestrator import engine
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.base import ensure_base
from orchestrator.images.catalog import Ref, base_digest, find_by_inputs, inputs_key, new_record
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.render import render, uses_buildkit
from orchestrator.platforms import PLATFORMS, active, on
from orchestrator.store.layout import build_log_path

REPO = "gmxbench-builder"
#: The tag example contexts give the builder (real ones end in the inputs key).
EXAMPLE_TAG = "-example"


def template(settings: Settings) -> str:
    return active(settings).build.builder_template(settings)


def context(settings: Settings) -> dict[str, Any]:
    return active(settings).build.builder_context(settings)


def settings_for(name: str, settings: Settings) -> Settings | None:
    """`settings` on the platform (and stack) whose builder template is `name`."""
    for platform in PLATFORMS:
        selects = platform.build.builder_templates().get(name)
        if selects is not None:
            return on(settings, platform.name).model_copy(update=selects)
    return None


def example_context(name: str, settings: Settings) -> dict[str, Any]:
    """The context of template `name`, on the platform it is written for."""
    chosen = settings_for(name, settings)
    assert chosen is not None, name
    return context(chosen)


def templates() -> list[str]:
    return [name for platform in PLATFORMS for name in platform.build.builder_templates()]


def example_tag(settings: Settings) -> str:
    """What stands for the builder's tag in the example contexts of the images FROM it."""
    return f"{REPO}:{active(settings).name}{EXAMPLE_TAG}"


def ensure_builder(client: Client, settings: Settings, emit: Emit = ignore) -> Ref:
    """The platform's builder base, built when its inputs are new."""
    base = ensure_base(client, settings, emit)
    platform = active(settings)
    name = template(settings)
    dockerfile = render(name, context(settings))
    key = inputs_key(name, dockerfile, base.id)
    tag = f"{REPO}:{platform.name}-{key[:12]}"

    def build() -> str:
        emit(Message(f"building the {platform.name} builder base from "
                     f"{platform.build.base_image(settings)}"))  # fmt: skip
        return engine.build(
            client, dockerfile, what=tag, buildkit=uses_buildkit(dockerfile),
            log=build_log_path(settings.results_dir, tag), emit=emit,
        )  # fmt: skip

    def stamp(image_id: str) -> Stamp:  # nothing to check: the build ran its own steps
        record = new_record(
            settings, "builder", tag, image_id, key, base_digest=base_digest(base),
            **platform.build.record_values(settings),
        )  # fmt: skip
        return Stamp(record, [tag])

    block = Block[Ref](
        find=lambda: find_by_inputs(client, key, "builder"),
        reuse=lambda image: Ref(tag, image.id),
        build=build,
        verify=stamp,
        done=lambda image_id, _: Ref(tag, image_id),
        tag=tag,
        key=key,
    )
    return ensure_image(client, block, emit)
