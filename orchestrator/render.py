"""Dockerfile templates: Jinja with StrictUndefined, one file per concern in `images/`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from orchestrator.errors import UsageError

#: Templates live beside the package, in the repository's `images/` folder.
IMAGES_DIR = Path(__file__).resolve().parent.parent / "images"
SUFFIX = ".Dockerfile.j2"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(IMAGES_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def templates() -> list[str]:
    """Names of the renderable templates (partials start with `_`)."""
    return sorted(p.name.removesuffix(SUFFIX) for p in IMAGES_DIR.glob(f"[!_]*{SUFFIX}"))


def render(name: str, context: Mapping[str, Any]) -> str:
    """Render template `name` (without suffix); a missing variable is an error, not ''."""
    if name not in templates():
        raise UsageError(f"Unknown template {name!r}. Known templates: {', '.join(templates())}.")
    try:
        return _environment().get_template(name + SUFFIX).render(**context)
    except jinja2.UndefinedError as exc:
        raise UsageError(
            f"Template {name!r} needs a value that was not given: {exc.message}. "
            f"Pass it with --set key=value."
        ) from None


def uses_buildkit(dockerfile: str) -> bool:
    """True when the Dockerfile needs BuildKit (cache mounts), which docker-py cannot drive."""
    return "--mount=type=" in dockerfile
