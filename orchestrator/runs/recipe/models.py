"""What a recipe file declares (:class:`Recipe`) and the system it resolves to for a size and
variant (:class:`ResolvedSystem`): the schema every `recipes/*.toml` is validated by."""

from __future__ import annotations

import math
import re
import shlex
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import SlurmResources
from orchestrator.platforms.base import ProfilerOptions

PLACEHOLDER = re.compile(r"@([a-z_]+)@")
PATH_PLACEHOLDERS = frozenset({"size", "variant"})
SCRIPT_PLACEHOLDERS = PATH_PLACEHOLDERS | {"atoms", "waters", "box", "steps"}

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def _relative(value: str) -> str:
    parts = value.split("/")
    if not value or value.startswith("/") or ".." in parts or "\\" in value:
        raise ValueError("must be a relative path inside the archive, without '..'")
    return value


RelPath = Annotated[str, AfterValidator(_relative)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Model):
    """One downloaded archive."""

    url: str = Field(pattern=r"^(https?|file)://")
    sha256: Sha256
    kind: Literal["zip", "tar.gz"]
    #: Name of the archive on disk and in `--inputs-dir`; default: the URL's last segment.
    filename: str = Field("", pattern=r"^[^/\\]*$")
    #: Directory inside the archive to unpack (its contents become the system directory).
    member: RelPath | None = None
    #: Decompress `*.gz` files found after unpacking (`conf.gro.gz` → `conf.gro`).
    gunzip: bool = False

    @model_validator(mode="after")
    def _default_filename(self) -> InputSpec:
        if not self.filename:
            name = urlsplit(self.url).path.rstrip("/").rsplit("/", 1)[-1]
            if not name:
                raise ValueError(f"cannot derive a file name from {self.url}; set filename")
            object.__setattr__(self, "filename", name)
        return self

    @property
    def cache_name(self) -> str:
        """File name in `<cache_dir>/inputs/`: the checksum prefix keeps versions apart."""
        return f"{self.sha256[:12]}-{self.filename}"


class CopyTpr(_Model):
    """`topol.tpr` is a ready-made run input inside the archive."""

    method: Literal["copy"]
    path: RelPath


class GromppTpr(_Model):
    """`topol.tpr` is made by `gmx grompp` from files inside the unpacked archive."""

    method: Literal["grompp"]
    mdp: RelPath
    conf: RelPath
    top: RelPath
    maxwarn: int = Field(0, ge=0)


class GenerateTpr(_Model):
    """`topol.tpr` is made by a POSIX shell script run in the GROMACS image, no download."""

    method: Literal["generate"]
    script: str = Field(min_length=1)


TprSpec = Annotated[CopyTpr | GromppTpr | GenerateTpr, Field(discriminator="method")]


class ChoiceSizes(_Model):
    """Sizes are fixed names (archive subdirectories), each a number of thousands of atoms."""

    kind: Literal["choice"]
    choices: list[str] = Field(min_length=1)
    default: str

    @model_validator(mode="after")
    def _default_listed(self) -> ChoiceSizes:
        if self.default not in self.choices:
            raise ValueError(f"default size {self.default!r} is not one of the choices")
        for choice in self.choices:
            float(choice)  # ValueError names the bad choice
        return self

    def match(self, text: str) -> str | None:
        if text in self.choices:
            return text
        value = _number(text.removesuffix("k").removesuffix("K"))
        for choice in self.choices:
            if value is not None and math.isclose(float(choice), value):
                return choice
        return None


class AtomSizes(_Model):
    """Sizes are atom counts (`6k`, `24k`, `1.5M`, `6000`) from which the box is derived."""

    kind: Literal["atoms"]
    default: str
    min_atoms: int = Field(gt=0)
    max_atoms: int = Field(gt=0)
    atoms_per_molecule: int = Field(3, gt=0)
    molecules_per_nm3: float = Field(33.4, gt=0)

    @model_validator(mode="after")
    def _default_in_range(self) -> AtomSizes:
        atoms = parse_atoms(self.default)
        if atoms is None or not self.min_atoms <= atoms <= self.max_atoms:
            raise ValueError(f"default size {self.default!r} is not an atom count in range")
        return self


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def parse_atoms(text: str) -> int | None:
    """`6k` → 6000, `1.5M` → 1500000, `6000` → 6000; None when not a count."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    value = _number(text[:-1] if scale > 1 else text)
    return None if value is None else round(value * scale)


def format_atoms(atoms: int) -> str:
    if atoms >= 1_000_000 and atoms % 100_000 == 0:
        return f"{atoms / 1_000_000:g}M"
    if atoms % 100 == 0:
        return f"{atoms / 1000:g}k"
    return str(atoms)


def _placeholders(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(PLACEHOLDER.findall(value))
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*(_placeholders(item) for item in value))
    return set()


def _fill(value: Any, values: dict[str, str]) -> Any:
    """`value` (str, list, dict, model dump) with every `@name@` replaced."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], value)
    if isinstance(value, list):
        return [_fill(item, values) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, values) for key, item in value.items()}
    return value


class Recipe(_Model):
    """One `recipes/<name>.toml` file."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    description: str
    #: Approximate atom count of a fixed-size system (the exact one is in md.log).
    atoms: int | None = Field(None, gt=0)
    default_steps: int = Field(gt=0)
    #: mdrun arguments this system needs, added to every run of it.
    mdrun_args: list[str] = []
    #: False when update/constraints cannot run on the GPU (`-update gpu` fails).
    gpu_update: bool = True
    #: The constraint algorithms the topology uses (which constraint kernels can run).
    constraints: list[Literal["settle", "lincs"]] = []
    #: Kernel family -> the mdrun options that make this system run it on a GPU
    #: (`{lincs = ["-update", "gpu"]}`); `bench --system auto` adds them (`runs.coverage`).
    exercise: dict[str, list[str]] = {}
    sizes: Annotated[ChoiceSizes | AtomSizes, Field(discriminator="kind")] | None = None
    variants: list[str] = []
    default_variant: str | None = None
    inputs: list[InputSpec] = []
    tpr: TprSpec
    homepage: str | None = None
    attribution: str | None = None
    notes: str | None = None
    #: What a batch job of this system asks SLURM for (a GPU type, a longer time).
    slurm: SlurmResources | None = None
    #: rocprof-sys settings and rocprof-compute arguments for this system's profiled runs.
    profiler: ProfilerOptions | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Recipe:
        if self.variants and self.default_variant not in self.variants:
            raise ValueError("default_variant must be one of variants")
        if not self.variants and self.default_variant is not None:
            raise ValueError("default_variant given without variants")
        if (self.tpr.method == "generate") != (not self.inputs):
            raise ValueError("'generate' recipes take no inputs; 'copy'/'grompp' need inputs")
        if self.tpr.method != "generate" and isinstance(self.sizes, AtomSizes):
            raise ValueError("atom-count sizes are only for generated systems")
        allowed = SCRIPT_PLACEHOLDERS if self.tpr.method == "generate" else PATH_PLACEHOLDERS
        used = _placeholders(self.inputs) | _placeholders(self.tpr)
        if used - allowed:
            raise ValueError(f"unknown placeholders: {', '.join(sorted(used - allowed))}")
        if "size" in used and self.sizes is None:
            raise ValueError("@size@ is used but the recipe has no sizes")
        if "variant" in used and not self.variants:
            raise ValueError("@variant@ is used but the recipe has no variants")
        if used & {"atoms", "waters", "box"} and not isinstance(self.sizes, AtomSizes):
            raise ValueError("@atoms@, @waters@ and @box@ need sizes of kind 'atoms'")
        return self

    def usage(self) -> str:
        """How to name this recipe's systems, e.g. `water_GMX50[:SIZE[:pme|rf]]`."""
        size = {None: "", "choice": "SIZE", "atoms": "ATOMS"}[
            self.sizes.kind if self.sizes else None
        ]
        variant = "|".join(self.variants)
        if size and variant:
            return f"{self.name}[:{size}[:{variant}]]"
        return f"{self.name}[:{size or variant}]" if size or variant else self.name

    def resolve(self, size: str | None = None, variant: str | None = None) -> ResolvedSystem:
        """The concrete system for a size and variant (None or "" = the default)."""
        values: dict[str, str] = {}
        atoms = self.atoms
        if size and self.sizes is None:
            raise UsageError(f"System {self.name!r} has no sizes; name it as {self.usage()}.")
        if isinstance(self.sizes, ChoiceSizes):
            chosen = self.sizes.match(size) if size else self.sizes.default
            if chosen is None:
                raise UsageError(
                    f"{self.name} has no size {size!r}. Sizes (thousands of atoms): "
                    f"{', '.join(self.sizes.choices)}; e.g. {self.name}:{self.sizes.default}."
                )
            values["size"], atoms = chosen, round(float(chosen) * 1000)
        elif isinstance(self.sizes, AtomSizes):
            atoms = parse_atoms(size or self.sizes.default)
            low, high = self.sizes.min_atoms, self.sizes.max_atoms
            if atoms is None or not low <= atoms <= high:
                raise UsageError(
                    f"{self.name} size {size!r} is not an atom count between "
                    f"{format_atoms(low)} and {format_atoms(high)}; "
                    f"write it like {self.name}:6k, {self.name}:24k or {self.name}:1.5M."
                )
            molecules = max(1, round(atoms / self.sizes.atoms_per_molecule))
            box = (molecules / self.sizes.molecules_per_nm3) ** (1 / 3)
            values |= {"size": format_atoms(atoms), "atoms": str(atoms)}
            values |= {"waters": str(molecules), "box": f"{box:.3f}"}
        if variant and not self.variants:
            raise UsageError(f"System {self.name!r} has no variants; name it as {self.usage()}.")
        if self.variants:
            chosen_variant = variant or self.default_variant or ""
            if chosen_variant not in self.variants:
                raise UsageError(
                    f"{self.name} has no variant {variant!r}; variants: "
                    f"{', '.join(self.variants)} (e.g. {self.name}::{self.variants[-1]})."
                )
            values["variant"] = chosen_variant
        name = ":".join([self.name] + [values[k] for k in ("size", "variant") if k in values])
        inputs = [InputSpec.model_validate(_fill(i.model_dump(), values)) for i in self.inputs]
        key_parts = [self.name] + [
            values[k] for k in ("size", "variant") if k in _placeholders(self.inputs)
        ]
        return ResolvedSystem(
            name=name,
            recipe=self.name,
            size=values.get("size"),
            variant=values.get("variant"),
            atoms=atoms,
            description=self.description,
            default_steps=self.default_steps,
            mdrun_args=list(self.mdrun_args),
            gpu_update=self.gpu_update,
            constraints=list(self.constraints),
            exercise={family: list(args) for family, args in self.exercise.items()},
            inputs=inputs,
            tpr=_fill(self.tpr.model_dump(), values | {"steps": "@steps@"}),
            input_key="/".join(key_parts),
            attribution=self.attribution,
            slurm=self.slurm,
            profiler=self.profiler,
        )


class ResolvedSystem(_Model):
    """A recipe with size and variant chosen: everything a run needs to make `topol.tpr`."""

    name: str  # canonical, e.g. "water:6k:pme", "water_GMX50:0096:pme", "benchMEM"
    recipe: str
    size: str | None
    variant: str | None
    atoms: int | None
    description: str
    default_steps: int
    mdrun_args: list[str]
    gpu_update: bool
    inputs: list[InputSpec]
    constraints: list[Literal["settle", "lincs"]] = []
    exercise: dict[str, list[str]] = {}
    #: Placeholders are filled except `@steps@` in a generate script (see `setup_script`).
    tpr: TprSpec
    #: Directory under `<cache_dir>/systems/` that holds the unpacked inputs.
    input_key: str
    attribution: str | None = None
    #: The recipe file it came from.
    source: str | None = None
    slurm: SlurmResources | None = None
    profiler: ProfilerOptions | None = None

    @property
    def generated(self) -> bool:
        return self.tpr.method == "generate"

    def required_files(self) -> list[str]:
        """Paths, relative to the unpacked inputs, that must exist."""
        if isinstance(self.tpr, CopyTpr):
            return [self.tpr.path]
        if isinstance(self.tpr, GromppTpr):
            return [self.tpr.mdp, self.tpr.conf, self.tpr.top]
        return []

    def setup_script(self, inputs_dir: str = "/inputs", steps: int | None = None) -> str:
        """POSIX shell that writes `topol.tpr` into the current directory, in the GROMACS image.

        `inputs_dir` is where the unpacked inputs are visible (unused by generated systems);
        `steps` goes into a generated system's mdp (default: the recipe's `default_steps`).
        """
        tpr = self.tpr
        if isinstance(tpr, GenerateTpr):
            nsteps = str(self.default_steps if steps is None else steps)
            return "set -eu\n" + tpr.script.replace("@steps@", nsteps).strip() + "\n"

        def at(rel: str) -> str:
            return shlex.quote(f"{inputs_dir.rstrip('/')}/{rel}")

        if isinstance(tpr, CopyTpr):
            return f"set -eu\ncp {at(tpr.path)} topol.tpr\n"
        return (
            'set -eu\n"${GMX:-gmx}" grompp '
            f"-f {at(tpr.mdp)} -c {at(tpr.conf)} -p {at(tpr.top)} "
            f"-o topol.tpr -maxwarn {tpr.maxwarn}\n"
        )
