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

#: An executed-instruction count per launch has moved when it differs by more than
#: INSTRUCTION_K times the larger run-to-run spread of the two sides, and never by less
#: than INSTRUCTION_K * INSTRUCTION_FLOOR (0.3%) (`verdict.instructions`). Measured on
#: ten ncu runs of GROMACS 2026.3 on an H100 (`tests/data/ncu/`): 16 of 21 kernels repeat
#: their count exactly; the nonbonded and prune kernels (pair lists) spread up to 1.5e-4,
#: cub's scan up to 9.7e-4 (the largest, in the -maxrregcount=48 build). The floor is that
#: largest spread, so a single run a side (spread 0) is still held to 3x the worst noise
#: seen; k = 3 puts a move three worst spreads away. The real codegen changes found there
#: clear it: pme_gather +1.93%, cub's DeviceScanKernel -0.49%; no A/A comparison moved.
INSTRUCTION_K = 3.0
INSTRUCTION_FLOOR = 1e-3
