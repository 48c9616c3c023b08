"""rocprof-sys output directories: the samples its documentation prints, read as real files.

Fixtures (tests/data/rocprof_sys/README.md): the ``metadata.json`` samples of the
rocprofiler-systems docs @ 1e5f7f6 (2024) and rocm-systems develop @ 52a132a (2025), verbatim
(both are invalid JSON as printed) and with only their syntax repaired; the flat
``wall_clock.json`` sample (``"prefix": "|0>>> main"``); the text ``wall_clock.txt`` example.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.core.errors import UserError
from orchestrator.parsers.rocprof_sys import (
    SystemTrace,
    find_output_dir,
    parse_output,
    parse_wall_clock_json,
    perfetto_hint,
)
from orchestrator.platforms.base import ProfileOutcome
from orchestrator.store.layout import SYSTRACE_FILE
from orchestrator.store.runstore import RunStore

DATA = Path(__file__).parent / "data" / "rocprof_sys"
OLD = DATA / "doc-1e5f7f6"
NEW = DATA / "doc-develop-52a132a"
TEXT = DATA / "text-example"


@pytest.fixture(scope="module")
def old() -> SystemTrace:
    return parse_output(OLD / "output")


def test_flat_wall_clock(old: SystemTrace) -> None:
    names = [(f.name, f.depth, f.thread) for f in old.functions]
    # sorted by total: ompt_thread_initial 0.8965 s outlasts main 0.8947 s (other threads)
    assert names == [
        ("ompt_thread_initial", 1, 0),
        ("ompt_implicit_task", 2, 0),
        ("main", 0, 0),
        ("read_input", 1, 0),
        ("setcoeff", 1, 0),
    ]
    main = next(f for f in old.functions if f.name == "main")
    assert (main.count, main.total_s, main.mean_s) == (1, 0.894743517, 0.894743517)
    assert main.stddev_s == 0.0 and main.source == "wall_clock.json"
    assert old.wall_clock_s == 0.894743517  # the depth-0 region
    read_input = next(f for f in old.functions if f.name == "read_input")
    assert read_input.total_s == pytest.approx(9.808e-06)
    assert read_input.self_s == pytest.approx(9.808e-06)  # a leaf: all self
    # main's children continue past the sample's "..." placeholder: self time unknown
    assert main.self_s is None


def test_metadata_of_the_2024_docs(old: SystemTrace) -> None:
    assert old.tool_version is None  # that sample has no ROCPROFSYS_VERSION
    assert old.timemory_version == "3.3.0rc4"
    assert old.launched == "05/08/22 02:04"
    assert old.settings == {"ROCPROFSYS_JSON_OUTPUT": True}
    assert old.metadata_files == ["metadata.json"]
    listed = {(f.kind, f.key, Path(f.path).name): f.relative for f in old.listed_files}
    assert listed[("json", "wall_clock", "wall_clock.json")] == "wall_clock.json"
    assert listed[("text", "roctracer", "roctracer.txt")] is None  # not in the fixture
    assert any("5 file(s) listed in metadata are not in" in n for n in old.notes)
    assert old.wall_clock_files == ["wall_clock.json"]


def test_metadata_of_the_develop_docs_with_its_files(tmp_path: Path) -> None:
    """The files metadata lists by absolute path are found by name in the output dir."""
    out = tmp_path / "rocprof-sys-output"
    out.mkdir()
    shutil.copy(NEW / "output" / "metadata.json", out)
    shutil.copy(OLD / "output" / "wall_clock.json", out)
    (out / "perfetto-trace.proto").write_bytes(b"")
    trace = parse_output(out)
    assert trace.output_dir == str(out)
    assert trace.files == ["metadata.json", "perfetto-trace.proto", "wall_clock.json"]
    assert (trace.tool_version, trace.rocm_version) == ("1.0.0", "6.3.1")
    assert trace.timemory_version == "4.0.0rc0"
    assert trace.command_line[-4:] == ["--", "10", "12", "1000"]
    assert trace.settings["ROCPROFSYS_OUTPUT_PREFIX"] == "parallel-overhead-binary-rewrite/"
    kinds = {(f.kind, f.key): f.relative for f in trace.listed_files}
    assert kinds == {
        ("json", "wall_clock"): "wall_clock.json",
        ("protobuf", "perfetto"): "perfetto-trace.proto",
        ("text", "wall_clock"): None,
    }
    assert trace.perfetto_traces == ["perfetto-trace.proto"]
    assert trace.functions[0].name == "ompt_thread_initial"


def test_both_spellings_and_pid_suffixes(tmp_path: Path) -> None:
    """``wall-clock-<pid>.json`` (the docs' other spelling) in a time-stamped sub-folder."""
    sub = tmp_path / "rocprof-sys-example-output" / "2022-01-31_12.30_PM"
    sub.mkdir(parents=True)
    shutil.copy(OLD / "output" / "wall_clock.json", sub / "wall-clock-63453.json")
    shutil.copy(OLD / "output" / "wall_clock.json", sub / "wall_clock.tree.json")
    (sub / "perfetto-trace-63453.proto").write_bytes(b"")
    (sub / "63453_results.db").write_bytes(b"")
    assert find_output_dir(tmp_path) == sub
    trace = parse_output(tmp_path)  # paths relative to the directory given
    stamp = "rocprof-sys-example-output/2022-01-31_12.30_PM/"
    assert trace.wall_clock_files == [stamp + "wall-clock-63453.json"]  # .tree.json: not flat
    assert trace.perfetto_traces == [stamp + "perfetto-trace-63453.proto"]
    assert trace.rocpd_databases == [stamp + "63453_results.db"]
    assert len(trace.functions) == 5 and trace.metadata_files == []


def test_text_table_when_no_json() -> None:
    trace = parse_output(TEXT)
    assert trace.wall_clock_files == ["wall_clock.txt"]
    assert len(trace.functions) == 173  # rows of the docs' table
    main = trace.functions[0]
    assert (main.name, main.thread, main.depth, main.total_s) == ("main", 0, 0, 13.360265)
    assert main.self_s == pytest.approx(13.360265 * 0.182)  # % SELF 18.2
    assert trace.wall_clock_s == 13.360265
    loops = [f for f in trace.functions if f.name == "ompt_work_loop" and f.count == 7904]
    assert {(f.thread, f.total_s) for f in loops} >= {(0, 7.420265), (1, 7.410337)}
    worker = next(f for f in trace.functions if f.name == "ompt_thread_worker")
    assert (worker.thread, worker.depth) == (1, 4)
    assert any(f.name == "ompt_parallel [parallelism=12]" for f in trace.functions)


def test_round_trip_through_the_run_directory(tmp_path: Path, old: SystemTrace) -> None:
    RunStore.save_profile(tmp_path, ProfileOutcome(mode="systrace", status="ok", trace=old))
    assert RunStore.system_trace(tmp_path) == old
    (tmp_path / SYSTRACE_FILE).write_text('{"functions": 3')
    with pytest.raises(UserError, match="rocprof-sys summary"):
        RunStore.system_trace(tmp_path)


def test_perfetto_hint(tmp_path: Path, old: SystemTrace) -> None:
    hint = perfetto_hint("rocprof-sys/perfetto-trace.proto")
    assert "https://ui.perfetto.dev" in hint
    assert "'trace_processor rocprof-sys/perfetto-trace.proto'" in hint
    assert "v46" in hint
    assert "wrote no Perfetto trace" in perfetto_hint(old)  # the docs' sample has none
    (tmp_path / "perfetto-trace.proto").write_bytes(b"")
    shutil.copy(OLD / "output" / "wall_clock.json", tmp_path)
    hint = perfetto_hint(parse_output(tmp_path))
    assert f"'trace_processor {tmp_path / 'perfetto-trace.proto'}'" in hint


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "where"),
    [(OLD / "verbatim", "line 68, column 16"), (NEW / "verbatim", "line 111, column 13")],
)
def test_doc_samples_as_printed_are_not_json(folder: Path, where: str) -> None:
    with pytest.raises(UserError, match="not valid JSON") as err:
        parse_output(folder)
    assert str(folder / "metadata.json") in err.value.message and where in err.value.message


def test_truncated_wall_clock(tmp_path: Path) -> None:
    text = (OLD / "output" / "wall_clock.json").read_text()
    (tmp_path / "wall_clock.json").write_text(text[: len(text) // 2])
    with pytest.raises(UserError, match="ends mid-way") as err:
        parse_output(tmp_path)
    assert "wall_clock.json" in err.value.message


def test_json_of_another_shape(tmp_path: Path) -> None:
    (tmp_path / "wall_clock.json").write_text('{"timemory": {"cpu_clock": {}}}')
    with pytest.raises(UserError, match=r"no \['timemory'\]\['wall_clock'\]\['ranks'\]"):
        parse_wall_clock_json(tmp_path / "wall_clock.json")
    (tmp_path / "wall_clock.json").unlink()
    (tmp_path / "metadata.json").write_text('{"something": {}}')
    with pytest.raises(UserError, match="not rocprof-sys metadata") as err:
        parse_output(tmp_path)
    assert "metadata.json" in err.value.message


def test_empty_or_missing(tmp_path: Path) -> None:
    (tmp_path / "metadata.json").write_text("")
    with pytest.raises(UserError, match="is empty"):
        parse_output(tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        parse_output(tmp_path / "absent")
    (tmp_path / "metadata.json").unlink()
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(UserError, match="No rocprof-sys output") as err:
        parse_output(tmp_path)
    assert str(tmp_path) in err.value.message
    assert find_output_dir(tmp_path) is None
