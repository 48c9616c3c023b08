"""Parser defect classes found on real public files (issue 14), one test group per class.

Every sample is a verbatim public file (origins in tests/data/samples/README.md). Expected
numbers are read off the sample text and worked out by hand next to each assertion, or
recomputed from the file with the stdlib ``csv`` module, never by the code under test.
"""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.parsers.categories import (
    CATEGORIES,
    NOT_A_KERNEL,
    PME_SPREAD_GATHER,
    base_name,
    classify,
)
from orchestrator.parsers.mdlog import cycle_breakdown, parse_mdlog, parse_mdlog_text
from orchestrator.parsers.mdlog_cycles import nonbonded_on_gpu
from orchestrator.parsers.rocprof import parse_kernel_csv, parse_rocprof

SAMPLES = Path(__file__).parent / "data" / "samples"
KOKKOS = SAMPLES / "dalg24_kokkos__results.stats.csv"
SALTFISH = SAMPLES / "anghostcici_saltfish__results.stats.csv"
GUNROCK = SAMPLES / "gunrock_gunrock__results.stats.csv"
COUNTERS = (
    SAMPLES / "ROCm_rocprofiler-sdk__source_docs_how-to_using-rocprofv3.rst"
    "__counter_collection__amd-staging-b5f1d70.csv"
)
COUNTERS_NO_TIME = (
    SAMPLES / "ROCm_rocprofiler-sdk__source_docs_data_counter_collection__amd-mainline-8ab1ed7.csv"
)
LOG_2016 = SAMPLES / (
    "ukri-excalibur_excalibur-tests__output_alaska_ib-gcc9-openmpi4-ucx_gromacs"
    "_Gromacs_61k_1_61k-atoms.log"
)
LOG_2019_GPU = SAMPLES / "jdh4_running_gromacs__03_benchmarks_md.log.intel-broadwell-P100"
LOG_467_TAIL = SAMPLES / "jtp4kc_expdens__job_daemon.py__textfor_log__gromacs-4.6.7-tail.log"
LOG_2026_SYCL = SAMPLES / "public-unresolved__gromacs-2026.0-sycl-md.log-tail.excerpt.txt"
ENCCS_TRACE = SAMPLES / "ENCCS_amd-rocm-development__content_profilers.md__rocprof_v1_results.csv"


def _by_name(path: Path) -> dict[str, tuple[int, int]]:
    b = parse_kernel_csv(path)
    return {k.name: (k.calls, round(k.total_ms * 1e6)) for k in [*b.kernels, *b.excluded]}


# --- 1. legacy results.stats.csv with unquoted commas in kernel names ------------------


def test_unquoted_commas_in_legacy_stats_are_read_from_the_right() -> None:
    b = parse_kernel_csv(KOKKOS)
    assert b.source == "rocprof v1 stats"
    by_name = _by_name(KOKKOS)
    scatter = next(n for n in by_name if "scatter_view_loop" in n)
    # the whole demangled name, commas included, is one kernel
    assert scatter.startswith(
        "void Kokkos::Experimental::Impl::hip_parallel_launch_local_memory<Kokkos::Impl::"
        "ParallelFor<scatter_view_loop(Kokkos::View<int**>, Kokkos::View<int*>)"
    )
    assert scatter.endswith("Kokkos::RangePolicy> const*)")
    assert by_name[scatter] == (1, 533600)
    assert by_name["Kokkos::(anonymous namespace)::init_lock_array_kernel_threadid(int)"] == (
        1,
        7040,
    )
    assert sorted(calls for calls, _ in by_name.values()) == [1, 1, 1, 1, 1, 1, 2, 4]
    # 533600 + 527360 + 397280 + 160960 + 11040 + 7360 + 7040 ns of real kernels
    assert round(b.total_ms * 1e6) == 1644640
    assert sum(c.percent for c in b.categories.values()) == pytest.approx(100.0)


# --- 2. pseudo-kernels are listed, never counted ---------------------------------------


def test_barrier_packets_are_excluded_but_listed() -> None:
    b = parse_kernel_csv(SALTFISH)
    with SALTFISH.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    every_ns = sum(int(r["TotalDurationNs"]) for r in rows)
    barrier = next(r for r in rows if r["Name"] == "<barrier packet>")
    assert [(k.name, k.calls, round(k.total_ms * 1e6)) for k in b.excluded] == [
        ("<barrier packet>", 85112, 142976988030)
    ]
    assert all(k.category == NOT_A_KERNEL for k in b.excluded)
    assert round(b.total_ms * 1e6) == every_ns - int(barrier["TotalDurationNs"])
    assert b.excluded_ms == pytest.approx(142976.988030)
    assert "<barrier packet>" not in b.unknown
    assert "<barrier packet>" not in {k.name for k in b.kernels}
    assert sum(c.percent for c in b.categories.values()) == pytest.approx(100.0)


def test_unknown_command_type_is_excluded() -> None:
    b = parse_kernel_csv(KOKKOS)
    assert [(k.name, k.calls, k.total_ms) for k in b.excluded] == [("Unknown command type", 4, 0)]
    assert "Unknown command type" not in b.unknown
    assert classify("<barrier packet>") == (NOT_A_KERNEL, True)
    assert classify('"<barrier packet>"') == (NOT_A_KERNEL, True)


# --- 3. rocPRIM >= 4 scans and the init kernel ------------------------------------------


def test_rocprim4_trampoline_scan_and_its_int_init_are_nbnxm() -> None:
    b = parse_kernel_csv(GUNROCK)  # rocPRIM 4.1 (ROCPRIM_400100_NS), gfx942
    scans = {k.name.split("<", 1)[0]: (k.calls, round(k.total_ms * 1e6)) for k in b.kernels}
    nbnxm = [k for k in b.kernels if k.category == "nbnxm"]
    assert len(nbnxm) == 3
    assert {(k.calls, round(k.total_ms * 1e6)) for k in nbnxm} == {
        (5, 648643),  # trampoline_kernel<... launch_lookback_scan ...>
        (7, 43740),  # trampoline_kernel<... launch_single_scan ...>
        (5, 9783),  # init_lookback_scan_state_kernel<lookback_scan_state<int, false, true>>
    }
    assert b.categories["nbnxm"].total_ms == pytest.approx((648643 + 43740 + 9783) / 1e6)
    assert not any("trampoline_kernel" in name for name in b.unknown)
    assert scans  # every row parsed


def test_rocprim_partition_init_is_not_pair_list_work() -> None:
    b = parse_kernel_csv(SALTFISH)  # PyTorch: rocPRIM partition over unsigned offsets
    init = next(k for k in b.kernels if "init_lookback_scan_state_kernel" in k.name)
    assert "lookback_scan_state<unsigned int, false, true>" in init.name
    assert (init.category, init.calls) == ("other", 172032)
    assert init.name in b.unknown
    assert b.categories["nbnxm"].total_ms == 0.0


def test_mangled_trampoline_scan_matches_by_template_argument() -> None:
    # The same kernel as the gunrock row, in the mangled spelling (--mangled-kernels),
    # cut after the identifiers that matter.
    mangled = (
        "_ZN7rocprim17ROCPRIM_400100_NS6detail17trampoline_kernelINS1_19wrapped_scan_config"
        "INS0_14default_configEiEELNS1_11target_archE942EZNS1_20launch_lookback_scanIS5_"
        "LNS1_25lookback_scan_determinismE0ELb1ELb1EPiS9_N6thrust4plusIiEEiiNS1_19lookback_"
        "scan_stateIiLb0ELb1EEEEE10hipError_tS7_T3_T4_mT5_T6_T7_jT8_Ej.kd"
    )
    assert classify(mangled) == ("nbnxm", True)


# --- 4. CPU Force row with the nonbonded work on a GPU ----------------------------------


def test_force_row_is_other_when_nonbonded_ran_on_the_gpu() -> None:
    log = parse_mdlog(LOG_2019_GPU)  # 2019.6, CUDA, "PP:0,PME:0", "Wait GPU NB local"
    assert log.gmx_version == "2019.6"
    assert log.nonbonded_on_gpu is True
    b = cycle_breakdown(log)
    force = next(k for k in b.kernels if k.name == "Force")
    assert (force.category, force.total_ms) == ("other", pytest.approx(3591.0))
    assert b.categories["nbnxm"].total_ms == pytest.approx(1270.0)  # NB X/F buffer ops.
    assert any("'Force' row" in note for note in b.notes)


def test_force_row_stays_nbnxm_on_a_cpu_only_run() -> None:
    log = parse_mdlog(LOG_2016)  # 2016.4, GPU support disabled
    assert log.nonbonded_on_gpu is False
    b = cycle_breakdown(log)
    assert b.categories["nbnxm"].total_ms == pytest.approx(226906 + 3270)  # Force + NB X/F
    assert not any("'Force' row" in note for note in b.notes)


def test_explicit_nb_flag_decides() -> None:
    # real command lines: jdh4/running_gromacs 03_benchmarks/README.md and an EESSI job
    assert nonbonded_on_gpu(
        "", [], "gmx_gpu mdrun -gputasks 0001 -nb gpu -pme gpu -npme 1 -ntmpi 4 -ntomp 2"
    )
    # 2026 reportgpuusage.cpp wording with GPU bondeds; the 4.6/5.x kernel line that the
    # regression suite's gmxtest.pl looks for ("^Using .* 8x8 non-bonded kernels")
    assert nonbonded_on_gpu(
        "PP tasks will do short-ranged and most bonded interactions on the GPU\n", [], None
    )
    assert nonbonded_on_gpu("Using CUDA 8x8 non-bonded kernels\n", [], None)
    assert not nonbonded_on_gpu("Using SIMD4xM 4x8 nonbonded short-range kernels\n", [], None)
    cpu_log = LOG_2019_GPU.read_text()
    gpu_rows = parse_mdlog(LOG_2019_GPU).cycles
    assert not nonbonded_on_gpu(cpu_log, gpu_rows, "gmx_mpi mdrun -nb cpu -s benchmark.tpr")


# --- 5. base names inside an (anonymous namespace) --------------------------------------


@pytest.mark.parametrize("sample", [KOKKOS, SALTFISH, GUNROCK])
def test_every_real_kernel_has_an_identifier_as_base_name(sample: Path) -> None:
    for kernel in parse_kernel_csv(sample).kernels:
        assert re.fullmatch(r"[A-Za-z_]\w*", base_name(kernel.name)), kernel.name


def test_anonymous_namespace_names() -> None:
    assert (
        base_name("Kokkos::(anonymous namespace)::init_lock_array_kernel_atomic()")
        == "init_lock_array_kernel_atomic"
    )
    softmax = next(
        k.name for k in parse_kernel_csv(SALTFISH).kernels if "cunn_SoftMaxForward" in k.name
    )
    assert softmax.startswith("void at::native::(anonymous namespace)::cunn_SoftMaxForward<")
    assert base_name(softmax) == "cunn_SoftMaxForward"


# --- 6. rocprofv3 counter_collection.csv ------------------------------------------------


def test_counter_collection_counts_each_dispatch_once(tmp_path: Path) -> None:
    b = parse_kernel_csv(COUNTERS)
    assert b.source.startswith("rocprofv3 counter_collection")
    kernel = b.kernels[0]
    # dispatches 4 and 8: ...885119754 - ...885095594 = 24160; 12 and 16: 19200 ns
    assert (kernel.calls, round(kernel.total_ms * 1e6)) == (4, 2 * 24160 + 2 * 19200)
    assert kernel.median_us == pytest.approx((19200 + 24160) / 2 / 1e3)
    # rocprofv3 writes one row per counter per dispatch: with a second counter
    # (--pmc SQ_WAVES GRBM_COUNT) every dispatch appears twice, still counted once
    lines = COUNTERS.read_text().splitlines()
    doubled = tmp_path / "1_counter_collection.csv"
    doubled.write_text(
        "\n".join(
            [lines[0], *lines[1:], *(ln.replace('"SQ_WAVES"', '"GRBM_COUNT"') for ln in lines[1:])]
        )
        + "\n"
    )
    again = parse_kernel_csv(doubled).kernels[0]
    assert (again.calls, again.total_ms) == (kernel.calls, kernel.total_ms)


def test_directory_of_counter_files_is_not_summed_across_passes(tmp_path: Path) -> None:
    for n in (1, 2):  # rocprofv3 -i with two pmc lines: pass_1/, pass_2/ rerun the app
        (tmp_path / f"pass_{n}").mkdir()
        shutil.copy(COUNTERS, tmp_path / f"pass_{n}" / "312_counter_collection.csv")
    with pytest.raises(UserError) as err:
        parse_rocprof(tmp_path)
    assert "pass one of them by name" in err.value.message


def test_counter_collection_without_timestamps_says_what_to_pass() -> None:
    with pytest.raises(UserError) as err:
        parse_kernel_csv(COUNTERS_NO_TIME)
    assert str(COUNTERS_NO_TIME) in err.value.message
    assert "kernel_trace.csv" in err.value.message
    assert "--kernel-trace" in err.value.message


# --- 7. old and header-less md.logs -----------------------------------------------------


def test_headerless_gromacs_4_6_job_tail_parses_and_says_what_is_missing() -> None:
    log = parse_mdlog(LOG_467_TAIL)
    assert log.gmx_version is None
    assert {"header", "version", "command_line", "input_parameters", "atoms"} <= set(log.missing)
    assert "performance" not in log.missing and "cycle_table" not in log.missing
    assert (log.ns_per_day, log.hour_per_ns) == (4.028, 5.959)
    assert (log.core_seconds, log.wall_seconds) == (12101659.800, 604814.352)
    assert log.finished is True  # "Finished mdrun on node 0"
    rows = {r.name: r for r in log.cycles}
    # 4.6 rows with a rank count but no thread count, and the untitled PME breakdown
    assert (rows["Total"].ranks, rows["Total"].wall_seconds) == (20, 604814.352)
    assert rows["PME wait for PP"].ranks == 8 and rows["PME wait for PP"].section == "main"
    assert [r.name for r in log.cycles if r.section == "pme"] == [
        "PME redist. X/F",
        "PME spread/gather",
        "PME 3D-FFT",
        "PME 3D-FFT Comm.",
        "PME solve",
    ]
    b = cycle_breakdown(log)
    assert b.unknown == []
    assert "PME mesh" not in {k.name for k in b.kernels}  # parent of the breakdown
    assert b.categories["fft"].total_ms == pytest.approx((15843.872 + 3090.970) * 1e3)


def test_old_version_spellings() -> None:
    assert parse_mdlog_text(":-)  VERSION 4.6.5  (-:\nPerformance:  1.0\n").gmx_version == "4.6.5"
    five = parse_mdlog_text(
        "                   :-) GROMACS - gmx mdrun, VERSION 5.1.4 (-:\n"
        "GROMACS version:    VERSION 5.1.4\n"
    )
    assert five.gmx_version == "5.1.4"
    assert parse_mdlog(LOG_2016).gmx_version == "2016.4"


def test_complete_logs_miss_nothing() -> None:
    assert parse_mdlog(LOG_2016).missing == []
    assert parse_mdlog(LOG_2019_GPU).missing == []


def test_text_with_no_run_output_is_still_refused(tmp_path: Path) -> None:
    junk = tmp_path / "notes.log"
    shutil.copy(
        SAMPLES / "amd_HPCTrainingExamples__Rocprofv3_HIP_README.md__kernel_stats.csv", junk
    )
    with pytest.raises(UserError, match=r"not a GROMACS md\.log"):
        parse_mdlog(junk)


# --- 8. the combined PME spread/gather row ----------------------------------------------


@pytest.mark.parametrize(("sample", "ms"), [(LOG_2016, 64483.0), (LOG_467_TAIL, 16383008.0)])
def test_spread_gather_row_is_neither_spread_nor_gather(sample: Path, ms: float) -> None:
    b = cycle_breakdown(parse_mdlog(sample))
    assert b.categories[PME_SPREAD_GATHER].total_ms == pytest.approx(ms)
    assert b.categories["pme_spread"].total_ms == 0.0
    assert b.categories["pme_gather"].total_ms == 0.0
    assert any("PME spread/gather" in note for note in b.notes)
    assert set(CATEGORIES) < set(b.categories)


def test_split_spread_and_gather_rows_have_no_combined_category() -> None:
    b = cycle_breakdown(parse_mdlog(SAMPLES.parent / "mdlog" / "water-2022.5.log"))
    assert PME_SPREAD_GATHER not in b.categories
    assert b.notes == []


# --- call-duration statistics ------------------------------------------------------------


def test_per_kernel_call_quantiles_from_a_real_trace() -> None:
    kernel = parse_kernel_csv(ENCCS_TRACE).kernels[0]
    # EndNs - BeginNs: 26316649, 26115847, 26102728 ns; linear interpolation between ranks
    assert kernel.median_us == pytest.approx(26115.847)
    assert kernel.p10_us == pytest.approx((26102728 + 0.2 * (26115847 - 26102728)) / 1e3)
    assert kernel.p90_us == pytest.approx((26115847 + 0.8 * (26316649 - 26115847)) / 1e3)


def test_stats_files_have_no_call_quantiles() -> None:
    assert all(k.median_us is None for k in parse_kernel_csv(KOKKOS).kernels)
    assert all(k.median_us is None for k in cycle_breakdown(parse_mdlog(LOG_2016)).kernels)
