"""rocprof-compute workloads: real sample workloads of four releases, and analyze's own output.

Fixtures (tests/data/rocprof_compute/README.md): Omniperf's MI100 (gfx908) test workload,
rocprofiler-compute v3.0.0's test workloads
for MI200 (gfx90a) and MI300X (gfx942), rocm-systems' MI350 (gfx950, rocprofv3) and RDNA 3.5
(long-format ``results_pmc_perf_<n>.csv``), and CSVs written by ``rocprof-compute analyze``
3.0.0 run here on those workloads. Expected numbers are worked out by hand from the raw
counters (written next to each), and checked against what analyze itself printed.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.core.files import DamagedRecord
from orchestrator.parsers.rocprof_compute import (
    CounterSummary,
    clean_kernel_name,
    find_workload,
    find_workloads,
    parse_analyze_dir,
    parse_sysinfo,
    parse_workload,
    unsupported_arch,
)
from orchestrator.platforms.base import ProfileOutcome
from orchestrator.report.counters import notes, render_comparison
from orchestrator.store.layout import COUNTERS_FILE
from orchestrator.store.runstore import RunStore
from orchestrator.verdict.counter_compare import compare_counters

DATA = Path(__file__).parent / "data" / "rocprof_compute"
MI100 = DATA / "vcopy" / "MI100"
MI200 = DATA / "vcopy" / "MI200"
MI200_D0 = DATA / "dispatch_0" / "MI200"
MI300X = DATA / "vcopy" / "MI300X_A1"
MI350 = DATA / "vcopy" / "MI350"
RDNA35 = DATA / "vcopy" / "RDNA35_KRACKAN2"
VCOPY = "vecCopy(double*, double*, double*, int, int)"


@pytest.fixture(scope="module")
def d0() -> CounterSummary:
    return parse_workload(MI200_D0)


def _only(summary: CounterSummary):  # type: ignore[no-untyped-def]
    assert [k.name for k in summary.kernels] == [VCOPY]
    return summary.kernels[0]


# --- sysinfo: both schemas -------------------------------------------------------------------


def test_sysinfo_mi200_v3_schema() -> None:
    gpu = parse_sysinfo(MI200 / "sysinfo.csv")
    assert (gpu.arch, gpu.model, gpu.cu_count) == ("gfx90a", "MI200", 104)
    assert gpu.hbm_bandwidth_gbs == pytest.approx(1638.4)
    assert gpu.hbm_bandwidth_source == "sysinfo hbm_bw"
    assert (gpu.max_waves_per_cu, gpu.num_xcd, gpu.wave_size) == (32, 1, 64)
    assert gpu.rocm_version == "6.0.2-115"
    assert gpu.max_mclk_mhz == 1600


def test_sysinfo_mi100_gfx908() -> None:
    """Omniperf 2.0.0-RC1's schema (sysinfo ``version`` 2): hbm_bw, no gpu_series."""
    gpu = parse_sysinfo(MI100 / "sysinfo.csv")
    assert (gpu.arch, gpu.model, gpu.cu_count, gpu.simd_per_cu) == ("gfx908", "MI100", 120, 4)
    assert (gpu.max_waves_per_cu, gpu.num_xcd, gpu.wave_size) == (40, 1, 64)
    assert gpu.hbm_bandwidth_gbs == pytest.approx(1228.8)
    assert gpu.hbm_bandwidth_source == "sysinfo hbm_bw"
    assert (gpu.max_sclk_mhz, gpu.max_mclk_mhz, gpu.l2_channels) == (1502, 1200, 32)
    assert (gpu.rocm_version, gpu.sysinfo_version) == ("6.0.2-115", "2")
    # the file writes "NA" for both partitions (MI100 has none) and has no gpu_series column
    assert gpu.compute_partition is None and gpu.memory_partition is None
    assert gpu.series is None


def test_sysinfo_mi300x_partitions() -> None:
    gpu = parse_sysinfo(MI300X / "sysinfo.csv")
    assert (gpu.arch, gpu.cu_count, gpu.num_xcd) == ("gfx942", 304, 8)
    assert gpu.hbm_bandwidth_gbs == pytest.approx(5324.8)
    assert (gpu.compute_partition, gpu.memory_partition) == ("SPX", "NPS1")


@pytest.mark.parametrize(
    "path", [MI350 / "sysinfo.csv", DATA / "sysinfo" / "MI350_c234be7" / "sysinfo.csv"]
)
def test_sysinfo_mi350_new_schema_without_hbm_bw(path: Path) -> None:
    """Newer sysinfo drops hbm_bw and adds gpu_series/gpu_chip_id/num_*_channels."""
    gpu = parse_sysinfo(path)
    assert (gpu.arch, gpu.series, gpu.cu_count, gpu.num_xcd) == ("gfx950", "MI350", 128, 8)
    # max_sclk 0 and max_mclk empty in these samples: unknown, so no HBM peak either
    assert gpu.max_sclk_mhz is None and gpu.max_mclk_mhz is None
    assert gpu.hbm_bandwidth_gbs is None and gpu.hbm_bandwidth_source is None
    assert gpu.sysinfo_version == "3"


def test_sysinfo_derives_hbm_peak_from_clock_and_channels(tmp_path: Path) -> None:
    """max_mclk/1000 * 32 * channels, as develop's parser.py does, when hbm_bw is gone."""
    text = (DATA / "sysinfo" / "MI350_c234be7" / "sysinfo.csv").read_text().splitlines()
    header, row = text[0].split(","), text[1]
    cells = row.split(",")
    # the MI350 row quotes no field with a comma, so a plain split is exact here
    cells[header.index("max_mclk")] = "2000"
    (tmp_path / "sysinfo.csv").write_text(",".join(header) + "\n" + ",".join(cells) + "\n")
    gpu = parse_sysinfo(tmp_path / "sysinfo.csv")
    assert gpu.hbm_bandwidth_gbs == pytest.approx(2000 / 1000 * 32 * 128)  # 8192 GB/s
    assert gpu.hbm_bandwidth_source and "channels" in gpu.hbm_bandwidth_source


# --- workloads -------------------------------------------------------------------------------


def test_single_dispatch_matches_analyze(d0: CounterSummary) -> None:
    k = _only(d0)
    assert d0.tool_version == "2.0.0-RC1" and d0.profiler == "rocprofv1"
    assert k.dispatches == 1
    assert k.total_ns == 20160  # 1411987252082105 - 1411987252061945
    assert (k.arch_vgpr, k.accum_vgpr, k.sgpr) == (8, 0, 16)
    assert (k.lds_per_workgroup, k.scratch_per_workitem) == (0, 0)
    assert (k.grid_size, k.workgroup_size, k.wave_size) == (1048576, 256, 64)
    assert k.waves_per_dispatch == 16384 and k.valu_insts_per_dispatch == 163840
    assert k.l2_hit_pct == pytest.approx(100 * 73037 / (73037 + 131079))  # 35.78
    assert k.fabric_read_bytes == 64 * 131080  # RDREQ_32B = 0
    assert k.fabric_write_bytes == 64 * 131072  # all 64B writes
    assert k.fabric_read_gbs == pytest.approx(64 * 131080 / 20160)  # 416.13 GB/s
    # occupancy measured: SQ_ACCUM_PREV_HIRES / GRBM_GUI_ACTIVE / (32 waves * 104 CUs)
    assert k.wave_occupancy_pct == pytest.approx(100 * 43312188 / 28399 / 3328)
    # theoretical: 8 VGPRs, 16 SGPRs, no LDS -> the gfx90a maximum of 8 waves per SIMD
    assert (k.occupancy_waves_per_simd, k.occupancy_limiter) == (8, "none")
    # roofline.csv device 0 HBMBw is the peak
    assert d0.roofline is not None and d0.roofline.hbm_gbs == pytest.approx(1388.7638)
    assert d0.hbm_peak_gbs == pytest.approx(1388.7638)
    assert k.pct_of_hbm_peak == pytest.approx(100 * (16777728 / 20160) / 1388.7638)  # 59.9
    # rocprof-compute analyze 3.0.0 printed these for this workload (2.1_Speed-of-Light.csv)
    assert d0.analyze is not None
    sol = {m.metric: m for m in d0.analyze.speed_of_light}
    assert sol["L2 Cache Hit Rate"].value == pytest.approx(k.l2_hit_pct, abs=0.005)
    assert sol["L2-Fabric Read BW"].value == pytest.approx(k.fabric_read_gbs, abs=0.005)
    assert sol["L2-Fabric Write BW"].value == pytest.approx(k.fabric_write_gbs, abs=0.005)
    assert sol["Wavefront Occupancy"].pct_of_peak == pytest.approx(k.wave_occupancy_pct, abs=0.005)
    assert d0.analyze.top_kernels[0].name == VCOPY  # analyze wraps the name; unwrapped
    assert d0.analyze.top_kernels[0].sum_ns == 20160


def test_roofline_peaks(d0: CounterSummary) -> None:
    roof = d0.roofline
    assert roof is not None and roof.device == 0
    assert (roof.l2_gbs, roof.lds_gbs) == (pytest.approx(5016.8418), pytest.approx(17710.416))
    assert roof.fp32_gflops == pytest.approx(20937.8, abs=0.1)
    assert roof.fp64_gflops == pytest.approx(20269.2, abs=0.1)


def test_three_dispatches_aggregate(tmp_path: Path) -> None:
    s = parse_workload(MI200)
    k = _only(s)
    assert k.dispatches == 3 and s.dispatches == 3
    assert k.total_ns == 20480 + 16320 + 15520  # End - Start of dispatches 0, 1, 2
    assert k.mean_ns == pytest.approx(52320 / 3)
    hits, misses = 72935 + 69652 + 70029, 131081 + 131083 + 131082
    assert k.l2_hit_pct == pytest.approx(100 * hits / (hits + misses))
    assert k.fabric_write_bytes == 64 * (131072 + 91072 + 91113)
    assert s.hbm_peak_gbs == pytest.approx(1388.9302)  # this workload's own roofline.csv
    assert s.analyze is not None and s.analyze.top_kernels[0].count == 3


def test_mi100_gfx908_three_dispatches() -> None:
    """The oldest GPU with a published test workload (gfx906 has code but no workload).

    rocprofv1 columns (``[clone .kd]`` names, integer ns timestamps, lower-case
    ``wave_size``), ``TCC_EA_*`` counters, and AGPRs in a register file of their own.

    Expected values worked out from the CSVs: pmc_perf.csv's three rows (dispatches 0, 1, 2)
    and SQ_LEVEL_WAVES.csv's SQ_ACCUM_PREV_HIRES column; the formulas are the gfx908
    0200_system-speed-of-light.yaml of ROCm/omniperf, the same as gfx90a's.
    """
    s = parse_workload(MI100)
    k = _only(s)
    assert s.files == ["sysinfo.csv", "pmc_perf.csv", "SQ_LEVEL_WAVES.csv"]
    assert (s.gpu.arch, s.dispatches, k.dispatches) == ("gfx908", 3, 3)
    # log.txt was not copied (README): version and backend are unknown here
    assert s.tool_version is None and s.profiler is None
    # Omniperf has no roofline for gfx908 ("does not support roofline analysis"): sysinfo peak
    assert s.roofline is None and s.hbm_peak_source == "sysinfo hbm_bw"
    assert s.hbm_peak_gbs == pytest.approx(1228.8)
    assert s.notes == []  # every duration is valid, TCC counters and an HBM peak are there
    # identical in all three rows
    assert (k.arch_vgpr, k.accum_vgpr, k.sgpr) == (8, 8, 16)
    assert (k.lds_per_workgroup, k.scratch_per_workitem) == (0, 0)
    assert (k.grid_size, k.workgroup_size, k.wave_size) == (1048576, 256, 64)
    assert k.waves_per_dispatch == 16384 and k.valu_insts_per_dispatch == 163840
    # End - Start: ...5984317 - ...5959517, ...6102877 - ...6083997, ...6141597 - ...6122717
    # (timestamps.csv holds the same Start/End_Timestamp values)
    assert k.total_ns == 24800 + 18880 + 18880
    assert k.mean_ns == pytest.approx(62560 / 3)
    # TCC_HIT_sum 188, 47, 47; TCC_MISS_sum 262415, 262430, 262415: a streaming copy on MI100
    # hits L2 almost never (0.036 %, against 35 % on MI200)
    hits, misses = 188 + 47 + 47, 262415 + 262430 + 262415
    assert k.l2_hit_pct == pytest.approx(100 * hits / (hits + misses))
    # TCC_EA_RDREQ_sum 131340, 131341, 131341 and TCC_EA_RDREQ_32B_sum 0: all 64-byte reads;
    # TCC_EA_WRREQ_sum == TCC_EA_WRREQ_64B_sum == 131072, 86546, 86724: all 64-byte writes.
    # No TCC_BUBBLE (gfx942 and later), so the gfx90a read formula applies.
    assert k.fabric_read_bytes == 64 * (131340 + 131341 + 131341)
    assert k.fabric_write_bytes == 64 * (131072 + 86546 + 86724)
    assert k.fabric_read_gbs == pytest.approx(64 * 394022 / 62560)  # 403.09 GB/s
    assert k.pct_of_hbm_peak == pytest.approx(100 * 64 * (394022 + 304342) / 62560 / 1228.8)
    # SQ_ACCUM_PREV_HIRES (SQ_LEVEL_WAVES.csv) 101647680, 99287100, 101130872 over
    # pmc_perf.csv's GRBM_GUI_ACTIVE 49433, 43281, 43273 (one XCD), of 40 waves * 120 CUs
    accum, active = 101647680 + 99287100 + 101130872, 49433 + 43281 + 43273
    assert k.wave_occupancy_pct == pytest.approx(100 * accum / active / (40 * 120))  # 46.3
    # gfx908 keeps AGPRs in a file of their own: max(8 VGPRs, 8 AGPRs) = 8, 16 SGPRs, no LDS
    # -> gfx908's maximum of 10 waves per SIMD
    assert (k.occupancy_waves_per_simd, k.occupancy_limiter) == (10, "none")


def test_mi300x_rounded_timestamps_give_no_duration() -> None:
    """The sample's timestamps were saved as 8.1097E+14: durations are unknown, not zero.

    (analyze 3.0.0 printed 'inf' bandwidths for this workload; its CSV is kept beside it.)
    """
    s = parse_workload(MI300X)
    k = _only(s)
    assert s.roofline is None and s.hbm_peak_source == "sysinfo hbm_bw"
    assert k.total_ns is None and k.fabric_gbs is None and k.pct_of_hbm_peak is None
    assert any("8.1097" in n or "810970000000000" in n for n in s.notes)
    # counters without time are still there; the gfx942 read formula counts TCC_BUBBLE
    assert k.fabric_read_bytes == 128 * 65536 * 3 + 64 * (239 + 227 + 222)
    assert (k.arch_vgpr, k.accum_vgpr) == (4, 4)
    assert k.occupancy_waves_per_simd == 8
    assert s.analyze is not None
    assert {m.metric: m.value for m in s.analyze.speed_of_light}["L2-Fabric Read BW"] is None


def test_mi350_rocprofv3_float_timestamps() -> None:
    s = parse_workload(MI350)
    k = _only(s)
    assert (s.tool_version, s.profiler, s.gpu.arch) == ("3.1.0", "rocprofv3", "gfx950")
    # 1248227792639148.5 - ...617386.5, ...220373.0 - ...203453.2, ...718203.8 - ...701339.8
    # (doubles near 1.2e15 are 0.25 apart, so the sum is exact to half a nanosecond)
    assert k.total_ns == pytest.approx(21762.0 + 16919.8 + 16864.0, abs=0.5)
    assert k.l2_hit_pct == pytest.approx(100 * 66864 * 3 / (66864 * 3 + 131138 + 131120 + 131112))
    assert k.pct_of_hbm_peak is None  # no roofline, no hbm_bw
    assert any("no HBM peak" in n for n in s.notes)
    assert s.roofline is None


def test_rdna_long_format_passes_are_merged() -> None:
    """results_pmc_perf_<n>.csv: one row per counter; two passes, three dispatches."""
    s = parse_workload(RDNA35)
    k = _only(s)
    assert s.files == ["results_pmc_perf_0.csv", "results_pmc_perf_10.csv"]
    assert k.dispatches == 3
    # pass 0's timestamps: 10950373164554-10950372923278, ...561175-...333125, ...877037-...655160
    assert k.total_ns == 241276 + 228050 + 221877
    assert (k.arch_vgpr, k.sgpr) == (8, 128)
    assert k.l2_hit_pct is None and k.occupancy_waves_per_simd is None
    assert any("sysinfo" in n for n in s.notes)


def test_gzipped_counters(tmp_path: Path) -> None:
    shutil.copy(MI200_D0 / "sysinfo.csv", tmp_path)
    with (
        (MI200_D0 / "pmc_perf.csv").open("rb") as src,
        gzip.open(tmp_path / "pmc_perf.csv.gz", "wb") as dst,
    ):
        shutil.copyfileobj(src, dst)
    k = _only(parse_workload(tmp_path))
    assert k.total_ns == 20160 and k.l2_hit_pct == pytest.approx(35.782, abs=0.001)


def test_find_workload_nested(tmp_path: Path) -> None:
    """``--output-directory`` leaves <out>/<name>/<gpu model>/."""
    nested = tmp_path / "rocprof-compute" / "gmx" / "MI200"
    shutil.copytree(MI200, nested)
    assert find_workload(tmp_path) == nested
    assert find_workload(nested / "pmc_perf.csv") == nested
    assert find_workloads(tmp_path / "rocprof-compute") == [nested]
    assert find_workload(tmp_path / "absent") is None
    assert _only(parse_workload(tmp_path)).dispatches == 3


def test_kernel_names_of_every_release_compare_equal() -> None:
    assert clean_kernel_name(VCOPY + " [clone .kd]") == VCOPY  # rocprofv1
    assert clean_kernel_name(VCOPY + " (.kd)") == VCOPY  # rocprofv2
    assert clean_kernel_name("vecCopy(double*, double*, double*, int, \nint) [clone .kd]") == VCOPY


def test_category_comes_from_the_shared_rules(tmp_path: Path) -> None:
    """A GROMACS kernel name is grouped as in the rocprof breakdown."""
    text = (MI200_D0 / "pmc_perf.csv").read_text()
    (tmp_path / "pmc_perf.csv").write_text(
        text.replace(
            '"vecCopy(double*, double*, double*, int, int) [clone .kd]"', "pme_solve_kernel"
        )
    )
    k = parse_workload(tmp_path).kernels[0]
    assert (k.name, k.category, k.known) == ("pme_solve_kernel", "pme_solve", True)
    assert _only(parse_workload(MI200_D0)).category == "other"


def test_counters_json_round_trip_through_the_run_directory(
    tmp_path: Path, d0: CounterSummary
) -> None:
    RunStore.save_profile(tmp_path, ProfileOutcome(mode="counters", status="ok", counters=d0))
    assert RunStore.counters(tmp_path) == d0
    path = tmp_path / COUNTERS_FILE
    path.write_text(path.read_text()[:200])
    with pytest.raises(DamagedRecord, match=r"counters\.json"):
        RunStore.counters(tmp_path)


def test_analyze_dir_given_explicitly() -> None:
    tables = parse_analyze_dir(MI200 / "analyze")
    assert tables.files == ["0.1_Top_Kernels.csv", "2.1_Speed-of-Light.csv"]
    sol = {m.metric: m for m in tables.speed_of_light}
    assert sol["L2-Fabric Read BW"].value == 488.09 and sol["L2-Fabric Read BW"].peak == 1638.4
    assert sol["LDS Bank Conflicts/Access"].value is None  # empty cell


# --- the unsupported-GPU message -------------------------------------------------------------


def test_unsupported_arch_from_the_tool() -> None:
    log = (DATA / "unsupported" / "gfx1201-detect_arch.log").read_text()
    assert "\x1b[31m" in log  # the tool's colour codes are there...
    assert unsupported_arch(log) == "ERROR Cannot find a supported arch in rocminfo"


@pytest.mark.parametrize(
    "line",
    [
        "ERROR Cannot find a supported arch in rocminfo: gfx1201",  # develop appends the arch
        "  ERROR gfx1201 is an unsupported SoC",  # rocprof_compute_base.py
    ],
)
def test_unsupported_arch_variants(line: str) -> None:
    assert unsupported_arch("banner\n" + line + "\n") == line.strip()


def test_no_unsupported_message_in_a_normal_log() -> None:
    assert unsupported_arch((MI350 / "log.txt").read_text()) is None


# --- errors ----------------------------------------------------------------------------------


def _copy(tmp_path: Path, source: Path = MI200_D0) -> Path:
    target = tmp_path / "wl"
    shutil.copytree(source, target)
    return target


def test_missing_pmc_perf(tmp_path: Path) -> None:
    shutil.copy(MI200 / "sysinfo.csv", tmp_path)
    with pytest.raises(UserError, match=r"No pmc_perf\.csv") as err:
        parse_workload(tmp_path)
    assert str(tmp_path) in err.value.message
    with pytest.raises(UserError, match="does not exist"):
        parse_workload(tmp_path / "nope")


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.99])
def test_truncated_pmc_perf(tmp_path: Path, keep: float) -> None:
    """Cut in the header (0.5 of this file is header), in a row, or just before the end."""
    wl = _copy(tmp_path, MI200)
    data = (wl / "pmc_perf.csv").read_bytes()
    (wl / "pmc_perf.csv").write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(UserError, match="ends mid-row") as err:
        parse_workload(wl)
    assert str(wl / "pmc_perf.csv") in err.value.message


def test_short_row_in_the_middle(tmp_path: Path) -> None:
    wl = _copy(tmp_path, MI200)
    lines = (wl / "pmc_perf.csv").read_text().splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    (wl / "pmc_perf.csv").write_text("".join(lines))
    with pytest.raises(UserError, match=r"line 3 has \d+ of the header's 1022 columns"):
        parse_workload(wl)


def test_empty_pmc_perf(tmp_path: Path) -> None:
    wl = _copy(tmp_path)
    (wl / "pmc_perf.csv").write_text("")
    with pytest.raises(UserError, match="is empty") as err:
        parse_workload(wl)
    assert "pmc_perf.csv" in err.value.message


def test_header_only_pmc_perf(tmp_path: Path) -> None:
    wl = _copy(tmp_path)
    header = (wl / "pmc_perf.csv").read_text().splitlines()[0]
    (wl / "pmc_perf.csv").write_text(header + "\n")
    with pytest.raises(UserError, match="holds no dispatch"):
        parse_workload(wl)


def test_no_kernel_name_column(tmp_path: Path) -> None:
    wl = _copy(tmp_path)
    text = (wl / "pmc_perf.csv").read_text()
    (wl / "pmc_perf.csv").write_text(text.replace("Kernel_Name", "KernelName", 1))
    with pytest.raises(UserError, match="no Kernel_Name column") as err:
        parse_workload(wl)
    assert "pmc_perf.csv" in err.value.message


def test_non_numeric_counter(tmp_path: Path) -> None:
    wl = _copy(tmp_path)
    text = (wl / "pmc_perf.csv").read_text()
    (wl / "pmc_perf.csv").write_text(text.replace(",73037.0,", ",seventy,", 1))
    with pytest.raises(UserError, match=r"line 2, column tcc_hit_sum: 'seventy'") as err:
        parse_workload(wl)
    assert "pmc_perf.csv" in err.value.message


def test_non_numeric_roofline(tmp_path: Path) -> None:
    wl = _copy(tmp_path)
    text = (wl / "roofline.csv").read_text()
    (wl / "roofline.csv").write_text(text.replace("1388.7638", "fast", 1))
    with pytest.raises(UserError, match=r"roofline\.csv line 2, column HBMBw"):
        parse_workload(wl)


# --- comparison ------------------------------------------------------------------------------


def test_compare_mi200_with_mi300x_same_case() -> None:
    base, cand = parse_workload(MI200), parse_workload(MI300X)
    cmp = compare_counters(base, cand, baseline_label="MI200", candidate_label="MI300X")
    (row,) = cmp.rows
    assert row.presence == "both" and row.name == VCOPY
    assert row.baseline is not None and row.candidate is not None
    assert row.baseline.total_ns == 52320 and row.candidate.total_ns is None
    assert row.duration_delta_pct is None  # no candidate duration: no change claimed
    assert (row.baseline.arch_vgpr, row.candidate.arch_vgpr) == (8, 4)
    assert any("different GPUs (gfx90a, gfx942)" in n for n in notes(cmp))
    text = render_comparison(cmp)
    assert "| vecCopy(double*, double*, double*, int, int) |" in text
    assert "8 → 4" in text and "35.1 → 33.4" in text and "52.32" in text


def test_compare_medians_over_runs_and_delta() -> None:
    base = [parse_workload(MI200), parse_workload(MI200_D0)]
    cand = parse_workload(MI350)
    cmp = compare_counters(base, cand, baseline_label="MI200", candidate_label="MI350")
    (row,) = cmp.rows
    assert row.baseline is not None and row.candidate is not None
    assert (row.baseline.runs, row.candidate.runs) == (2, 1)
    assert row.baseline.total_ns == pytest.approx((52320 + 20160) / 2)  # median of two
    expected = 100 * (55545.8 - 36240) / 36240
    assert row.duration_delta_pct == pytest.approx(expected, abs=0.01)
    assert any("dispatches" in n for n in notes(cmp))  # 2 (median of 3 and 1) vs 3
    plain = render_comparison(cmp, "plain")
    assert "+53.3%" in plain and "|" not in plain.split("\n")[2]


def test_compare_kernels_on_one_side_only() -> None:
    base = parse_workload(MI200_D0)
    renamed = base.kernels[0].model_copy(
        update={"name": "nbnxmKernelElecEwLJ", "category": "nbnxm"}
    )
    cand = base.model_copy(update={"kernels": [renamed]})
    cmp = compare_counters(base, cand, top_n=5)
    assert [(r.name, r.presence) for r in cmp.rows] == [
        (VCOPY, "baseline only"),
        ("nbnxmKernelElecEwLJ", "candidate only"),
    ]
    text = render_comparison(cmp)
    assert "baseline only" in text and "candidate only" in text
