"""Stable, toolchain and dev images built for real on the CPU platform."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import build_ours

from orchestrator import engine as engine_mod
from orchestrator.images.catalog import list_images, records_json
from orchestrator.images.gromacs import DEV_CURRENT, build_gromacs
from orchestrator.images.provenance import load_lockfile
from orchestrator.store.layout import lockfile_path

pytestmark = [pytest.mark.engine, pytest.mark.slow]

#: DEV_ON_REQUEST: the tests of the CPU dev image compile GROMACS from scratch with the
#: mini-llvm clang (~10 min on 2 cores), one more full compile than CI's one per path, so
#: they run on request (`-m full_compile`). CI builds its dev image on the ROCm platform
#: from the compile cache (`tests/test_rocm_loop.py`).

REPO = Path(__file__).resolve().parent.parent
JSON_KEYS = [
    "tag",
    "id",
    "platform",
    "build",
    "base_image",
    "base_digest",
    "gromacs_source",
    "gromacs_commit",
    "compiler",
    "compiler_version",
    "llvm_commit",
    "cmake_flags",
    "gpu_arch",
    "simd",
    "created",
]


def _json_record(engine: Any, tag: str) -> dict[str, Any]:
    rows = json.loads(records_json(list_images(engine)))
    return next(r for r in rows if r["tag"] == tag)


def test_stable_record_is_complete(engine: Any, stable_image: Any) -> None:
    row = _json_record(engine, stable_image.tag)
    assert set(row) == set(JSON_KEYS)
    not_applicable = {"llvm_commit", "gpu_arch"}  # stable has no LLVM commit; CPU has no GPU
    for key in set(JSON_KEYS) - not_applicable:
        assert row[key], f"{key} is empty in {row}"
    assert row["tag"].startswith("gromacs:stable-cpu-gcc")
    assert row["platform"] == "cpu"
    assert row["simd"] == "AVX2_256"
    assert row["gromacs_commit"].startswith("sha256:")
    assert "-DGMX_SIMD=AVX2_256" in row["cmake_flags"]
    assert row["compiler_version"].startswith(("c++", "g++"))


def test_stable_rebuild_is_fast_and_identical(
    engine: Any, cpu_settings: Any, stable_image: Any
) -> None:
    started = time.monotonic()
    again = build_gromacs(engine, cpu_settings, "stable")
    elapsed = time.monotonic() - started
    assert again.id == stable_image.id
    assert elapsed < 10, f"no-change rebuild took {elapsed:.1f} s"


def test_stable_gmx_version_matches_request(engine: Any, stable_image: Any) -> None:
    code, out = engine_mod.run_capture(engine, stable_image.tag, ["gmx", "--version"])
    assert code == 0
    assert "SIMD instructions:  AVX2_256" in out
    assert "OpenMP support:     enabled" in out
    assert "Precision:          mixed" in out


@pytest.mark.full_compile  # the CPU dev image: see DEV_ON_REQUEST
def test_dev_built_with_toolchain_clang(
    engine: Any, dev_image: Any, toolchain_image: str, mini_llvm: Any
) -> None:
    """The dev image's C++ compiler is the LLVM toolchain's clang++, named by its commit."""
    from mini_llvm import version_line

    commit = mini_llvm.head()
    code, out = engine_mod.run_capture(engine, dev_image.tag, ["gmx", "--version"])
    assert code == 0
    cxx_line = next(line for line in out.splitlines() if line.startswith("C++ compiler:"))
    assert f"/opt/llvm-{commit[:8]}/bin/clang" in cxx_line and "Clang 16" in cxx_line
    row = _json_record(engine, dev_image.tag)
    assert row["compiler"] == f"/opt/llvm-{commit[:8]}/bin/clang"  # clang++ resolved
    assert row["compiler_version"] == version_line(commit, str(mini_llvm.path))
    assert row["llvm_commit"] == commit[:8]
    assert re.fullmatch(rf"gromacs:dev-llvm-{commit[:8]}-\d{{8}}-\d{{4}}", row["tag"])
    current = engine.images.get("gromacs:dev-current")
    assert current.id == dev_image.id


@pytest.mark.full_compile  # the CPU dev image: see DEV_ON_REQUEST
def test_stable_and_dev_flags_differ_only_in_compiler(stable_image: Any, dev_image: Any) -> None:
    def strip(flags: list[str]) -> set[str]:
        return {f for f in flags if "COMPILER" not in f and "INSTALL_PREFIX" not in f}

    assert strip(stable_image.cmake_flags) == strip(dev_image.cmake_flags)
    assert stable_image.gromacs_commit == dev_image.gromacs_commit


def test_lockfile_written(cpu_settings: Any, stable_image: Any) -> None:
    lock = load_lockfile(lockfile_path(cpu_settings.results_dir, stable_image.tag))
    assert lock.record.id == stable_image.id
    assert lock.template == "gromacs-stable-cpu"
    assert lock.packages.get("cmake")
    assert len(lock.context["source"]["sha256"]) == 64


def test_images_cli_json(engine: Any, stable_image: Any) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "images", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    tags = [row["tag"] for row in json.loads(proc.stdout)]
    assert stable_image.tag in tags


def test_reused_image_brings_its_lockfile(engine: Any, stable_image: Any, tmp_path: Path) -> None:
    """A results dir that never saw the build still gets the lockfile, from the image."""
    from orchestrator.core.settings import load_settings

    settings = load_settings(platform="cpu", results_dir=tmp_path)
    record = build_gromacs(engine, settings, "stable")
    lock = load_lockfile(lockfile_path(tmp_path, record.tag))
    assert lock.record.id == stable_image.id == record.id
    assert lock.template == "gromacs-stable-cpu"


#: Other content at the compiler's path, same mtime: the same compiler behind a wrapper,
#: which stops the build after some GROMACS units so the test need not compile them all.
SWAPPED_COMPILER = """#!/bin/bash
# ccache runs the compiler with its own argument order: count GROMACS compiles (-c on a
# source under /src/gromacs/src, not CMake's checks nor ccache's -E preprocessing)
case " $* " in *" -c "*) case "$*" in */src/gromacs/src/*)
  n=$(( $(cat /tmp/swapped-count 2>/dev/null || echo 0) + 1 )); echo "$n" > /tmp/swapped-count
  if [ "$n" -gt {limit} ]; then
    echo "swapped compiler ran $((n - 1)) compiles, stopping here" >&2; exit 97
  fi;;
esac;; esac
exec -a "$0" "$(dirname "$0")/clang.real" "$@"
"""
SWAP = """FROM {toolchain}
COPY swapped /tmp/swapped
RUN mv {clang} {clang}.real && cp /tmp/swapped {clang} && chmod 755 {clang} \\
 && touch -r {clang}.real {clang} && rm /tmp/swapped
"""
SWAP_LIMIT = 40


def _swapped_compiler() -> str:
    """The wrapper, made unique to this test run: a wrapper of the same bytes from an earlier
    run on this engine is the same compiler, whose objects the cache rightly holds."""
    return SWAPPED_COMPILER.replace("{limit}", str(SWAP_LIMIT)) + f"# run {uuid.uuid4()}\n"


@pytest.mark.full_compile  # the CPU dev image: see DEV_ON_REQUEST
def test_changed_compiler_at_same_path_is_never_reused(
    engine: Any, toolchain_image: str, dev_image: Any, tmp_path: Path
) -> None:
    """Other compiler content at the same path and mtime takes nothing from the cache.

    The compile cache (ccache, compiler_check=content) holds every object the original
    compiler made for the dev image; a compiler with other content at the same path and
    mtime must compile every unit itself, as ccache's own counters show: no hit among
    the units the swapped compiler ran before it stopped the build on purpose.
    """
    from orchestrator.core.errors import UserError
    from orchestrator.core.settings import load_settings
    from orchestrator.images.toolchain import compiler_of
    from orchestrator.platforms.base import CompileCacheStats

    settings = load_settings(platform="cpu", results_dir=tmp_path)
    clang = compiler_of(engine, toolchain_image).cc
    swapped_id = engine_mod.build(
        engine, SWAP.format(toolchain=toolchain_image, clang=clang), what="swapped toolchain",
        files={"swapped": _swapped_compiler().encode()},
    )  # fmt: skip
    swapped = "gmxbench-scratch/toolchain-swapped:llvm"
    engine.images.get(swapped_id).tag(*swapped.split(":"))
    before = {image.id for image in engine.images.list(name="gromacs")}
    lines: list[str] = []
    try:
        with pytest.raises(UserError, match=r"Building .* failed"):
            build_gromacs(
                engine, settings, "dev", toolchain_tag=swapped, emit=lambda e: lines.append(e.text)
            )
    finally:
        engine.images.remove(swapped, force=True)
    assert any(f"swapped compiler ran {SWAP_LIMIT} compiles" in line for line in lines)
    assert not any(line.startswith("up to date") for line in lines)
    stats = CompileCacheStats.parse("\n".join(re.sub(r"^#\d+ [\d.]+ ", "", x) for x in lines))
    assert stats is not None and stats.hits == 0 and stats.misses >= SWAP_LIMIT - 2, stats
    assert {image.id for image in engine.images.list(name="gromacs")} == before
    assert not list(settings.results_dir.glob("images/*.lock.json"))


@pytest.mark.full_compile  # the CPU dev image: see DEV_ON_REQUEST
def test_unchanged_compiler_content_takes_everything_from_the_cache(
    engine: Any, cpu_settings: Any, toolchain_image: str, dev_image: Any
) -> None:
    """A toolchain image whose compiler is byte-for-byte the same (only a label changed)
    is a new image, so a new dev image is built; every object comes from the cache,
    but for the units that embed the image's own install prefix (GROMACS' buildinfo.h)."""
    original = load_lockfile(lockfile_path(cpu_settings.results_dir, dev_image.tag))
    assert original.compile_cache is not None
    compiled = original.compile_cache.hits + original.compile_cache.misses
    stats = _relabelled_build(engine, cpu_settings, toolchain_image, dev_image, "first")
    if stats.hits == 0:
        # dev_image was reused from an engine whose cache no longer holds its objects
        # (pruned since): the first relabelled build put them back, the second must hit.
        stats = _relabelled_build(engine, cpu_settings, toolchain_image, dev_image, "second")
    assert stats.hits + stats.misses == compiled
    assert stats.misses <= PREFIX_UNITS, stats  # the units that embed the install prefix
    assert stats.hits >= compiled - PREFIX_UNITS


def _relabelled_build(
    engine: Any, cpu_settings: Any, toolchain_image: str, dev_image: Any, label: str
) -> Any:
    """Build a dev image with a relabelled copy of `toolchain_image`; its cache counters."""
    relabelled = f"gmxbench-scratch/toolchain-relabelled:{label}"
    image_id = engine_mod.build(
        engine, f"FROM {toolchain_image}\nLABEL gmxbench.test={label}\n", what=relabelled
    )
    engine.images.get(image_id).tag(*relabelled.split(":"))
    try:
        record = build_gromacs(engine, cpu_settings, "dev", toolchain_tag=relabelled)
    finally:
        engine.images.remove(relabelled, force=True)
        engine_mod.tag(engine, dev_image.id, DEV_CURRENT)  # other tests' dev-current
    assert record.id != dev_image.id and record.compiler == dev_image.compiler
    stats = load_lockfile(lockfile_path(cpu_settings.results_dir, record.tag)).compile_cache
    assert stats is not None and not stats.disabled
    return stats


#: GROMACS 2022 units that include buildinfo.h (the install prefix, hence the build name).
PREFIX_UNITS = 6


def test_images_built_from_ours_never_stand_in_for_them(
    engine: Any, stable_image: Any, tmp_path: Path
) -> None:
    """A newer tagged child inherits every label of its parent, inputs key included;
    lookups and listings must still find the parent itself, not the child."""
    from orchestrator.core.errors import UserError
    from orchestrator.core.settings import load_settings
    from orchestrator.images.toolchain_package import ensure_toolchain_package
    from orchestrator.workflows import share

    settings = load_settings(platform="cpu", results_dir=tmp_path)
    package = build_ours(engine, ensure_toolchain_package, settings, "clang-16")  # by inputs
    original = engine.images.get(package).id
    children = {
        "gmxbench-scratch/child:toolchain": f"FROM {package}\nRUN touch /child\n",
        "gmxbench-scratch/child:gromacs": f"FROM {stable_image.tag}\nRUN touch /child\n",
    }
    try:
        for tag, dockerfile in children.items():
            child = engine_mod.build(engine, dockerfile, what=tag)
            engine.images.get(child).tag(*tag.split(":"))
        engine.images.get(package).tag("gmxbench-scratch/untagged", "x")
        engine.images.remove(package)  # its tag is put back on the parent, not the child
        assert engine.images.get(ensure_toolchain_package(engine, settings, "clang-16")).id == (
            original
        )
        engine.images.remove("gmxbench-scratch/untagged:x")
        assert build_gromacs(engine, settings, "stable").id == stable_image.id
        listed = {r.tag for r in list_images(engine, ("gromacs", "toolchain"))}
        assert not listed & set(children) and stable_image.tag in listed
        with pytest.raises(UserError, match="only inherited its labels"):
            share.save(engine, settings, "gmxbench-scratch/child:gromacs", tmp_path)
    finally:
        for tag in children:
            engine.images.remove(tag, force=True)
