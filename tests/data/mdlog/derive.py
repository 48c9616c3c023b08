"""Regenerate the *-derived.log fixtures from the real GROMACS 2022.5 logs next to this file.

Run from anywhere: ``python tests/data/mdlog/derive.py``. Each derived log is a real log
with only the lines named below replaced or inserted, using the exact printf formats of
GROMACS (pme_load_balancing.cpp, wallcycle.cpp, nrnb.cpp); see README.md.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent

# --- PME tuning: the Debian CPU build never tuned here (tuning needs a GPU, or separate PME
# ranks that are slower than PP *and* a run longer than the tuning start-up delay).
TUNING_LINES = [
    # "step %4s: " + "%-11s%10s pme grid %d %d %d, coulomb cutoff %.3f" + ": %.1f M-cycles"
    ("160", (80, 80, 80), 1.000, 1864.2),
    ("240", (72, 72, 72), 1.085, 1702.9),
    ("320", (64, 64, 64), 1.221, 1611.4),
    ("400", (60, 60, 60), 1.302, 1688.0),
    ("480", (64, 64, 64), 1.221, 1598.7),
    ("560", (72, 72, 72), 1.085, 1720.3),
]
OPTIMAL = ((64, 64, 64), 1.221)


def _grid_line(pre: str, desc: str, grid: tuple[int, int, int], cutoff: float) -> str:
    return (
        f"{pre:<11s}{desc:>10s} pme grid {grid[0]} {grid[1]} {grid[2]}, coulomb cutoff {cutoff:.3f}"
    )


def tuning(src: str) -> str:
    timed = [
        _grid_line(f"step {step:>4s}: ", "timed with", grid, cut) + f": {mc:.1f} M-cycles"
        for step, grid, cut, mc in TUNING_LINES
    ]
    timed.append(_grid_line("", "optimal", *OPTIMAL))
    anchor = "DD  step 999 load imb."
    assert anchor in src
    src = src.replace(anchor, "\n".join(timed) + "\n" + anchor, 1)

    def setting(name: str, cut: float, rlist: float, grid: int, sp: float, beta: float) -> str:
        return (
            f"   {name:<7s} {cut:6.3f} nm {rlist:6.3f} nm     {grid:3d} {grid:3d} {grid:3d}"
            f"   {sp:5.3f} nm  {beta:5.3f} nm"
        )

    block = "\n".join(
        [
            "",
            "       P P   -   P M E   L O A D   B A L A N C I N G",
            "",
            " PP/PME load balancing changed the cut-off and PME settings:",
            "           particle-particle                    PME",
            "            rcoulomb  rlist            grid      spacing   1/beta",
            setting("initial", 1.000, 1.000, 80, 0.037, 0.320),
            setting("final", 1.221, 1.221, 64, 0.046, 0.391),
            " cost-ratio           1.82             0.51",
            " (note that these numbers concern only part of the total PP and PME load)",
            "",
            "",
        ]
    )
    anchor = "\tM E G A - F L O P S"
    assert anchor in src
    return src.replace(anchor, block + anchor, 1)


# --- GROMACS 2026 formats: 21-char build-info labels, "Activity:" table with a 22-char
# name column and 80-dash rules, "Breakdown of PME mesh activities", 4-column Performance.
ROW = re.compile(
    r"^ (?P<name>\S.*?)\s+(?:(?P<r>\d+)\s+(?P<t>\d+)\s+(?P<c>\d+)\s+)?"
    r"(?P<w>\d+\.\d+)\s+(?P<g>\d+\.\d+)\s+(?P<p>\d+\.\d+)$"
)


def to_2026(src: str, steps_timed: int, atoms: int) -> str:
    version = "2026.0-dev-20251031-ee5fdd7dba"
    src = src.replace("gmx mdrun, 2022.5-Debian_2022.5_2 (-:", f"gmx mdrun, {version} (-:")
    src = src.replace("version 2022.5-Debian_2022.5_2", f"version {version}")
    src = re.sub(r"(?m)^GROMACS version:\s+\S+", f"{'GROMACS version:':<21s}{version}", src)
    out: list[str] = []
    in_table = False
    for line in src.split("\n"):
        if "R E A L   C Y C L E" in line:
            in_table = True
        if in_table and line.startswith(" Computing:"):
            line = " Activity:              Num   Num      Call    Wall time         Giga-Cycles"
        elif in_table and line.startswith("                     Ranks Threads"):
            line = "                        Ranks Threads  Count      (s)         total sum    %"
        elif in_table and re.fullmatch(r"-{70,}", line):
            line = "-" * 80
        elif in_table and line.startswith(" Breakdown of PME mesh computation"):
            line = " Breakdown of PME mesh activities"
        elif in_table and (m := ROW.match(line)):
            line = (
                f" {m['name']:<22.22s} {m['r'] or '':>4s} {m['t'] or '':>4s} {m['c'] or '':>10s}"
                f"  {float(m['w']):10.3f} {float(m['g']):14.3f} {float(m['p']):5.1f}"
            )
        elif line.startswith("                 (ns/day)    (hour/ns)"):
            line = "                 (ns/day)    (hour/ns)    (ms/step)  (Matom*steps/s) "
        elif line.startswith("Performance:"):
            ns_day, hour_ns = (float(v) for v in line.split()[1:3])
            wall = float(re.search(r"Time:\s+\S+\s+(\S+)", src)[1])  # type: ignore[index]
            ms_step = 1000.0 * wall / steps_timed
            matom = atoms * steps_timed / wall / 1e6
            line = f"Performance: {ns_day:12.3f} {hour_ns:12.3f} {ms_step:12.3f} {matom:16.3f} "
            in_table = False
        out.append(line)
    return "\n".join(out)


# --- GMX_DETAILED_PERF_STATS: "(Mnbf/s)" and "(GFlops)" come before ns/day.
def detailed_perf(src: str) -> str:
    src = src.replace(
        "                 (ns/day)    (hour/ns)",
        "                 (Mnbf/s)     (GFlops)     (ns/day)    (hour/ns)",
    )
    return re.sub(
        r"(?m)^Performance:\s+(\S+)\s+(\S+)$",
        lambda m: (
            f"Performance: {52.338:12.3f} {39.554:12.3f} {float(m[1]):12.3f} {float(m[2]):12.3f}"
        ),
        src,
    )


def main() -> None:
    real = (HERE / "water-2022.5.log").read_text()
    sep_pme = (HERE / "water-2022.5-2pp1pme.log").read_text()
    (HERE / "water-2022.5-tunepme-derived.log").write_text(tuning(sep_pme))
    (HERE / "water-2026-format-derived.log").write_text(to_2026(real, 1000, 2652))
    (HERE / "water-2022.5-detailed-perf-derived.log").write_text(detailed_perf(real))


if __name__ == "__main__":
    main()
