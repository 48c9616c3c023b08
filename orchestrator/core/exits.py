"""Every exit code the tool gives, in one place, so a script can tell outcomes apart.

`bench` and `compare` end like asv's `continuous` and pytest-benchmark's
`--benchmark-compare-fail`: 0 unless the candidate is significantly slower. Code 1 is
taken by everything that failed (no engine, a failed build or run) and 2 by bad
arguments (argparse's own code), so a slowdown gets a code of its own (4) and a
comparison that could not be judged another (3): a script that retries a busy host
must not retry a failed build, nor bisect one. `docs/usage.md` has the same table, and
`--help` of `bench` and `compare` prints it (`EPILOG`).
"""

from __future__ import annotations

import textwrap
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    UNJUDGED = 3
    SLOWER = 4


#: A command ended by a signal exits 128 + its number, as a shell reports one (130: Ctrl-C).
SIGNALLED = 128

MEANING = {
    ExitCode.OK: "no significant slowdown: no change, faster, or no kernel changed "
    "(nothing to measure)",
    ExitCode.ERROR: "something failed: no engine, a build or a run failed, a damaged record",
    ExitCode.USAGE: "bad arguments or settings",
    ExitCode.UNJUDGED: "could not judge: the host was too busy, too few runs for any "
    "verdict, or the energies disagree (suspect)",
    ExitCode.SLOWER: "significantly slower: the candidate's headline metric is worse, "
    "significantly and beyond --threshold",
}

SIGNALLED_MEANING = (
    "stopped by signal N (130: Ctrl-C, 143: SIGTERM, 141: the reader of the output went away)"
)

#: The table as `--help` of `bench` and `compare` ends.
EPILOG = "exit codes:\n" + "\n".join(
    textwrap.fill(text, 88, initial_indent=f"  {code:<7}", subsequent_indent=" " * 9)
    for code, text in [
        *((str(int(code)), text) for code, text in MEANING.items()),
        (f"{SIGNALLED}+N", SIGNALLED_MEANING),
    ]
)
