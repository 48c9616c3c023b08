"""What a whole GROMACS build log is, for the tests that read one.

A build's log (`results/logs/<image>.build.log`) is BuildKit's plain output: a vertex's
lines are `#<vertex> <seconds> <text>`, and it ends `#<vertex> DONE <seconds>s` (or
`ERROR`, `CANCELED`). The GROMACS stage runs `ninja install`, whose non-terminal output
is one `[<finished>/<total>] <description>` line per edge as it finishes, except edges of
the console pool, which are said when they start. The install edge is one of those: it is
printed as `[N-1/N] Install the project...`, CMake's install script prints its `-- Install
configuration` and `-- Installing:`/`-- Up-to-date:` lines under it, and the step that
brings ninja to N is never printed. So the last `[n/N]` of a whole log has n = N - 1: a
check that asks for n = N rejects every real one (issue 36: only a cold engine builds,
so only a cold CI ever ran it).
"""

from __future__ import annotations

import re

#: BuildKit's prefix (absent in a plain `docker build` or Buildah log).
_PREFIX = r"^(?:#(\d+) \d+(?:\.\d+)? )?"
_NINJA = re.compile(_PREFIX + r"\[(\d+)/(\d+)\] (.*)$")
_INSTALL_EDGE = "Install the project..."
#: The header of the BuildKit step that runs ninja (`#9 [stage-1 3/4] RUN … ninja -C …`).
_NINJA_STEP = re.compile(r"^#(\d+) \[[^]]*\] RUN .*\bninja -C ")
_INSTALLED_GMX = re.compile(_PREFIX + r"-- (?:Installing|Up-to-date): \S+/bin/gmx$")


def gromacs_log_problems(text: str) -> list[str]:
    """Why `text` is not the whole log of a GROMACS build that installed; [] when it is.

    Whole means: ninja's last run printed every edge up to the install (`[1/N]` to
    `[N-1/N]`, nothing cut out), its last edge is the install, CMake installed `bin/gmx`,
    and the BuildKit step that ran it is DONE (not ERROR or CANCELED); or BuildKit took
    that step from its cache (`CACHED`), and nothing was compiled. Never clipped by
    BuildKit's limit on a step's output.
    """
    lines = text.splitlines()
    if clipped := [line for line in lines if "[output clipped" in line]:
        return [f"BuildKit clipped the step's output: {clipped[0]}"]
    # (line index, BuildKit vertex, edges finished, edges in all, description)
    steps = [(i, m[1], int(m[2]), int(m[3]), m[4])
             for i, line in enumerate(lines) if (m := _NINJA.match(line))]  # fmt: skip
    if not steps:
        ran = {m[1] for line in lines if (m := _NINJA_STEP.match(line))}
        if ran and all(f"#{vertex} CACHED" in lines for vertex in ran):
            return []  # BuildKit had the compile's layer: whole, with nothing compiled
        return ["no ninja step ([n/N]) in the log"]
    total, last_run = steps[-1][3], steps
    for k in range(len(steps) - 1, 0, -1):  # a restart (a second ninja run) begins the last one
        if steps[k - 1][2] > steps[k][2] or steps[k - 1][3] != total:
            last_run = steps[k:]
            break
    problems = []
    missing = sorted(set(range(1, total)) - {done for _, _, done, _, _ in last_run})
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (" …" if len(missing) > 5 else "")
        problems.append(f"{len(missing)} of ninja's {total - 1} edges before the install are "
                        f"not in the log ({shown})")  # fmt: skip
    end, vertex, done, _, what = last_run[-1]
    if what != _INSTALL_EDGE or done != total - 1:
        problems.append(f"ninja's last line is [{done}/{total}] {what!r}, not "
                        f"[{total - 1}/{total}] {_INSTALL_EDGE!r}")  # fmt: skip
    if not any(_INSTALLED_GMX.match(line) for line in lines[end + 1 :]):
        problems.append("CMake's install script did not install bin/gmx after ninja's last line")
    if vertex is not None:
        ended = [line for line in lines[end + 1 :] if re.match(rf"#{vertex} [A-Z]+\b", line)]
        if not ended or not ended[-1].startswith(f"#{vertex} DONE "):
            said = ended[-1] if ended else "nothing"
            problems.append(f"BuildKit's step #{vertex} did not end DONE (it ended: {said})")
    return problems
