"""Comparison records written while a comparison still carried its sentences: the numbers
and names behind each sentence, read back so the record loads and says the same again.

Only our own sentences are read (their wording is fixed below, as `report.words` still
writes it), and only when a record lacks the fields that replaced them. What cannot be
read back is dropped: a kernel run's `findings` (its facts and `tune`'s optimum) and
rocprof-compute's `notes` (extra keys, which the models ignore).
"""

from __future__ import annotations

import ast
import re
from typing import Any

_ENERGY = re.compile(
    r"average potential energy (?P<candidate>-?[\d.]+) vs baseline (?P<baseline>-?[\d.]+) "
    r"kJ/mol \((?P<apart>[\d.]+)% apart, tolerance (?P<tolerance>[\d.]+)%\)"
)
_GRIDS = re.compile(r"different grids/cut-offs \((?P<grids>.*)\); ns/day is still compared")
_CEILING = re.compile(
    r"past the caches: (?P<read>\S+) GB/s read, (?P<copy>\S+) GB/s copy "
    r"\((?P<run_id>[^,]+), (?P<timestamp>[^)]+)\)$"
)


def comparison_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A comparison record with sentences as one with numbers (others pass unchanged)."""
    data = dict(data)
    noise = data.get("noise") or []
    if any(isinstance(line, str) for line in noise):
        data["noise"] = [_shared(line) if isinstance(line, str) else line for line in noise]
    if isinstance(data.get("ceiling"), str):
        data["ceiling"] = _ceiling(data["ceiling"])
    if "energy" not in data and isinstance(data.get("suspect_note"), str):
        data["energy"] = _energy(data["suspect_note"])
    if "pme" not in data and isinstance(data.get("comparable_note"), str):
        data["pme"] = _pme(data["comparable_note"])
    return data


def controlled_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A controlled verdict that said its control in words: whether it was of categories."""
    if "unit" not in data and isinstance(data.get("control"), str):
        unit = "category" if "unchanged categor" in data["control"] else "kernel"
        data = {**data, "unit": unit}
    return data


def _shared(line: str) -> dict[str, Any]:
    run, _, warnings = line.partition(": ")
    return {"run": run, "warnings": warnings.split("; ") if warnings else []}


def _ceiling(line: str) -> dict[str, Any] | None:
    found = _CEILING.search(line)
    if found is None:
        return None
    return {"read_gbs": float(found["read"]), "copy_gbs": float(found["copy"]),
            "run_id": found["run_id"], "timestamp": found["timestamp"]}  # fmt: skip


def _energy(note: str) -> dict[str, Any] | None:
    found = _ENERGY.search(note)
    if found is None:
        return None
    return {"baseline": float(found["baseline"]), "candidate": float(found["candidate"]),
            "apart": float(found["apart"]) / 100,
            "tolerance": float(found["tolerance"]) / 100}  # fmt: skip


def _pme(note: str) -> list[dict[str, Any]]:
    found = _GRIDS.search(note)
    if found is None:
        return []
    out = []
    for text in found["grids"].split("; "):
        try:
            grid, cutoff = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError):
            return []
        out.append({"grid": list(grid), "cutoff": cutoff})
    return out
