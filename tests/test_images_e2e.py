"""Stable, toolchain and dev images built for real on the CPU platform."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core import engine as engine_mod
from orchestrator.images.catalog import list_images, records_json
from orchestrator.images.gromacs import build_gromacs
from orchestrator.images.provenance import load_lockfile, lockfile_path

pytestmark = [pytest.mark.engine, pytest.mark.slow]

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


def test_dev_built_with_toolchain_clang(engine: Any, dev_image: Any, toolchain_image: str) -> None:
    code, out = engine_mod.run_capture(engine, dev_image.tag, ["gmx", "--version"])
    assert code == 0
    cxx_line = next(line for line in out.splitlines() if line.startswith("C++ compiler:"))
    assert "clang" in cxx_line.lower() and "16" in cxx_line
    row = _json_record(engine, dev_image.tag)
    assert "clang" in row["compiler"] and "clang version 16" in row["compiler_version"]
    assert row["tag"].startswith("gromacs:dev-clang16-")
    current = engine.images.get("gromacs:dev-current")
    assert current.id == dev_image.id


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


SWAP_COMPILER = r"""FROM {toolchain}
RUN real="$(readlink -f /usr/bin/clang++-16)" \
 && touch -r "$real" /tmp/mtime \
 && printf '#!/bin/sh\necho "swapped compiler ran: $*" >&2\nexit 97\n' > "$real" \
 && touch -r /tmp/mtime "$real" && rm /tmp/mtime
"""


def test_changed_compiler_at_same_path_is_never_reused(
    engine: Any, toolchain_image: str, dev_image: Any, tmp_path: Path
) -> None:
    """Other compiler content at the same path and mtime compiles GROMACS again.

    No GROMACS object, layer or image of the old compiler may be reused: images are
    keyed by the toolchain image's content id and the build tree lives and dies inside
    one RUN step. The swapped compiler refuses to run, so the build must fail in it.
    """
    from orchestrator.core.errors import UserError
    from orchestrator.core.settings import load_settings

    settings = load_settings(platform="cpu", results_dir=tmp_path)
    swapped_id = engine_mod.build(
        engine, SWAP_COMPILER.format(toolchain=toolchain_image), what="swapped toolchain"
    )
    swapped = "gmxbench-scratch/toolchain-swapped:clang-16"
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
    assert any("swapped compiler ran" in line for line in lines), lines[-20:]
    assert not any(line.startswith("up to date") for line in lines)
    assert {image.id for image in engine.images.list(name="gromacs")} == before
    assert not list(settings.results_dir.glob("images/*.lock.json"))


def test_images_built_from_ours_never_stand_in_for_them(
    engine: Any, toolchain_image: str, stable_image: Any, tmp_path: Path
) -> None:
    """A newer tagged child inherits every label of its parent, inputs key included;
    lookups and listings must still find the parent itself, not the child."""
    from orchestrator.core.errors import UserError
    from orchestrator.core.settings import load_settings
    from orchestrator.images.toolchain_package import ensure_toolchain_package
    from orchestrator.workflows import share

    settings = load_settings(platform="cpu", results_dir=tmp_path)
    original = engine.images.get(toolchain_image).id
    children = {
        "gmxbench-scratch/child:toolchain": f"FROM {toolchain_image}\nRUN touch /child\n",
        "gmxbench-scratch/child:gromacs": f"FROM {stable_image.tag}\nRUN touch /child\n",
    }
    try:
        for tag, dockerfile in children.items():
            child = engine_mod.build(engine, dockerfile, what=tag)
            engine.images.get(child).tag(*tag.split(":"))
        assert engine.images.get(ensure_toolchain_package(engine, settings, "clang-16")).id == (
            original
        )
        assert engine.images.get(toolchain_image).id == original
        assert build_gromacs(engine, settings, "stable").id == stable_image.id
        listed = {r.tag for r in list_images(engine, ("gromacs", "toolchain"))}
        assert not listed & set(children) and stable_image.tag in listed
        with pytest.raises(UserError, match="only inherited its labels"):
            share.save(engine, settings, "gmxbench-scratch/child:gromacs", tmp_path)
    finally:
        for tag in children:
            engine.images.remove(tag, force=True)
