"""Comparison records written while a comparison carried sentences still load, and the
words made again from the numbers read back are the sentences the record held."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.report import words
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.controlled import Controlled

OLD = Path(__file__).parent / "data" / "verdict" / "comparison-v1.json"
NOISE = (
    "dev__w__t-r1: other processes used 1.10 CPUs on average (peak 1.90; cc1plus 0.90); "
    "1 other container was running (relaxed_bartik)"
)
CEILING = (
    "memory ceiling of this host, past the caches: 1234 GB/s read, 1.235e+04 GB/s copy "
    "(h__bandwidth-sweep-20240501, 2024-05-01T10:00:00+00:00)"
)
SUSPECT = (
    "suspect: average potential energy -41234.5 vs baseline -40012.3 kJ/mol (3.1% apart, "
    "tolerance 1%): the build may compute something else; its speed is not reported as a "
    "speed-up"
)
GRIDS = (
    "not comparable per kernel: PME tuning ended on different grids/cut-offs "
    "(((48, 48, 48), 1.0); ((52, 52, 52), 1.1)); ns/day is still compared. "
    "Pin the grid with `-- -notunepme` for per-kernel comparisons."
)
CONTROLS = {
    "kernel": "time-weighted geometric mean of 2 unchanged kernels (a, b): ×1.0123",
    "category": "time-weighted geometric mean of 1 unchanged category (nbnxm): ×0.9876",
}


def _old_record() -> dict[str, Any]:
    old = json.loads(OLD.read_text())
    raw = old["categories"]["nbnxm"]
    controlled = {
        "kernel": {"controls": ["a", "b"], "control_ratio": 1.0123},
        "category": {"controls": ["nbnxm"], "control_ratio": 0.9876},
        "none": {"controls": []},
    }
    for name, entry in controlled.items():
        text = CONTROLS.get(name, "no unchanged category measured in every run: raw only")
        entry.update(name=name, raw=raw, control=text)
    return {**old, "noise": [NOISE], "ceiling": CEILING, "suspect_note": SUSPECT,
            "comparable": False, "comparable_note": GRIDS, "findings": ["optimum unchanged: x"],
            "controlled": controlled}  # fmt: skip


def test_a_comparison_with_sentences_loads_and_says_them_again() -> None:
    cmp = Comparison.model_validate(_old_record())
    assert words.noise_lines(cmp) == [NOISE] and cmp.noise[0].run == "dev__w__t-r1"
    assert words.ceiling_line(cmp) == CEILING
    assert cmp.ceiling is not None and cmp.ceiling.read_gbs == 1234
    assert words.suspect_note(cmp) == SUSPECT
    assert words.comparable_note(cmp) == GRIDS and cmp.pme[1].grid == [52, 52, 52]
    assert words.findings(cmp) == []  # a kernel run's findings are not read back
    for unit, text in CONTROLS.items():
        assert cmp.controlled[unit].unit == unit and words.control(cmp.controlled[unit]) == text
    assert words.control(cmp.controlled["none"]).startswith("no unchanged category")
    again = Comparison.model_validate(cmp.model_dump(mode="json"))
    assert again == cmp  # the numbers written now load as they are


def test_sentences_that_do_not_read_back_are_dropped() -> None:
    record = {**_old_record(), "ceiling": "memory ceiling: unknown", "suspect_note": "odd"}
    cmp = Comparison.model_validate(record)
    assert cmp.ceiling is None and cmp.energy is None and words.suspect_note(cmp) is None
    entry = Controlled.model_validate({**record["controlled"]["kernel"], "unit": "category"})
    assert entry.unit == "category"  # a record with the field keeps it
