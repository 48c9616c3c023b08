"""Benchmark recipes: declarative system definitions in TOML files, one per recipe.

The shipped recipes are the top-level `recipes/*.toml` (package data in a wheel); folders
named by `ORCH_RECIPES_DIRS` (`:`-separated) are searched first, so a site can add systems or
replace a shipped one (say, `benchMEM` from a local mirror) without touching the tool.

A *system name* selects a recipe and, where the recipe has them, a size and a variant:

    name[:size[:variant]]

* `water` (the default when no system is named) is generated inside the GROMACS image
  from GROMACS's own `spc216.gro`; its size is an atom count: `water:3k`, `water:24k`,
  `water:1.5M`, `water:6000`. The cubic box edge is derived from the count (SPC/E water
  ≈ 33.4 waters/nm³), so the real count differs from the request by a few molecules.
* `water_GMX50:0003:pme` is the GROMACS water benchmark: size = a subdirectory of the
  archive (thousands of atoms: `0000.65` ... `3072`; `3k`, `3` and `0003` all mean the
  same), variant = `pme` or `rf` (which `.mdp` grompp uses).
* `benchMEM`, `benchRIB` (MPI-NAT) have neither size nor variant.

An empty part means "the default" (`water_GMX50::rf`); when a recipe has variants and the
second part is one of them and not a size, it is the variant (`water:rf`). The canonical
name (`ResolvedSystem.name`) always spells out every part: `water:6k:pme`.

Recipe files (one per recipe, file stem = `name`) are validated by `Recipe`. Strings in
`inputs`, `tpr` may use the placeholders `@size@`, `@variant@`; a `generate` script also
`@atoms@`, `@waters@`, `@box@` (nm, 3 decimals) and `@steps@`.
"""

from orchestrator.runs.recipe.loading import (
    DEFAULT_SYSTEM,
    SHIPPED,
    AnyRecipe,
    find_recipes,
    list_recipes,
    load_recipe,
    load_system,
    parse_system_name,
)
from orchestrator.runs.recipe.models import (
    AtomSizes,
    ChoiceSizes,
    CopyTpr,
    GenerateTpr,
    GromppTpr,
    InputSpec,
    Recipe,
    ResolvedSystem,
    TprSpec,
    format_atoms,
    parse_atoms,
)

__all__ = [
    "DEFAULT_SYSTEM",
    "SHIPPED",
    "AnyRecipe",
    "AtomSizes",
    "ChoiceSizes",
    "CopyTpr",
    "GenerateTpr",
    "GromppTpr",
    "InputSpec",
    "Recipe",
    "ResolvedSystem",
    "TprSpec",
    "find_recipes",
    "format_atoms",
    "list_recipes",
    "load_recipe",
    "load_system",
    "parse_atoms",
    "parse_system_name",
]
