"""Microbenchmark recipes: small programs compiled by the build's own compiler.

A GROMACS recipe names a system for mdrun; a microbenchmark recipe (`kind = "kernel"` in
its TOML, a name users write) names a program of ours (`program`: `bandwidth`, `tune`)
that the microbenchmark image of a build compiles with that build's compiler and flags
(`images.microbench`) and a run container runs. It declares what the program measures:
each metric's unit and whether higher or lower is better (or neither: shown, never
judged), so compare and bench judge it like ns/day without knowing the program. Its
system name is `name[:size[:variant]]` as for GROMACS, with sizes in bytes (`64MiB`,
`1.5GiB`, `1000000`) and `sweep` where the program sweeps sizes itself.

A recipe in a user's folder may instead name its own GPU kernel sources next to the
recipe file (`[sources]`: `hip`, `cuda`, `cpu`), written against
`payloads/microbench/gmxbench_kernel.h`; the platform's API picks the one compiled
(`images.user_kernels`). A recipe has either a `program` or `sources`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import SlurmResources
from orchestrator.images.user_kernels import UserProgram
from orchestrator.parsers.microbench import Better, format_bytes, parse_bytes

SWEEP = "sweep"
#: The TOML `kind` of a microbenchmark recipe: users' recipes say it, so it stays.
RECIPE_KIND = "kernel"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MetricSpec(_Model):
    """One metric a program reports; `per_size` ones are reported once per size (`ro@64MiB`)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    unit: str
    better: Better
    description: str
    per_size: bool = False


#: The characters of a source path (it goes into a Dockerfile and a compile line); that
#: it stays inside the recipe's folder is checked when the recipe is read.
SOURCE_PATH = re.compile(r"[A-Za-z0-9_.+/-]+")


def _source_path(value: str | None) -> str | None:
    if value is not None and not SOURCE_PATH.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a plain file name: name the source relative to the recipe, "
            "with letters, digits and _ . + - / only"
        )
    return value


SourcePath = Annotated[str | None, AfterValidator(_source_path)]


class KernelSources(_Model):
    """`[sources]`: the user's source per API, relative to the recipe file."""

    hip: SourcePath = None
    cuda: SourcePath = None
    cpu: SourcePath = None

    def named(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class MicrobenchRecipe(_Model):
    """One `recipes/<name>.toml` of `kind = "kernel"` (`RECIPE_KIND`)."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    kind: Literal["kernel"]
    description: str
    #: One of our programs, or None for a recipe with its own `sources`.
    program: Literal["bandwidth", "tune"] | None = None
    sources: KernelSources | None = None
    #: The user's kernel functions: what the CPU fingerprint looks at (default: all).
    functions: list[str] = []
    #: Bytes per array by default, or `sweep` when the program sweeps sizes itself.
    default_size: str
    sweep: bool = False
    variants: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    default_variant: str = "default"
    metrics: list[MetricSpec] = Field(min_length=1)
    #: The metric of the one-line verdict (bench's repeats aim at its precision).
    headline: str
    notes: str | None = None
    #: What a batch job of this recipe asks SLURM for (a GPU type, a longer time).
    slurm: SlurmResources | None = None

    @model_validator(mode="after")
    def _consistent(self) -> MicrobenchRecipe:
        if (self.program is None) == (self.sources is None):
            raise ValueError(
                'a kernel recipe names either a program of ours (program = "bandwidth") '
                'or its own sources ([sources] hip = "my_kernel.hip"), not both or neither'
            )
        if self.sources is not None and not self.sources.named():
            raise ValueError("[sources] names no file: add hip, cuda or cpu")
        if self.sources is not None and self.sweep:
            raise ValueError("a recipe with its own sources runs one size: sweep = false")
        if self.default_variant not in self.variants:
            raise ValueError("default_variant must be one of variants")
        names = [m.name for m in self.metrics]
        if self.headline not in names:
            raise ValueError(f"headline {self.headline!r} is not one of the metrics")
        if self.default_size == SWEEP and not self.sweep:
            raise ValueError("default_size 'sweep' needs sweep = true")
        if self.default_size != SWEEP and parse_bytes(self.default_size) is None:
            raise ValueError(f"default_size {self.default_size!r} is not a size in bytes")
        return self

    def usage(self) -> str:
        return f"{self.name}[:{'sweep|' if self.sweep else ''}BYTES[:{'|'.join(self.variants)}]]"

    def user_program(self, recipe_file: str) -> UserProgram | None:
        """The recipe's own sources as an image builds them (None: a program of ours)."""
        if self.sources is None:
            return None
        return UserProgram(
            recipe=self.name,
            recipe_file=str(Path(recipe_file).resolve()),
            sources=self.sources.named(),
            functions=list(self.functions),
        )

    def resolve(
        self, size: str | None = None, variant: str | None = None, recipe_file: str = ""
    ) -> ResolvedMicrobench:
        """Size and variant chosen; `recipe_file` is where a recipe with sources was read."""
        wanted = size or self.default_size
        if wanted == SWEEP and self.sweep:
            nbytes = None
        else:
            nbytes = parse_bytes(wanted)
            if nbytes is None or not 64 <= nbytes <= 1 << 40:
                raise UsageError(
                    f"{self.name} size {size!r} is not a size in bytes; write it like "
                    f"{self.name}:64MiB, {self.name}:1.5GiB"
                    + (f" or {self.name}:sweep." if self.sweep else ".")
                )
        chosen = variant or self.default_variant
        if chosen not in self.variants:
            raise UsageError(
                f"{self.name} has no variant {variant!r}; variants: {', '.join(self.variants)} "
                f"(e.g. {self.name}::{self.variants[-1]})."
            )
        size_name = SWEEP if nbytes is None else format_bytes(nbytes)
        program = self.program or self.user_program(recipe_file)
        assert program is not None  # one or the other (_consistent)
        return ResolvedMicrobench(
            name=f"{self.name}:{size_name}:{chosen}",
            recipe=self.name,
            program=program,
            bytes=nbytes,
            variant=chosen,
            description=self.description,
            metrics=list(self.metrics),
            headline=self.headline,
            slurm=self.slurm,
        )


class ResolvedMicrobench(_Model):
    """A microbenchmark recipe with size and variant chosen: what a run of it needs."""

    name: str  # canonical, e.g. "bandwidth:sweep:temporal", "tune:256MiB:quick"
    recipe: str
    #: One of our programs by name, or a user's own sources.
    program: Literal["bandwidth", "tune"] | UserProgram
    #: Bytes per array; None for a sweep.
    bytes: int | None
    variant: str
    description: str
    metrics: list[MetricSpec]
    headline: str
    source: str | None = None
    slurm: SlurmResources | None = None

    def spec(self, metric: str) -> MetricSpec | None:
        """The declaration of `metric` (`ro@64MiB` is declared as `ro`, per size)."""
        family = metric.split("@", 1)[0]
        return next((m for m in self.metrics if m.name == family), None)
