"""`--json` as documented (docs/usage.md): the verdict's numbers with their words added.

`verdict.judgement` and `verdict.history` hold numbers only; a script reading `--json`
also gets the report's headline, why there is no verdict, and each metric's `marker` and
`note` for people, made here by `report.words` at the places they always had.
"""

from __future__ import annotations

from typing import Any

from orchestrator.report import instructions, words
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.history import Series
from orchestrator.verdict.judgement import Judgement
from orchestrator.verdict.model import Verdict

#: The verdict's fields that `marker` and `note` say in words, left out of its JSON.
SAID_IN_WORDS = {"direction", "suspect", "corrected_for", "among", "judged", "too_busy"}


def judgement_json(
    judged: Judgement, cmp: Comparison | None, nothing_measured: str | None = None
) -> dict[str, Any]:
    """`bench --json` and `compare --json`: `judged` with the words of `cmp` (None:
    nothing measured, `nothing_measured` says why)."""
    data = judged.model_dump(mode="json")
    reason: str | None
    busy: str | None
    if cmp is None:
        why = nothing_measured or "nothing measured"
        reason, text, busy = why, why, None
    else:
        text = words.headline_text(cmp)
        busy = words.too_busy(cmp.too_busy) if cmp.too_busy else None
        reason = _reason(cmp) if judged.verdict == "could not judge" else None
    data["too_busy"] = busy
    out = {"verdict": data.pop("verdict"), "exit_code": data.pop("exit_code"),
           "reason": reason, "text": text, **data}  # fmt: skip
    if cmp is not None and out["headline"] is not None:
        head = out["headline"]
        name, unit = head.pop("name"), head.pop("unit")
        out["headline"] = {**head, **_words(cmp.headline), "name": name, "unit": unit}
    for field in ("categories", "kernels", "metrics"):
        verdicts: dict[str, Verdict] = getattr(cmp, field) if cmp is not None else {}
        out[field] = {k: {**m, **_words(verdicts[k])} for k, m in out[field].items()}
    counted = cmp.instructions if cmp is not None else None
    out["instructions"] = instructions.as_json(counted) if counted is not None else None
    return out


def _words(v: Verdict) -> dict[str, str]:
    return {"marker": words.marker(v), "note": words.note(v)}


def _reason(cmp: Comparison) -> str:
    if cmp.too_busy:
        return words.too_busy(cmp.too_busy)
    if cmp.suspect:
        return words.suspect_note(cmp) or "suspect: the energies disagree"
    return words.note(cmp.headline)


def verdict_json(v: Verdict) -> dict[str, Any]:
    """One verdict as `history --json` shows it: its numbers, then its marker and note."""
    return {**v.model_dump(mode="json", exclude=SAID_IN_WORDS), **_words(v)}


def series_json(series: Series) -> dict[str, Any]:
    """`history --json`: the series, what orders its points, each change point's verdict
    with its words."""
    data = series.model_dump(mode="json", exclude={"dated_by"})
    data = {**{k: v for k, v in data.items() if k != "points"},
            "ordered_by": words.ordered_by(series), "points": data["points"]}  # fmt: skip
    for point, dumped in zip(series.points, data["points"], strict=True):
        if point.change is not None:
            dumped["change"] = verdict_json(point.change)
    return data
