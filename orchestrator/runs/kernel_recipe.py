"""Kernel benchmark recipes: small programs compiled by the build's own compiler.

A GROMACS recipe names a system for mdrun; a kernel recipe (`kind = "kernel"`) names a
program of ours (`program`: `bandwidth`, `tune`) that the kernel image of a build
compiles with that build's compiler and flags (`images.kernels`) and a run container
runs. It declares what the program measures: each metric's unit and whether higher or
lower is better (or neither: shown, never judged), so compare and bench judge it like
ns/day without knowing the program. Its system name is `name[:size[:variant]]` as for
GROMACS, with sizes in bytes (`64MiB`, `1.5GiB`, `1000000`) and `sweep` where the
program sweeps sizes itself.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import SlurmResources
from orchestrator.parsers.kernelbench import Better, format_bytes, parse_bytes

SWEEP = "sweep"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MetricSpec(_Model):
    """One metric a program reports; `per_size` ones are reported once per size (`ro@64MiB`)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    unit: str
    better: Better
    description: str
    per_size: bool = False


class KernelRecipe(_Model):
    """One `recipes/<name>.toml` of `kind = "kernel"`."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    kind: Literal["kernel"]
    description: str
    program: Literal["bandwidth", "tune"]
    #: Bytes per array by default, or `sweep` when the program sweeps sizes itself.
    default_size: str
    sweep: bool = False
    variants: list[str] = Field(min_length=1)
    default_variant: str
    metrics: list[MetricSpec] = Field(min_length=1)
    #: The metric of the one-line verdict (bench's repeats aim at its precision).
    headline: str
    notes: str | None = None
    #: What a batch job of this recipe asks SLURM for (a GPU type, a longer time).
    slurm: SlurmResources | None = None

    @model_validator(mode="after")
    def _consistent(self) -> KernelRecipe:
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

    def resolve(self, size: str | None = None, variant: str | None = None) -> ResolvedKernel:
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
        return ResolvedKernel(
            name=f"{self.name}:{size_name}:{chosen}",
            recipe=self.name,
            program=self.program,
            bytes=nbytes,
            variant=chosen,
            description=self.description,
            metrics=list(self.metrics),
            headline=self.headline,
            slurm=self.slurm,
        )


class ResolvedKernel(_Model):
    """A kernel recipe with size and variant chosen: what a run of it needs."""

    name: str  # canonical, e.g. "bandwidth:sweep:temporal", "tune:256MiB:quick"
    recipe: str
    program: Literal["bandwidth", "tune"]
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
