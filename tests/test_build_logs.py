"""The whole-build-log check on a real cold GROMACS build log, whatever the engine holds.

`tests/data/build_logs/` keeps the log that the README's first command wrote on an empty
engine (README there says where and when). A warm engine builds nothing, so the check in
`test_first_command.py` only meets a log on a cold one; here it meets one every time.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from build_logs import gromacs_log_problems

DATA = Path(__file__).parent / "data" / "build_logs"
COLD_CPU = DATA / "gromacs__stable-cpu-gcc12.cold.build.log.gz"


def _read(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode().splitlines()


def _cold() -> list[str]:
    return _read(COLD_CPU)


@pytest.mark.parametrize(
    ("name", "last"),
    [
        ("gromacs__stable-cpu-gcc12.cold.build.log.gz", "[1118/1119] Install the project..."),
        ("gromacs__stable-rocm-debian-clang21.cold.build.log.gz",
         "[1209/1210] Install the project..."),
    ],
)  # fmt: skip
def test_a_real_cold_log_is_whole(name: str, last: str) -> None:
    """ninja says the install edge as [N-1/N] and never prints step N: the log is whole
    (GROMACS 2022.5 with gcc, and 2026.3 with HIP)."""
    lines = _read(DATA / name)
    assert gromacs_log_problems("\n".join(lines)) == []
    ninja = [line for line in lines if "] Install the project..." in line or "] Building" in line]
    assert ninja[-1].endswith(last), ninja[-1]  # what the check knows


def test_a_real_build_stopped_during_configure_is_not_whole() -> None:
    lines = _read(DATA / "gromacs__dev-cpu-sigterm.stopped.build.log.gz")
    assert lines[-1].endswith("-- Performing Test CXX17_COMPILES")
    assert gromacs_log_problems("\n".join(lines)) == ["no ninja step ([n/N]) in the log"]


def _drop(lines: list[str], needle: str) -> list[str]:
    return [line for line in lines if needle not in line]


@pytest.mark.parametrize(
    ("cut", "said"),
    [
        # stopped during the compile: the log ends before the install
        (lambda ls: ls[: next(i for i, x in enumerate(ls) if "[800/1119]" in x) + 1],
         "not [1118/1119] 'Install the project...'"),
        # the install edge ran, but CMake's install script did not install gmx
        (lambda ls: [x for x in ls if "-- Installing" not in x and "-- Up-to-date" not in x],
         "did not install bin/gmx"),
        # lines cut out of the middle (a log written by two processes, or truncated)
        (lambda ls: _drop(ls, "[500/1119]"), "1 of ninja's 1118 edges before the install"),
        # BuildKit's step failed after ninja (the cache copy, the code-object scan)
        (lambda ls: [x.replace(" DONE ", " ERROR ") if x.startswith("#9 DONE") else x for x in ls],
         "did not end DONE"),
        # no ninja at all (configure failed)
        (lambda ls: [x for x in ls if "/1119] " not in x], "no ninja step"),
    ],
)  # fmt: skip
def test_a_log_cut_short_is_not_whole(cut: object, said: str) -> None:
    lines = cut(_cold())  # type: ignore[operator]
    problems = gromacs_log_problems("\n".join(lines))
    assert any(said in p for p in problems), problems


def test_a_compile_buildkit_had_cached_is_whole_and_clipped_output_is_not() -> None:
    """An engine that lost the image but kept BuildKit's cache runs no compile: its log has
    the step's `CACHED` and no ninja line, and is whole; a step whose output reached
    BuildKit's limit is not, whatever its last lines say."""
    lines = _cold()
    first = next(i for i, x in enumerate(lines) if x.startswith("#9 sha256:"))
    cached = [*lines[: first + 1], "#9 CACHED", *[x for x in lines if x.startswith("#10 ")]]
    assert gromacs_log_problems("\n".join(cached)) == []
    assert gromacs_log_problems("\n".join(x for x in cached if x != "#9 CACHED")) == [
        "no ninja step ([n/N]) in the log"
    ]
    clipped = [*lines[:600], "#9 12.5 [output clipped, log limit 1MiB reached]", *lines[600:]]
    assert "BuildKit clipped" in gromacs_log_problems("\n".join(clipped))[0]


def test_a_second_short_ninja_run_is_judged_on_its_own() -> None:
    """A log with an earlier, failed ninja run (a retried build) is judged by its last run."""
    lines = _cold()
    first = [line.replace("/1119] ", "/1200] ") for line in lines if "/1119] " in line][:50]
    assert gromacs_log_problems("\n".join(first + lines)) == []
    assert gromacs_log_problems("\n".join(lines + first)) != []
