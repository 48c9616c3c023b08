"""Recipe files found (the user's folders first, then the shipped ones), checked, and a system
name resolved to the system it names."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Sequence
from importlib.abc import Traversable
from pathlib import Path

from pydantic import ValidationError

from orchestrator.core.errors import UsageError
from orchestrator.core.shipped import shipped
from orchestrator.runs.microbench_recipe import RECIPE_KIND, MicrobenchRecipe, ResolvedMicrobench
from orchestrator.runs.recipe.models import ChoiceSizes, Recipe, ResolvedSystem

#: The recipes shipped with the tool (`recipes/`, package data in a wheel).
SHIPPED = shipped("recipes")
#: The system used when none is named.
DEFAULT_SYSTEM = "water"


AnyRecipe = Recipe | MicrobenchRecipe


def _read(path: Traversable) -> AnyRecipe:
    stem = path.name.removesuffix(".toml")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        model = MicrobenchRecipe if data.get("kind") == RECIPE_KIND else Recipe
        recipe: AnyRecipe = model.model_validate(data)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"Recipe {path} is not valid TOML: {exc}. Fix the file.") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'file'}: "
            f"{str(err['msg']).removeprefix('Value error, ')}"
            for err in exc.errors(include_url=False)
        )
        raise UsageError(f"Recipe {path} is invalid: {problems}. Fix the file.") from None
    if recipe.name != stem:
        raise UsageError(
            f"Recipe {path} is named {recipe.name!r}; the file must be {recipe.name}.toml."
        )
    if isinstance(recipe, MicrobenchRecipe) and recipe.sources is not None:
        _check_sources(path, recipe)
    return recipe


def _check_sources(path: Traversable, recipe: MicrobenchRecipe) -> None:
    """A recipe's own sources are files inside its folder (a user's folder, not ours)."""
    assert recipe.sources is not None
    if not isinstance(path, Path):
        raise UsageError(f"Recipe {path} names sources; only recipes in a folder can.")
    folder = path.parent.resolve()
    for key, written in recipe.sources.named().items():
        where = (folder / written).resolve()
        if not where.is_relative_to(folder):
            raise UsageError(
                f"Recipe {path} names the {key} source {written!r}, which is outside its "
                f"folder {folder}. Put the source next to the recipe (or below it) and name "
                f'it relative to the recipe: [sources] {key} = "{Path(written).name}".'
            )
        if not where.is_file():
            raise UsageError(
                f"Recipe {path} names the {key} source {written!r}, and there is no such "
                f"file in {folder}. Put {written} there, or fix [sources] {key} in the recipe."
            )


def _recipe_files(dirs: Sequence[Path]) -> Iterator[Traversable]:
    """Every `*.toml` of the user's folders, in order, then the shipped ones."""
    for folder in dirs:
        if not folder.is_dir():
            raise UsageError(
                f"Recipe folder {folder} (ORCH_RECIPES_DIRS) is not a directory. "
                "Create it or remove it from ORCH_RECIPES_DIRS."
            )
        yield from sorted(folder.glob("*.toml"))
    yield from sorted((p for p in SHIPPED.iterdir() if p.name.endswith(".toml")), key=str)


def find_recipes(dirs: Sequence[Path] = ()) -> dict[str, tuple[AnyRecipe, str]]:
    """Recipes by name with the file each came from; the first folder naming one wins."""
    found: dict[str, tuple[AnyRecipe, str]] = {}
    for path in _recipe_files(dirs):
        recipe = _read(path)
        found.setdefault(recipe.name, (recipe, str(path)))
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def list_recipes(dirs: Sequence[Path] = ()) -> list[AnyRecipe]:
    """Every recipe the tool knows (see `find_recipes`), by name."""
    return [recipe for recipe, _ in find_recipes(dirs).values()]


def parse_system_name(system: str | None) -> tuple[str, str | None, str | None]:
    """`name[:size[:variant]]` → (name, size or None, variant or None); "" → the default."""
    text = (system or "").strip() or DEFAULT_SYSTEM
    parts = text.split(":")
    if len(parts) > 3 or not parts[0]:
        raise UsageError(
            f"System {text!r} is not of the form NAME[:SIZE[:VARIANT]], "
            "e.g. water:24k or water_GMX50:0003:rf."
        )
    parts += [""] * (3 - len(parts))
    return parts[0], parts[1] or None, parts[2] or None


def load_recipe(system: str | None = None, dirs: Sequence[Path] = ()) -> ResolvedSystem:
    """A GROMACS system name (None/"" = `water`) as a `ResolvedSystem`, or a `UsageError`."""
    resolved = load_system(system, dirs)
    if isinstance(resolved, ResolvedMicrobench):
        raise UsageError(f"{resolved.recipe} is a kernel benchmark, not a GROMACS system.")
    return resolved


def load_system(
    system: str | None = None, dirs: Sequence[Path] = ()
) -> ResolvedSystem | ResolvedMicrobench:
    """Resolve any system name: a GROMACS system or a microbenchmark (`bandwidth`)."""
    name, size, variant = parse_system_name(system)
    found = find_recipes(dirs)
    recipes = {r.name: r for r, _ in found.values()}
    recipe = recipes.get(name) or next(
        (r for r in recipes.values() if r.name.lower() == name.lower()), None
    )
    if recipe is None:
        known = ", ".join(r.usage() for r in recipes.values()) or "none"
        raise UsageError(
            f"Unknown system {name!r}. Known systems: {known}. "
            f"Name one with --system, or add {name}.toml to a folder in ORCH_RECIPES_DIRS."
        )
    if size and variant is None and size in recipe.variants:
        sized = isinstance(recipe, Recipe) and isinstance(recipe.sizes, ChoiceSizes)
        if not (sized and recipe.sizes.match(size)):  # type: ignore[union-attr]
            size, variant = None, size
    path = found[recipe.name][1]
    if isinstance(recipe, MicrobenchRecipe):
        return recipe.resolve(size, variant, recipe_file=path).model_copy(update={"source": path})
    return recipe.resolve(size, variant).model_copy(update={"source": path})
