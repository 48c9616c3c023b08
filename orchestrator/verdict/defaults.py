"""The rules a verdict is held to unless told otherwise, in one place: every command and
function that compares (`bench`, `compare`, `bisect`, `matrix`, `history`, the report)
takes these defaults, so `--threshold` and `--alpha` mean the same everywhere."""

from __future__ import annotations

#: A marker needs a significant change beyond this many percent.
THRESHOLD_PCT = 2.0
#: The significance level of every test (and the false-finding rate Benjamini–Hochberg bounds).
ALPHA = 0.05
#: Power at which a "no change" states what it could have detected.
POWER = 0.8
