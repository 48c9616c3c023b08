"""Where `bench` measures a compiler change: on a system that runs the changed kernels.

`--system auto` picks the cheapest system that runs every changed kernel family and says
why; a named system that does not run them gets a caution naming the systems that do.
Both add the mdrun options the recipe states for the changed families (`exercise`),
except with --cpu-only: they are GPU options, and those runs are host code's.
What a system runs is `runs.coverage`'s answer. The changed kernels are those of the
target the runs' GPU executes (`codegen.targets`): another target's changes run
on another GPU.
"""

from __future__ import annotations

from orchestrator.codegen.diff import CodegenDiff, short_name
from orchestrator.core.errors import UserError
from orchestrator.core.events import Caution, Emit, Message, Step
from orchestrator.core.settings import Settings
from orchestrator.runs.coverage import JUDGED, candidates, choose, coverage, family, finished_runs
from orchestrator.runs.recipe import DEFAULT_SYSTEM, load_recipe
from orchestrator.store.runstore import RunStore

#: `--system auto`: the cheapest system that runs every changed kernel.
AUTO = "auto"


def changed_families(diff: CodegenDiff) -> dict[str, list[str]]:
    """Family -> the changed kernels' names (demangled where known), judged families only."""
    found: dict[str, list[str]] = {}
    for k in diff.changed:
        fam = family(k.demangled or k.name, k.category)
        if fam in JUDGED:
            found.setdefault(fam, []).append(k.demangled or k.name)
    return found


def place(
    settings: Settings, system: str | None, args: list[str], steps: int | None,
    cpu_only: bool, codegen: CodegenDiff | None, emit: Emit,
) -> tuple[str | None, list[str]]:  # fmt: skip
    """The system to measure (None: the default) and the mdrun options to run it with."""
    wanted = changed_families(codegen) if codegen is not None else {}
    gpu = codegen.gpu if codegen is not None else True
    if system == AUTO and not wanted:
        emit(Step(f"--system auto: no changed kernel of a family it can place; {DEFAULT_SYSTEM}"))
        return None, args
    stored = finished_runs(RunStore(settings.results_dir))
    systems = candidates(settings.recipes_dirs)
    if system == AUTO:
        choice = choose(stored, systems, wanted, steps, gpu, cpu_only)
        if choice is None:
            raise UserError(
                f"--system auto: no system runs every changed kernel family "
                f"({', '.join(sorted(wanted))}) by its recipe's options or stored runs. Name "
                "one with --system, or add a recipe that runs them (docs/recipes.md, which "
                "kernels a system runs)."
            )
        emit(Step(f"--system auto: {choice.why}"))
        return choice.system.name, _with(args, choice.system.name, choice.args, cpu_only, emit)
    resolved = load_recipe(system, settings.recipes_dirs)
    found = coverage(stored, resolved, args, gpu, wanted)
    missing = sorted(set(wanted) - found.families)
    if missing:
        where = "on a GPU " if gpu and cpu_only else ""
        names = [s.name for s in systems
                 if set(missing) <= coverage(stored, s, (), gpu, missing).families]  # fmt: skip
        kernels = "; ".join(f"{fam}: {', '.join(map(short_name, wanted[fam][:3]))}"
                            for fam in missing)  # fmt: skip
        emit(Caution(
            f"the changed kernels ({kernels}) do not run {where}in {resolved.name} (by "
            f"{found.why}): systems that run them: {', '.join(names) or 'none known'}; "
            "--system auto picks the cheapest"
        ))  # fmt: skip
    return resolved.name, _with(args, resolved.name, found.args, cpu_only, emit)


def _with(args: list[str], system: str, extra: list[str], cpu_only: bool, emit: Emit) -> list[str]:
    """`args` and the recipe's options for the changed kernels (unless already given)."""
    n = len(extra)
    if any(args[i : i + n] == extra for i in range(len(args) - n + 1)):
        extra = []
    if extra and cpu_only:
        emit(Message(f"--cpu-only: not adding {' '.join(extra)} (GPU options) to {system}"))
        return list(args)
    if extra:
        emit(Message(f"{system}: adding {' '.join(extra)}, which runs the changed kernels"))
    return [*args, *extra]
