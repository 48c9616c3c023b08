"""Which kernel families a system runs, so that a bench measures where a change runs.

A compiler change touches some kernels (the codegen diff says which); a system launches
some kernels (this module says which). Both are reduced to *families*: `lincs`,
`settle`, `update` (leap-frog) by the kernel's name, else the kernel's category
(`nbnxm`, `pme_spread`, `pme_solve`, `pme_gather`, `fft`, `memory`; `other` is
unjudged: a bonded or unknown kernel may run anywhere, so it never triggers a warning).

What a system runs comes from two places, and their union counts:

* its **options**: the recipe's constraints (`settle`, `lincs`), PME unless the variant
  is `rf`, whether update may run on the GPU (`gpu_update`), and the mdrun options of
  the run (`-nb`/`-pme`/`-pmefft`/`-update`, the last one given wins). On a GPU, update
  and constraint kernels launch only with `-update gpu`: a recipe's `exercise` table
  names the options that make it run a family. On the CPU every part runs on the CPU.
* its **stored runs**: a ROCm run's kernel trace names the kernels it launched; a CPU
  run's cycle accounting has a `Constraints` and an `Update` row when they ran.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from orchestrator.parsers.categories import base_name
from orchestrator.platforms import get as platform
from orchestrator.runs.recipe import Recipe, ResolvedSystem, list_recipes
from orchestrator.store.records import RunResult
from orchestrator.store.runstore import RunStore

#: Families told by the kernel's (or host function's) base name, before its category.
NAME_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("lincs", re.compile(r"(?i)lincs")),
    ("settle", re.compile(r"(?i)settle")),
    ("update", re.compile(r"(?i)leap_?frog|update_?md|updateMD")),
)
PME = ("pme_spread", "pme_solve", "pme_gather", "fft")
#: Families whose launch this module can judge; the rest (`other`) it cannot.
JUDGED = frozenset({"nbnxm", "memory", "update", "settle", "lincs", *PME})
#: mdrun's values of those options for the host and for a GPU (`-update gpu`).
ON_HOST, ON_GPU = "cpu", "gpu"
#: The mdrun options that move work between the CPU and a GPU.
_PLACEMENT = ("-nb", "-pme", "-pmefft", "-update", "-bonded")


def family(name: str, category: str) -> str:
    """The family of one kernel or host function: by name (LINCS, SETTLE, update), else
    its category."""
    base = base_name(name) or name
    for fam, rule in NAME_RULES:
        if rule.search(base):
            return fam
    return category


def placement(args: Sequence[str]) -> dict[str, str]:
    """`-nb gpu -update cpu …` -> {"-nb": "gpu", "-update": "cpu"}; the last one wins."""
    found = {}
    for option, value in pairwise(args):
        if option in _PLACEMENT:
            found[option] = value
    return found


def from_options(system: ResolvedSystem, args: Sequence[str] = (), gpu: bool = True) -> set[str]:
    """The families `system` launches with mdrun options `args` (after the recipe's own)."""
    pme = system.variant != "rf"
    constraints = set(system.constraints)
    if not gpu:
        return {"nbnxm", "update", *constraints, *(PME if pme else ())}
    where = placement([*system.mdrun_args, *args])
    found: set[str] = set()
    if where.get("-nb") != ON_HOST:
        found |= {"nbnxm", "memory"}
        if pme and where.get("-pme") != ON_HOST:
            found |= {"pme_spread", "pme_solve", "pme_gather"}
            if where.get("-pmefft") != ON_HOST:
                found.add("fft")
    if system.gpu_update and where.get("-update") == ON_GPU:
        found |= {"update", *constraints}
    return found


def finished_runs(store: RunStore) -> list[tuple[Path, RunResult]]:
    """The store's finished runs, newest first (read once per decision)."""
    found = []
    for path in sorted(store.runs(), reverse=True):
        status = store.status(path)
        if status.state == "finished" and status.result is not None:
            found.append((path, status.result))
    return sorted(found, key=lambda item: item[1].timestamp, reverse=True)


def _same_system(stored: str, system: ResolvedSystem) -> bool:
    """A stored run of the same recipe and variant (any size launches the same kernels)."""
    parts = stored.split(":")
    return parts[0] == system.recipe and (system.variant is None or system.variant in parts[1:])


def from_runs(
    runs: Sequence[tuple[Path, RunResult]], system: ResolvedSystem, gpu: bool = True
) -> tuple[set[str], str]:
    """Families the newest stored run of `system` launched (GPU: its kernel trace; CPU:
    its cycle accounting), and which run says so ("" when none)."""
    for path, result in runs:
        if not _same_system(result.system, system):
            continue
        breakdown = RunStore.breakdown(path)
        if breakdown is None or not breakdown.kernels:
            continue
        traced = "md.log" not in breakdown.source
        if gpu and traced and not result.cpu_only:
            return {family(k.name, k.category) for k in breakdown.kernels}, path.name
        on_host = result.cpu_only or platform(result.platform).build.gpu_support == "disabled"
        if not gpu and not traced and on_host:
            rows = {k.name.strip().lower() for k in breakdown.kernels if k.calls}
            found = {k.category for k in breakdown.kernels if k.calls} & JUDGED
            found |= {"update"} if "update" in rows else set()
            found |= set(system.constraints) if "constraints" in rows else set()
            return found, path.name
    return set(), ""


@dataclass
class Coverage:
    """What one system runs, and why this module thinks so."""

    system: ResolvedSystem
    families: set[str]
    why: str
    #: mdrun options this system needs for the families asked about (its `exercise`).
    args: list[str] = field(default_factory=list)


def coverage(
    runs: Sequence[tuple[Path, RunResult]], system: ResolvedSystem, args: Sequence[str] = (),
    gpu: bool = True, wanted: Iterable[str] = (),
) -> Coverage:  # fmt: skip
    """The families `system` runs with `args`, plus the options its recipe states for
    the `wanted` families (`exercise`)."""
    extra: list[str] = []
    for fam in sorted(set(wanted)):
        for option in system.exercise.get(fam, []) if gpu else []:
            if option not in extra:
                extra.append(option)
    options = from_options(system, [*args, *extra], gpu)
    traced, run = from_runs(runs, system, gpu)
    how = "its options" + (f" ({' '.join(extra)})" if extra else "")
    why = how + (f" and the stored run {run}" if run else "")
    return Coverage(system, options | traced, why, extra)


def cost(
    runs: Sequence[tuple[Path, RunResult]], system: ResolvedSystem, steps: int | None,
    cpu_only: bool = False,
) -> tuple[float, str]:  # fmt: skip
    """What one run of `system` costs: from its stored finished runs (alike in
    `cpu_only`) the median seconds per step × steps plus the median setup, else
    atoms × steps; the unit says which."""
    count = steps or system.default_steps
    per_step, setup = [], []
    for _, r in runs:
        if r.system == system.name and r.cpu_only == cpu_only and r.steps and r.mdrun_wall_seconds:
            per_step.append(r.mdrun_wall_seconds / r.steps)
            setup.append(r.setup_seconds or 0.0)
    if per_step:
        return statistics.median(per_step) * count + statistics.median(setup), "s"
    return float((system.atoms or 0) * count), "atom-steps"


@dataclass
class Choice:
    """The system `--system auto` chose, the options it adds, and why."""

    system: ResolvedSystem
    args: list[str]
    why: str


def candidates(dirs: Sequence[Path] = ()) -> list[ResolvedSystem]:
    """Every GROMACS system at its default size and variant."""
    return [r.resolve() for r in list_recipes(dirs) if isinstance(r, Recipe)]


def choose(
    runs: Sequence[tuple[Path, RunResult]], systems: Sequence[ResolvedSystem],
    wanted: Iterable[str], steps: int | None = None, gpu: bool = True, cpu_only: bool = False,
) -> Choice | None:  # fmt: skip
    """The cheapest system that runs every `wanted` family; None when none does.

    Costs are compared in one unit: seconds when every covering system has stored runs
    to estimate them from, else atoms × steps for all.
    """
    need = set(wanted)
    covering = [c for s in systems if need <= (c := coverage(runs, s, (), gpu, need)).families]
    if not covering:
        return None
    costs = {c.system.name: cost(runs, c.system, steps, cpu_only) for c in covering}
    if any(unit != "s" for _, unit in costs.values()):
        costs = {
            c.system.name: (float((c.system.atoms or 0) * (steps or c.system.default_steps)),
                            "atom-steps")
            for c in covering
        }  # fmt: skip
    ranked = sorted(covering, key=lambda c: (costs[c.system.name][0], c.system.name))
    best = ranked[0]

    def price(c: Coverage) -> str:
        value, unit = costs[c.system.name]
        return f"{value:.0f} s per run (stored runs)" if unit == "s" else f"{value:.3g} {unit}"

    rest = ", ".join(f"{c.system.name} {price(c)}" for c in ranked[1:])
    why = (
        f"{best.system.name} runs {', '.join(sorted(need))} (from {best.why}) and is the "
        f"cheapest that does: {price(best)}" + (f"; also covering: {rest}" if rest else "")
    )
    return Choice(best.system, best.args, why)
