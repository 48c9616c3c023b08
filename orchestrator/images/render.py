"""Dockerfile templates: Jinja with StrictUndefined, from the top-level `images/` folder.

`core.shipped` finds that folder in a checkout or inside an installed wheel, so an
installed tool renders exactly what a checkout does. Partials (`_*.j2`) are included by
the templates; they are not rendered alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import jinja2

from orchestrator.core.errors import UsageError
from orchestrator.core.shipped import shipped

SUFFIX = ".Dockerfile.j2"
SCRIPT_SUFFIX = ".sh.j2"


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(shipped("images")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def templates() -> list[str]:
    """Names of the renderable templates (partials start with `_`)."""
    folder = shipped("images")
    return sorted(
        item.name.removesuffix(SUFFIX)
        for item in folder.iterdir()
        if item.name.endswith(SUFFIX) and not item.name.startswith("_")
    )


def known(name: str) -> str:
    """`name` if it is a renderable template, else a `UsageError` that lists them."""
    if name not in templates():
        raise UsageError(f"Unknown template {name!r}. Known templates: {', '.join(templates())}.")
    return name


def render(name: str, context: Mapping[str, Any]) -> str:
    """Render template `name` (without suffix); a missing variable is an error, not ''."""
    known(name)
    try:
        return _environment().get_template(name + SUFFIX).render(**context)
    except jinja2.UndefinedError as exc:
        raise UsageError(
            f"Template {name!r} needs a value that was not given: {exc.message}. "
            f"Pass it with --set key=value."
        ) from None


def render_script(name: str, context: Mapping[str, Any]) -> str:
    """Render `images/<name>.sh.j2`, a script an image carries (with the same strictness)."""
    try:
        return _environment().get_template(name + SCRIPT_SUFFIX).render(**context)
    except jinja2.UndefinedError as exc:
        raise UsageError(f"Script template {name!r} needs a value: {exc.message}.") from None


def uses_buildkit(dockerfile: str) -> bool:
    """True when the Dockerfile needs BuildKit (cache mounts), which docker-py cannot drive."""
    return "--mount=type=" in dockerfile
