"""md.log parsing on real GROMACS 2022.5 logs, derived 2026-format logs and 2026 excerpts.

Expected values are read off the fixture text by eye (see tests/data/mdlog/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.parsers.categories import CATEGORIES
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog, parse_mdlog_text

DATA = Path(__file__).parent / "data"
MDLOG = DATA / "mdlog"
SAMPLES = DATA / "samples"
NORMAL = MDLOG / "water-2022.5.log"


def test_real_2022_log_headline_values() -> None:
    log = parse_mdlog(NORMAL)
    assert log.gmx_version == "2022.5-Debian_2022.5_2"
    assert log.ns_per_day == 126.221
    assert log.hour_per_ns == 0.190
    assert log.ms_per_step is None  # 2022 prints only two columns
    assert log.performance == {"ns/day": 126.221, "hour/ns": 0.190}
    assert (log.core_seconds, log.wall_seconds) == (2.741, 1.370)
    assert log.atoms == 2652
    assert log.finished is True
    assert log.reset_step == 1000
    assert log.nsteps == 2000
    assert log.dt_ps == 0.002
    assert log.nstlist == 40  # "Changing nstlist from 10 to 40"
    assert log.pme_grid == [25, 25, 25]
    assert log.coulomb_cutoff == 1.0
    assert log.pme_tuning == []
    assert log.simd == "SSE4.1"
    assert log.gpu_support == "disabled"
    assert log.compiler == "/usr/bin/c++ GNU 12.2.0"
    assert log.command_line == "gmx -quiet mdrun -deffnm topol -ntmpi 1 -ntomp 2 -resethway"
    assert log.build_info["CPU FFT library"] == "fftw-3.3.10-sse2-avx"


def test_real_2022_log_energies_from_averages_block() -> None:
    log = parse_mdlog(NORMAL)
    assert log.energies == {
        "LJ (SR)": 8.97348e03,
        "Coulomb (SR)": -4.66753e04,
        "Coul. recip.": 2.83785e02,
        "Potential": -3.74180e04,
        "Kinetic En.": 9.08535e03,
        "Total Energy": -2.83327e04,
        "Conserved En.": 5.07968e04,
        "Temperature": 4.12268e02,
        "Pressure (bar)": 5.11509e03,
    }


def test_alt_energy_log_differs_clearly() -> None:
    alt = parse_mdlog(MDLOG / "water-2022.5-alt-energy.log")
    assert alt.atoms == 4134
    assert alt.energies is not None
    assert alt.energies["Potential"] == -6.06194e04
    assert alt.ns_per_day == 24.648


def test_real_2022_cycle_table_rows() -> None:
    log = parse_mdlog(NORMAL)
    main = [(r.name, r.calls, r.wall_seconds) for r in log.cycles if r.section == "main"]
    assert main == [
        ("Domain decomp.", 26, 0.012),
        ("Neighbor search", 26, 0.065),
        ("Force", 1001, 1.067),
        ("PME mesh", 1001, 0.176),
        ("NB X/F buffer ops.", 1976, 0.019),
        ("Write traj.", 1, 0.005),
        ("Update", 1001, 0.004),
        ("Constraints", 1001, 0.019),
        ("Rest", None, 0.004),
        ("Total", None, 1.370),
    ]
    pme = [(r.name, r.calls, r.wall_seconds, r.percent) for r in log.cycles if r.section == "pme"]
    assert pme == [
        ("PME spread", 1001, 0.049, 3.6),
        ("PME gather", 1001, 0.065, 4.8),
        ("PME 3D-FFT", 2002, 0.053, 3.9),
        ("PME solve Elec", 1001, 0.007, 0.5),
    ]
    force = next(r for r in log.cycles if r.name == "Force")
    assert (force.ranks, force.threads, force.giga_cycles, force.percent) == (1, 2, 5.540, 77.9)


def test_cpu_breakdown_uses_pme_rows_not_pme_mesh() -> None:
    b = cycle_breakdown(parse_mdlog(NORMAL))
    ms = {name: c.total_ms for name, c in b.categories.items()}
    # nbnxm = Force 1.067 + NB X/F 0.019; other = DD .012 + NS .065 + traj .005 + upd .004
    # + constr .019; PME mesh (0.176), Rest and Total are not counted.
    expected = {
        "nbnxm": 1086.0,
        "pme_spread": 49.0,
        "pme_gather": 65.0,
        "fft": 53.0,
        "pme_solve": 7.0,
        "memory": 0.0,
        "other": 105.0,
    }
    assert set(ms) == set(CATEGORIES)
    assert ms == pytest.approx(expected)
    assert b.total_ms == pytest.approx(1365.0)
    assert b.categories["nbnxm"].percent == pytest.approx(100 * 1086 / 1365)
    assert b.categories["fft"].calls == 2002
    assert b.kernels[0].name == "Force"
    assert b.kernels[0].avg_us == pytest.approx(1067e3 / 1001)
    assert b.unknown == []
    assert "PME mesh" not in {k.name for k in b.kernels}


def test_separate_pme_rank_log_marks_pme_only_rows() -> None:
    log = parse_mdlog(MDLOG / "water-2022.5-2pp1pme.log")
    marked = {r.name: (r.ranks, r.wall_seconds) for r in log.cycles if r.pme_only}
    assert marked == {"PME mesh": (1, 3.998), "PME wait for PP": (None, 55.545)}
    force = next(r for r in log.cycles if r.name == "Force")
    assert (force.ranks, force.threads, force.pme_only) == (2, 1, False)
    assert log.pme_grid == [80, 80, 80]
    assert log.reset_step is None
    b = cycle_breakdown(log)
    assert b.categories["nbnxm"].total_ms == pytest.approx(1342 + 20)
    assert b.categories["pme_spread"].total_ms == pytest.approx(375)
    assert b.categories["fft"].total_ms == pytest.approx(2640)
    # every other main row except PME mesh, Rest and Total (PME wait for PP included)
    other = 4772 + 18 + 19174 + 158 + 15805 + 14733 + 55545 + 107 + 38 + 12 + 23 + 2677
    assert b.categories["other"].total_ms == pytest.approx(other)


def test_derived_tuning_log_gives_timed_grids_and_final_grid() -> None:
    log = parse_mdlog(MDLOG / "water-2022.5-tunepme-derived.log")
    assert [(t.step, t.grid, t.cutoff, t.mcycles) for t in log.pme_tuning] == [
        (160, [80, 80, 80], 1.000, 1864.2),
        (240, [72, 72, 72], 1.085, 1702.9),
        (320, [64, 64, 64], 1.221, 1611.4),
        (400, [60, 60, 60], 1.302, 1688.0),
        (480, [64, 64, 64], 1.221, 1598.7),
        (560, [72, 72, 72], 1.085, 1720.3),
    ]
    assert log.pme_grid == [64, 64, 64]
    assert log.coulomb_cutoff == 1.221


def test_optimal_line_is_used_without_the_end_of_run_block() -> None:
    text = (MDLOG / "water-2022.5-tunepme-derived.log").read_text()
    cut = text.index("       P P   -   P M E   L O A D")
    text = text[:cut] + text[text.index("\tM E G A - F L O P S") :]
    text = text.replace(
        "optimal pme grid 64 64 64, coulomb cutoff 1.221",
        "optimal pme grid 72 72 72, coulomb cutoff 1.085",
    )
    log = parse_mdlog_text(text, "edited.log")
    assert log.pme_grid == [72, 72, 72]
    assert log.coulomb_cutoff == 1.085


def test_2026_format_log() -> None:
    log = parse_mdlog(MDLOG / "water-2026-format-derived.log")
    assert log.gmx_version == "2026.0-dev-20251031-ee5fdd7dba"
    assert (log.ns_per_day, log.hour_per_ns) == (126.221, 0.190)
    assert (log.ms_per_step, log.matom_steps_per_s) == (1.370, 1.936)
    names = [r.name for r in log.cycles]
    assert names[:3] == ["Domain decomp.", "Neighbor search", "Force"]
    assert [r.name for r in log.cycles if r.section == "pme"] == [
        "PME spread",
        "PME gather",
        "PME 3D-FFT",
        "PME solve Elec",
    ]
    assert cycle_breakdown(log).categories["nbnxm"].total_ms == pytest.approx(1086.0)


def test_detailed_perf_stats_columns_come_first() -> None:
    log = parse_mdlog(MDLOG / "water-2022.5-detailed-perf-derived.log")
    assert log.performance == {
        "Mnbf/s": 52.338,
        "GFlops": 39.554,
        "ns/day": 126.221,
        "hour/ns": 0.190,
    }
    assert log.ns_per_day == 126.221


def test_2026_sycl_excerpt() -> None:
    log = parse_mdlog(SAMPLES / "public-unresolved__gromacs-2026.0-sycl-md.log-tail.excerpt.txt")
    assert log.gmx_version == "2026.0"
    assert log.gpu_support == "SYCL (oneAPI DPC++)"
    assert log.simd == "AVX2_256"
    assert log.build_info["NBNxM GPU setup"].startswith("super-cluster 1x2x2")
    assert (log.ns_per_day, log.hour_per_ns, log.ms_per_step, log.matom_steps_per_s) == (
        132.274,
        0.181,
        1.306,
        102.709,
    )
    assert (log.core_seconds, log.wall_seconds) == (3134.776, 130.639)
    assert log.finished is True
    launch = next(r for r in log.cycles if r.name == "Launch PP GPU ops.")
    assert (launch.ranks, launch.threads, launch.calls, launch.wall_seconds) == (
        1,
        24,
        198751,
        37.396,
    )
    wait = next(r for r in log.cycles if r.name == "PME wait for PP")
    assert (wait.calls, wait.wall_seconds, wait.percent) == (None, 103.589, 79.3)
    assert [r.name for r in log.cycles if r.section == "pme"] == [
        "Wait PME GPU gather",
        "Reduce GPU PME F",
        "Launch PME GPU ops.",
    ]
    assert log.nonbonded_on_gpu  # "Wait GPU NB local" row
    b = cycle_breakdown(log)
    # nonbonded on the GPU: Force (22241 ms) is bonded/other CPU work; NB X/F stays nbnxm
    assert b.categories["nbnxm"].total_ms == pytest.approx(55)
    assert "Force" in {k.name for k in b.kernels if k.category == "other"}
    assert any("nonbonded ran on a GPU" in note for note in b.notes)
    assert "PME GPU mesh" not in {k.name for k in b.kernels}  # parent of the PME rows
    assert b.unknown == []


def test_2026_dev_stdout_excerpt_has_missing_parts_as_none() -> None:
    log = parse_mdlog(SAMPLES / "public-unresolved__gromacs-2026.0-dev-stdout.excerpt.txt")
    assert log.gmx_version == "2026.0-dev-20251031-ee5fdd7dba"
    assert (log.ns_per_day, log.ms_per_step, log.matom_steps_per_s) == (22.273, 7.758, 4.367)
    assert log.wall_seconds == 387.913
    assert log.command_line == "gmx_mpi mdrun -deffnm npt"
    assert log.nstlist == 50
    assert log.finished is False
    assert log.cycles == []
    assert log.energies is None
    assert log.atoms is None
    assert log.pme_grid is None
    assert log.reset_step is None
    assert cycle_breakdown(log).total_ms == 0.0


def test_truncated_log_keeps_what_it_has(tmp_path: Path) -> None:
    lines = NORMAL.read_text().splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if ln.startswith("Started mdrun"))
    short = tmp_path / "crashed.log"
    short.write_text("".join(lines[: cut + 1]))
    log = parse_mdlog(short)
    assert log.gmx_version == "2022.5-Debian_2022.5_2"
    assert log.atoms == 2652
    assert log.pme_grid == [25, 25, 25]
    assert log.ns_per_day is None
    assert log.wall_seconds is None
    assert log.cycles == []
    assert log.energies is None
    assert log.finished is False


def test_not_an_mdlog_is_a_user_error(tmp_path: Path) -> None:
    csv_file = SAMPLES / "amd_HPCTrainingExamples__Rocprofv3_HIP_README.md__kernel_stats.csv"
    with pytest.raises(UserError) as err:
        parse_mdlog(csv_file)
    assert str(csv_file) in err.value.message
    assert "not a GROMACS md.log" in err.value.message
    with pytest.raises(UserError, match=r"does-not-exist\.log"):
        parse_mdlog(tmp_path / "does-not-exist.log")
    with pytest.raises(UserError, match="directory"):
        parse_mdlog(tmp_path)


def test_small_text_variants() -> None:
    text = "\n".join(
        [
            "          :-) GROMACS - gmx mdrun, 2021.7 (-:",
            "Overriding nsteps with value passed on the command line: 5000 steps, 10 ps",
            "     R E A L   C Y C L E   A N D   T I M E   A C C O U N T I N G",
            " Computing:          Num   Num      Call    Wall time         Giga-Cycles",
            "                     Ranks Threads  Count      (s)         total sum    %",
            " Force                N/A  N/A       100       2.000         10.000  80.0",
            " PME mesh              1    4       100       0.500          2.500  20.0",
            "",
            "                (steps/hour)",
            "Performance:     1234.5",
        ]
    )
    log = parse_mdlog_text(text, "mini.log")
    assert log.gmx_version == "2021.7"
    assert log.nsteps == 5000
    assert log.ns_per_day is None
    assert log.performance == {"steps/hour": 1234.5}
    force = log.cycles[0]
    assert (force.name, force.ranks, force.threads, force.calls) == ("Force", None, None, 100)
    b = cycle_breakdown(log)
    # no PME breakdown rows: PME mesh is counted (in other) so no time is lost
    assert b.categories["other"].total_ms == pytest.approx(500.0)
    assert b.categories["nbnxm"].total_ms == pytest.approx(2000.0)


def test_gpu_timings_and_subcounters_do_not_leak_into_the_breakdown() -> None:
    text = "\n".join(
        [
            "          :-) GROMACS - gmx mdrun, 2023.3 (-:",
            "      R E A L   C Y C L E   A N D   T I M E   A C C O U N T I N G",
            " Computing:          Num   Num      Call    Wall time         Giga-Cycles",
            "                     Ranks Threads  Count      (s)         total sum    %",
            " Neighbor search        1    8        126       0.300          7.000   6.0",
            " Force                  1    8       5001       3.000         70.000  60.0",
            " Wait GPU NB local      1    8       5001       1.700         40.000  34.0",
            " Total                                          5.000        117.000 100.0",
            " Breakdown of PP / PME activities",
            " NS grid local          1    8        126       0.100          2.300   2.0",
            " Nonbonded F kernel     1    8       5001       2.500         58.000  50.0",
            "",
            " GPU timings",
            " Computing:                         Count  Wall t (s)      ms/step       %",
            " Pair list H2D                        126       0.010        0.079     1.2",
            " Nonbonded F kernel                  4900       0.800        0.163    98.8",
            "",
            "               Core t (s)   Wall t (s)        (%)",
            "       Time:       40.000        5.000      800.0",
        ]
    )
    log = parse_mdlog_text(text, "gpu.log")
    assert [(r.name, r.section) for r in log.cycles] == [
        ("Neighbor search", "main"),
        ("Force", "main"),
        ("Wait GPU NB local", "main"),
        ("Total", "main"),
        ("NS grid local", "pp"),
        ("Nonbonded F kernel", "pp"),
    ]
    b = cycle_breakdown(log)
    # "Wait GPU NB local": nonbonded ran on the GPU, so Force is CPU bonded/other work
    assert b.categories["nbnxm"].total_ms == 0.0
    assert b.categories["other"].total_ms == pytest.approx(5000.0)  # NS + Force + wait
    assert b.total_ms == pytest.approx(5000.0)
    assert log.wall_seconds == 5.0


AVERAGES_WITH_BOX = """GROMACS version:    2021.7
\t<====  A V E R A G E S  ====>
\t<==  ###############  ======>

\tStatistics over 50001 steps using 501 frames

   Energies (kJ/mol)
          Angle    Proper Dih.  Improper Dih.          LJ-14     Coulomb-14
    9.74440e+03    1.22863e+04    6.27372e+02    4.39474e+03    5.44393e+04
    Kinetic En.   Total Energy  Conserved En.    Temperature Pres. DC (bar)
    1.58021e+05   -6.49170e+05   -6.49005e+05    3.00226e+02   -2.10599e+02
 Pressure (bar)   Constr. rmsd
    1.21516e+00    0.00000e+00

          Box-X          Box-Y          Box-Z
    6.85810e+00    6.85810e+00    6.85810e+00

   Total Virial (kJ/mol)
    5.27049e+04    1.56530e+01   -1.59418e+01
    1.57026e+01    5.26745e+04   -8.01389e+00
   -1.58830e+01   -8.41286e+00    5.27101e+04

      T-Protein  T-non-Protein
    3.00361e+02    3.00207e+02
"""


def test_averages_multi_line_layout_with_box_and_group_temperatures() -> None:
    # Hand-written in the pr_ebin layout (15-char right-aligned labels, 5 per line), as a
    # pressure-coupled protein run prints it; matrices (Total Virial) must be skipped.
    energies = parse_mdlog_text(AVERAGES_WITH_BOX, "avg.log").energies
    assert energies == {
        "Angle": 9.74440e03,
        "Proper Dih.": 1.22863e04,
        "Improper Dih.": 6.27372e02,
        "LJ-14": 4.39474e03,
        "Coulomb-14": 5.44393e04,
        "Kinetic En.": 1.58021e05,
        "Total Energy": -6.49170e05,
        "Conserved En.": -6.49005e05,
        "Temperature": 3.00226e02,
        "Pres. DC (bar)": -2.10599e02,
        "Pressure (bar)": 1.21516e00,
        "Constr. rmsd": 0.0,
        "Box-X": 6.85810,
        "Box-Y": 6.85810,
        "Box-Z": 6.85810,
        "T-Protein": 3.00361e02,
        "T-non-Protein": 3.00207e02,
    }
