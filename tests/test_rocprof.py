"""rocprofv3 / legacy rocprof CSV parsing: real samples of every layout, plus generated edge cases.

Expected totals are End_Timestamp - Start_Timestamp of the sample rows, worked out by hand
(written next to each number), not computed by the code under test.
"""

from __future__ import annotations

import csv
from functools import partial
from pathlib import Path

import pytest

from benchmarks.bench_parse import write_trace
from orchestrator.core.errors import UserError
from orchestrator.parsers.categories import CATEGORIES
from orchestrator.parsers.rocprof import (
    Breakdown,
    blocks,
    combine,
    files,
    find_rocprof_files,
    parse_kernel_csv,
    parse_rocprof,
)

SAMPLES = Path(__file__).parent / "data" / "samples"
ADD = "void addition_kernel<float>(float*, float const*, float const*, int, int)"
SUB = "subtract_kernel(float*, float const*, float const*, int, int)"
MUL = "multiply_kernel(float*, float const*, float const*, int, int)"
DIV = "divide_kernel(float*, float const*, float const*, int, int)"

# file -> (source label, {kernel name: (calls, total ns)})
SAMPLE_TOTALS: dict[str, tuple[str, dict[str, tuple[int, int]]]] = {
    # ROCm 7.0, 22 columns, Agent_Id "Agent 4"
    "ROCm_rocm-systems__projects_rocprofiler-sdk_source_docs_how-to_using-rocprofv3.rst"
    "__kernel_trace_demangled__rocprofiler-sdk-7.0.csv": (
        "rocprofv3 kernel_trace",
        {
            ADD: (1, 11040),  # 1551874061255734 - 1551874061244694
            SUB: (1, 11040),  # 1551874061270254 - 1551874061259214
            MUL: (1, 9720),  # 1551874061279974 - 1551874061270254
            DIV: (1, 9160),  # 1551874061335454 - 1551874061326294
        },
    ),
    # ROCm 7.0 --mangled-kernels
    "ROCm_rocm-systems__projects_rocprofiler-sdk_source_docs_how-to_using-rocprofv3.rst"
    "__kernel_trace_mangled__rocprofiler-sdk-7.0.csv": (
        "rocprofv3 kernel_trace",
        {
            "_Z15addition_kernelIfEvPT_PKfS3_ii.kd": (1, 11160),  # ...681606 - ...670446
            "_Z15subtract_kernelPfPKfS1_ii.kd": (1, 10880),  # ...697606 - ...686726
            "_Z15multiply_kernelPfPKfS1_ii.kd": (1, 10880),  # ...712806 - ...701926
            "_Z13divide_kernelPfPKfS1_ii.kd": (1, 11720),  # ...774646 - ...762926
        },
    ),
    # later 6.x, 19 columns, integer Agent_Id
    "ROCm_rocprofiler-sdk__source_docs_data_kernel_trace.csv": (
        "rocprofv3 kernel_trace",
        {
            ADD: (2, 16157 + 12830),  # ...369494-...353337, ...621674-...608844
            SUB: (2, 10464 + 10905),  # ...435326-...424862, ...669424-...658519
            MUL: (2, 10183 + 11145),  # ...497669-...487486, ...726795-...715650
            DIV: (2, 10103 + 11547),  # ...555722-...545619, ...784969-...773422
        },
    ),
    # late 2024, 18 columns (no Stream_Id)
    "ROCm_rocprofiler-sdk__source_docs_data_kernel_trace__amd-staging-b5f1d70.csv": (
        "rocprofv3 kernel_trace",
        {
            ADD: (4, 48744 + 100895 + 130526 + 133341),
            SUB: (2, 103265 + 139119),
            MUL: (1, 139563),
        },
    ),
    # rocpd2csv (ROCm 7.1.1): leading Guid, Lds_Block_Size casing
    "amd_HPCTrainingExamples__Rocprofv3_rocpd_README.md__rocpd2csv_out_kernel_trace.csv": (
        "rocpd2csv kernel_trace",
        {
            "__omp_offloading_30_57b9f__QMnorm_modPnorm_l23": (1, 100080),
            "__omp_offloading_30_57b8c__QMlaplacian_modPlaplacian_l22": (1, 51320),
            "__omp_offloading_30_57b7d__QMboundary_modPboundary_conditions_l24": (1, 29840),
            "__omp_offloading_30_57ba0__QMupdate_modPupdate_l22": (1, 51520),
        },
    ),
    # kernel_stats (ROCm 6.2.1): 0.3356, 5.384e-04, 0.00000000e+00 in other columns
    "amd_HPCTrainingExamples__Rocprofv3_HIP_README.md__kernel_stats.csv": (
        "rocprofv3 kernel_stats",
        {
            "NormKernel1(int, double, double, double const*, double*)": (1001, 358330487),
            "JacobiIterationKernel(int, double, double, double const*, double const*, double*, "
            "double*)": (1000, 172351563),
            "LocalLaplacianKernel(int, int, int, double, double, double const*, double*)": (
                1000,
                133229404,
            ),
            "HaloLaplacianKernel(int, int, int, double, double, double const*, double const*, "
            "double*)": (1000, 9922658),
            "NormKernel2(int, double const*, double*)": (1001, 2269165),
            "__amd_rocclr_fillBufferAligned": (1, 3640),
        },
    ),
    # legacy rocprof v1 stats: " [clone .kd]" stripped
    "ENCCS_amd-rocm-development__content_profilers.md__rocprof_v1_results.stats.csv": (
        "rocprof v1 stats",
        {"bodyForce(Body*, float, int)": (10, 261124944)},
    ),
    # legacy rocprof v1 trace: EndNs - BeginNs of three dispatches
    "ENCCS_amd-rocm-development__content_profilers.md__rocprof_v1_results.csv": (
        "rocprof v1 trace",
        {"bodyForce(Body*, float, int)": (3, 26316649 + 26115847 + 26102728)},
    ),
}


def _by_name(b: Breakdown) -> dict[str, tuple[int, int]]:
    return {k.name: (k.calls, round(k.total_ms * 1e6)) for k in b.kernels}


@pytest.mark.parametrize("filename", sorted(SAMPLE_TOTALS))
def test_real_samples_parse_with_exact_totals(filename: str) -> None:
    source, expected = SAMPLE_TOTALS[filename]
    b = parse_kernel_csv(SAMPLES / filename)
    assert b.source == source
    assert _by_name(b) == expected
    total_ns = sum(ns for _, ns in expected.values())
    assert round(b.total_ms * 1e6) == total_ns
    assert set(b.categories) == set(CATEGORIES)
    assert sum(c.percent for c in b.categories.values()) == pytest.approx(100.0)
    # sorted by total time, descending
    totals = [k.total_ms for k in b.kernels]
    assert totals == sorted(totals, reverse=True)


def test_kernel_stats_sample_categories_and_unknowns() -> None:
    b = parse_kernel_csv(
        SAMPLES / "amd_HPCTrainingExamples__Rocprofv3_HIP_README.md__kernel_stats.csv"
    )
    assert b.categories["memory"].total_ms == pytest.approx(0.00364)  # the rocclr fill
    assert b.categories["memory"].calls == 1
    # 676106917 ns in all, 676103277 of it in five application kernels (unknown -> other)
    assert b.categories["other"].total_ms == pytest.approx(676.103277)
    assert b.categories["other"].percent == pytest.approx(100 * 676103277 / 676106917)
    assert b.categories["nbnxm"].total_ms == 0.0
    assert len(b.unknown) == 5
    assert b.unknown == sorted(b.unknown)
    assert "__amd_rocclr_fillBufferAligned" not in b.unknown
    avg = next(k.avg_us for k in b.kernels if k.name.startswith("NormKernel1"))
    assert avg == pytest.approx(358330487 / 1001 / 1000)


TRACE_HEADER = [
    "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id",
    "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size",
    "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X",
    "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
]  # fmt: skip
NB = (
    "void gmx::nbnxmKernel<false, false, (gmx::ElecType)4, (gmx::VdwType)2, 1, 1, "
    "(gmx::PairlistType)4>(gmx::NBAtomDataGpu, gmx::NBParamGpu, gmx::GpuPairlist, bool)"
)
SPREAD = (
    "void pmeSplineAndSpreadKernel<4, true, true, true, true, 1, true, (ThreadsPerAtom)0, 64>"
    "(PmeGpuKernelParams)"
)


def _write_trace(path: Path, rows: list[tuple[str, int, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(TRACE_HEADER)
        for i, (name, start, end) in enumerate(rows):
            w.writerow(
                ["KERNEL_DISPATCH", "Agent 4", 1, 1, 7, i, 3, name, i, start, end] + [0] * 11
            )


def test_comma_inside_quoted_kernel_name(tmp_path: Path) -> None:
    # Demangled template names carry commas; only the CSV quoting keeps the columns apart.
    trace = tmp_path / "run_kernel_trace.csv"
    _write_trace(trace, [(NB, 100, 1100), (NB, 2000, 2500), (SPREAD, 3000, 3250)])
    text = trace.read_text()
    assert '"void gmx::nbnxmKernel<false, false,' in text
    b = parse_kernel_csv(trace)
    assert _by_name(b) == {NB: (2, 1500), SPREAD: (1, 250)}
    assert b.categories["nbnxm"].total_ms == pytest.approx(0.0015)
    assert b.categories["nbnxm"].percent == pytest.approx(100 * 1500 / 1750)
    assert b.categories["pme_spread"].calls == 1
    assert b.unknown == []


def test_directory_with_hostname_subfolder_and_pid_files_sums_traces(tmp_path: Path) -> None:
    out = tmp_path / "rocprof"
    _write_trace(out / "node-a" / "4242_kernel_trace.csv", [(NB, 0, 1000), ("VkFFT_main", 0, 40)])
    _write_trace(out / "node-a" / "4243_kernel_trace.csv", [(NB, 10, 510)])
    # stats next to the traces are ignored: the traces give exact sums
    (out / "node-a" / "4242_kernel_stats.csv").write_text(
        '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
        '"bogus",1,999999,999999.0,100.0,999999,999999,0.00000000e+00\n'
    )
    files = find_rocprof_files(out)
    assert [p.name for p in files] == ["4242_kernel_trace.csv", "4243_kernel_trace.csv"]
    b = parse_rocprof(out)
    assert _by_name(b) == {NB: (2, 1500), "VkFFT_main": (1, 40)}
    assert b.categories["fft"].total_ms == pytest.approx(0.00004)
    assert len(b.files) == 2


def test_directory_with_only_stats_uses_stats(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "99_kernel_stats.csv").write_text(
        '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
        '"VkFFT_main",6,1.500000e+03,250.000000,60.00,200,300,5.384e-04\n'
        '"__amd_rocclr_copyBuffer",2,1000.000000,500.000000,40.00,400,600,0.00000000e+00\n'
    )
    b = parse_rocprof(tmp_path)
    assert b.source == "rocprofv3 kernel_stats"
    assert _by_name(b) == {"VkFFT_main": (6, 1500), "__amd_rocclr_copyBuffer": (2, 1000)}
    assert b.categories["fft"].percent == pytest.approx(60.0)
    assert b.categories["memory"].percent == pytest.approx(40.0)


def test_legacy_directory_prefers_results_csv_trace(tmp_path: Path) -> None:
    for name in (
        "ENCCS_amd-rocm-development__content_profilers.md__rocprof_v1_results.stats.csv",
        "ENCCS_amd-rocm-development__content_profilers.md__rocprof_v1_results.csv",
        "ENCCS_amd-rocm-development__content_profilers.md__rocprof_v1_results.hip_stats.csv",
    ):
        target = name.split("__rocprof_v1_")[1]
        (tmp_path / target).write_bytes((SAMPLES / name).read_bytes())
    assert [p.name for p in find_rocprof_files(tmp_path)] == ["results.csv"]
    assert _by_name(parse_rocprof(tmp_path)) == {"bodyForce(Body*, float, int)": (3, 78535224)}


def test_csv_without_needed_columns_names_file_and_columns(tmp_path: Path) -> None:
    bad = tmp_path / "odd_kernel_trace.csv"
    bad.write_text('"Kind","Agent_Id","Whatever"\n"KERNEL_DISPATCH",1,2\n')
    with pytest.raises(UserError) as err:
        parse_kernel_csv(bad)
    assert str(bad) in err.value.message
    assert "Kernel_Name, Start_Timestamp, End_Timestamp" in err.value.message
    assert "TotalDurationNs" in err.value.message


def test_api_stats_file_is_rejected_with_a_hint() -> None:
    api = SAMPLES / (
        "ROCm_rocm-systems__projects_rocprofiler-sdk_source_docs_data_hip_api_stats__rocprofiler-sdk-7.0.csv"
    )
    with pytest.raises(UserError) as err:
        parse_kernel_csv(api)
    assert "not kernels" in err.value.message
    assert str(api) in err.value.message


def test_empty_file_and_empty_directory_are_user_errors(tmp_path: Path) -> None:
    empty = tmp_path / "x_kernel_trace.csv"
    empty.write_text("")
    with pytest.raises(UserError, match="is empty"):
        parse_kernel_csv(empty)
    nothing = tmp_path / "db"
    nothing.mkdir()
    with pytest.raises(UserError) as err:
        parse_rocprof(nothing)
    assert "No rocpd database (*.db) or rocprof kernel CSV" in err.value.message
    assert "--output-format rocpd" in err.value.message


def test_float_and_odd_cells_in_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "kernel_trace.csv"
    trace.write_text(
        '"Kernel_Name","Start_Timestamp","End_Timestamp"\n'
        '"VkFFT_main",1.0e+03,1.5e+03\n'  # scientific notation: 500 ns
        '"VkFFT_main",2000,1900\n'  # negative duration: counted as a call of 0 ns
        '"VkFFT_main",n/a,5\n'  # unparsable: skipped
        "\n"  # blank line: skipped
    )
    b = parse_kernel_csv(trace)
    assert _by_name(b) == {"VkFFT_main": (2, 500)}


def test_truncated_names_merge_and_unknowns_are_sorted_unique(tmp_path: Path) -> None:
    trace = tmp_path / "1_kernel_trace.csv"
    _write_trace(
        trace,
        [
            ("nbnxmKernel", 0, 10),
            ("zeta_kernel", 0, 5),
            ("alpha_kernel", 0, 7),
            ("zeta_kernel", 0, 1),
        ],
    )
    b = parse_kernel_csv(trace)
    assert b.unknown == ["alpha_kernel", "zeta_kernel"]
    assert b.categories["other"].calls == 3
    assert b.categories["other"].total_ms == pytest.approx(13e-6)
    assert b.kernels[0].name == "nbnxmKernel"


def test_legacy_trace_without_stats_is_found(tmp_path: Path) -> None:
    src = SAMPLES / "ENCCS_amd-rocm-development__content_profilers.md__rocprof_v1_results.csv"
    (tmp_path / "results.csv").write_bytes(src.read_bytes())
    b = parse_rocprof(tmp_path)
    assert b.source == "rocprof v1 trace"
    assert b.kernels[0].calls == 3
    assert b.kernels[0].total_ms == pytest.approx(78.535224)  # 26316649+26115847+26102728 ns


# --- the fast path (blocks cut with str.split) against the csv module alone ----------------

TRICKY = [
    NB,
    SPREAD,
    "void foo<(Bar)1, true>(int, float const*)",
    'operator""_w(char const*)',  # quotes inside a name: its block goes to the csv module
    'say "hi", twice',
    "multi\nline",  # a quoted newline: the csv module reads on, across a block's end
    "trailing comma,",
    ",leading comma",
    "",
    "VkFFT_main",
]


def _tricky_trace(path: Path, line_end: str, rows: int = 400) -> None:
    """rocprofv3's layout, with awkward names and lines among plain ones."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC, lineterminator=line_end)
        w.writerow(TRACE_HEADER)
        for i in range(rows):
            name = TRICKY[i % len(TRICKY)] if i % 7 == 3 else TRICKY[i % 3]
            agent = "Agent 4" if i % 50 < 40 else "Agent 5"  # a second GPU: quoted texts vary
            start = 1_551_874_061_244_694 + 1000 * i
            end = start + (i * 37) % 900 - (100 if i % 41 == 0 else 0)  # some negative
            w.writerow(["KERNEL_DISPATCH", agent, 1, 1, 7, i, 3, name, i, start, end] + [0] * 11)
            if i % 97 == 5:
                fh.write(line_end)  # a blank line
            if i % 89 == 7:  # unquoted name with commas, as legacy files have: realigned
                fh.write(f"KERNEL_DISPATCH,1,1,1,7,{i},3,a, b,{i},10,25" + ",0" * 11 + line_end)
            line = f'"KERNEL_DISPATCH","Agent 4",1,1,7,{i},3,"{NB}",{i},100,{200 + i}'
            if i % 79 == 11:  # a cell too many left of the name: realigned into it
                fh.write(line.replace(",3,", ",3,3,", 1) + ",0" * 11 + line_end)
            if i % 73 == 13:  # text before a line's first quote, a cell short after the name
                fh.write(",9" + line.replace(f",{i},100,", ",100,") + ",0" * 11 + line_end)
            if i % 71 == 17:  # a line end among the cells after the name
                fh.write(line + ",0\n0" + ",0" * 10 + line_end)
            if i % 67 == 19:  # an unquoted cell running into the name's quote
                fh.write(line.replace(',3,"', ',3,x"', 1) + ",0" * 11 + line_end)
            if i % 61 == 23:  # line ends left of the name: between quoted texts, after them
                fh.write(line.replace('H",', 'H"\n', 1) + ",0" * 11 + line_end)
            if i % 59 == 29:
                fh.write(line.replace(",1,1,", ",1\n,1,", 1) + ",0" * 11 + line_end)
            if i % 83 == 9:  # a float, a short line, a cell too many
                fh.write(f'"KERNEL_DISPATCH","Agent 4",1,1,7,{i},3,"{NB}",{i},1.0e+03,1.5e+03')
                fh.write(",0" * 11 + line_end)
                fh.write(f'"KERNEL_DISPATCH","Agent 4",1,1,7,{i},3,"{NB}",{i},1{line_end}')
                fh.write(f'"KERNEL_DISPATCH","Agent 4",1,1,7,{i},3,"{NB}",{i},5,9' + ",0" * 12)
                fh.write(line_end)


def _both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> Breakdown:
    """Parse with the fast path and with the csv module alone; both must agree exactly."""
    fast = files.read_file(path)
    slow = files.read_file(path, fast=False)
    assert fast == slow  # label, calls, totals, and every call's duration in file order
    breakdown = parse_kernel_csv(path)
    with monkeypatch.context() as m:
        m.setattr(combine, "read_file", partial(files.read_file, fast=False))
        assert parse_kernel_csv(path) == breakdown
    return breakdown


def _spy_on_cut(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each block was cut by the fast path (True) or left to the csv module."""
    cut: list[bool] = []
    original = blocks.Shape.cut

    def spy(self: blocks.Shape, block: str, columns: list[int]) -> object:
        got = original(self, block, columns)
        cut.append(got is not None)
        return got

    monkeypatch.setattr(blocks.Shape, "cut", spy)
    return cut


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
@pytest.mark.parametrize("block_chars", [64, 700, 1 << 16])
def test_fast_path_equals_csv_module_on_tricky_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line_end: str, block_chars: int
) -> None:
    trace = tmp_path / "1_kernel_trace.csv"
    _tricky_trace(trace, line_end)
    monkeypatch.setattr(blocks, "BLOCK_CHARS", block_chars)
    cut = _spy_on_cut(monkeypatch)
    b = _both_ways(trace, monkeypatch)
    if block_chars < 1000:  # else one block holds some odd line: all goes to the csv module
        assert any(cut) and not all(cut)  # both ways ran
    names = {k.name for k in b.kernels}
    assert {NB, SPREAD, 'say "hi", twice', "multi\nline", "a, b"} <= names


def test_fast_path_equals_csv_module_on_the_benchmark_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "2_kernel_trace.csv"
    expected_ns = write_trace(trace, rows=5000)
    cut = _spy_on_cut(monkeypatch)
    b = _both_ways(trace, monkeypatch)
    assert cut and all(cut)
    assert round(b.total_ms * 1e6) == expected_ns


KERNEL_CSVS = sorted(
    p
    for p in (Path(__file__).parent / "data").rglob("*.csv")
    if "stats" not in p.name and "counter" not in p.name and p.parent.name == "samples"
)


@pytest.mark.parametrize("path", KERNEL_CSVS, ids=lambda p: p.name[:60])
@pytest.mark.parametrize("block_chars", [64, 1 << 16])
def test_fast_path_equals_csv_module_on_real_samples(
    path: Path, block_chars: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocks, "BLOCK_CHARS", block_chars)
    cut = _spy_on_cut(monkeypatch)
    _both_ways(path, monkeypatch)
    if block_chars == 64:  # (one block of a whole file may end with a blank line)
        # rocprofv3's layouts take the fast path; legacy rocprof's (Index unquoted) not
        assert any(cut) == ("rocprof_v1" not in path.name)


def test_fast_path_keeps_the_csv_modules_field_limit_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "3_kernel_trace.csv"
    _write_trace(trace, [(NB, 0, 10)] * 50)
    old = csv.field_size_limit(100)  # shorter than NB
    try:
        for fast in (True, False):
            with pytest.raises(UserError, match="not a well-formed CSV"):
                files.read_file(trace, fast=fast)
    finally:
        csv.field_size_limit(old)
