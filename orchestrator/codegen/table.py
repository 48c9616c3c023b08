"""A codegen diff in words: the per-category summary lines that `bench`, `compare` and
the report print beside a timing verdict, and `codegen diff`'s table of the changed
kernels, most important first, each with its baseline → candidate counts (the numbers
are `codegen.diff`'s)."""

from __future__ import annotations

from typing import Literal

from tabulate import tabulate

from orchestrator.codegen.diff import CategoryDiff, CodegenDiff, KernelDelta, Pair, short_name

Format = Literal["simple", "markdown"]


def summary_line(c: CategoryDiff, deltas: list[KernelDelta]) -> str:
    """One line for one category, to print beside its timing verdict."""
    if c.identical:
        return f"{c.category}: code unchanged ({len(c.unchanged)} kernels identical)"
    parts = [f"{len(c.changed)} of {c.total} kernels changed"]
    mine = [k for k in deltas if k.category == c.category]
    drops = sum(1 for k in mine if k.occupancy_drop)
    spills = sum(1 for k in mine if k.spill_increase)
    if drops:
        parts.append(f"{drops} with lower occupancy")
    if spills:
        parts.append(f"{spills} with more spills")
    if c.only_baseline:
        parts.append(f"{len(c.only_baseline)} only in the baseline")
    if c.only_candidate:
        parts.append(f"{len(c.only_candidate)} only in the candidate")
    return f"{c.category}: " + ", ".join(parts)


def summary_lines(d: CodegenDiff) -> list[str]:
    return [summary_line(c, d.changed) for c in d.categories.values()]


def _arrow(pair: Pair) -> str:
    base, cand = pair
    if base == cand:
        return "" if base is None else str(base)
    return f"{'–' if base is None else base}→{'–' if cand is None else cand}"


HEADERS = ["category", "kernel", "instr", "Δinstr", "VGPR", "SGPR", "spills", "scratch",
           "LDS", "occupancy", "note"]  # fmt: skip
#: NVIDIA's words for the same columns (`KernelDelta` says which counts they hold).
NVIDIA_WORDS = {"VGPR": "REG", "scratch": "stack+local", "LDS": "shared",
                "occupancy": "warps/SM"}  # fmt: skip


def headers(names: list[str], arch: str | None) -> list[str]:
    """`names` in the words of `arch`'s vendor."""
    nvidia = (arch or "").startswith("sm_")
    return [NVIDIA_WORDS.get(n, n) if nvidia else n for n in names]


def render(d: CodegenDiff, fmt: Format = "simple", limit: int = 40, note: bool = True) -> str:
    """A code-object version difference first (unless `note` is False: the caller printed
    it), then the category summary, then the changed kernels, most important first."""
    first = d.code_object_note() if note else None
    lines = [*([first] if first else []), f"codegen: {d.baseline} → {d.candidate}",
             *summary_lines(d), ""]  # fmt: skip
    if d.changed:
        rows = []
        for k in d.changed[:limit]:
            base_instr, cand_instr = k.instructions
            pct = f"{100 * (cand_instr or 0) / base_instr - 100:+.0f}%" if base_instr else "n/a"
            rows.append([
                k.category, short_name(k.demangled or k.name), _arrow(k.instructions), pct,
                _arrow(k.vgprs), _arrow(k.sgprs), _arrow(k.spills), _arrow(k.scratch_bytes),
                _arrow(k.lds_bytes), _arrow(k.occupancy), k.note(),
            ])  # fmt: skip
        table = tabulate(
            rows,
            headers=headers(HEADERS, d.arch),
            tablefmt="github" if fmt == "markdown" else "simple",
        )
        lines.append(table)
        if len(d.changed) > limit:
            lines.append(f"… and {len(d.changed) - limit} more changed kernels")
    else:
        lines.append("no kernel's code changed")
    return "\n".join(lines).rstrip() + "\n"
