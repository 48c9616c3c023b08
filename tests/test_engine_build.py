"""Builds against the real engine: failures name the step, tag nothing, leave no container."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import engine as engine_mod
from orchestrator.core.errors import UserError
from orchestrator.platforms.cpu import CpuBuild

DEFAULT_CPU_BASE = CpuBuild.default_base

pytestmark = pytest.mark.engine


def _containers(client: Any) -> set[str]:
    return {c.id for c in client.containers.list(all=True)}


def test_failing_step_is_named_with_log_tail(engine: Any) -> None:
    from orchestrator.core.settings import load_settings
    from orchestrator.images.base import ensure_base

    ensure_base(engine, load_settings(platform="cpu"))
    before = _containers(engine)
    dockerfile = (
        f"FROM {DEFAULT_CPU_BASE}\n"
        "RUN echo preparing the thing\n"
        "RUN echo about to fail && echo the-last-words && exit 3\n"
    )
    lines: list[str] = []
    with pytest.raises(UserError) as err:
        engine_mod.build(
            engine, dockerfile, what="gmxbench-test:fail", emit=lambda e: lines.append(e.text)
        )
    message = err.value.message
    assert "Building gmxbench-test:fail failed at Step 3/3 : RUN echo about to fail" in message
    assert "returned a non-zero code: 3" in message
    assert "the-last-words" in message
    assert "Nothing was tagged" in message
    assert any("preparing the thing" in line for line in lines)
    assert _containers(engine) == before
    assert not engine.images.list(name="gmxbench-test")


def test_parse_error_is_a_user_error(engine: Any) -> None:
    with pytest.raises(UserError, match="unknown instruction"):
        engine_mod.build(engine, "FROM scratch\nFOOBAR baz\n", what="gmxbench-test:parse")


def test_build_returns_id_and_labels(engine: Any) -> None:
    dockerfile = f"FROM {DEFAULT_CPU_BASE}\nRUN echo ok > /ok\n"
    image_id = engine_mod.build(engine, dockerfile, what="probe", labels={"gmxbench.test": "yes"})
    image = engine.images.get(image_id)
    assert image.labels["gmxbench.test"] == "yes"
    code, out = engine_mod.run_capture(engine, image_id, ["cat", "/ok"])
    assert (code, out.strip()) == (0, "ok")
    engine.images.remove(image_id)


# The post-build check, through a real dev build -----------------------------------------
# A GROMACS "source" of two files: CMake (no compiler) installs a `gmx` whose `--version`
# says everything the build asked for but its SIMD. The real template, build, probe and
# check run on it in seconds, with no GROMACS compile.

FAKE_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(fake-gromacs LANGUAGES NONE)
find_program(CXX_PATH ${CMAKE_CXX_COMPILER} REQUIRED)
configure_file(gmx.in gmx @ONLY)
install(PROGRAMS ${CMAKE_BINARY_DIR}/gmx DESTINATION bin)
"""
FAKE_GMX = """#!/bin/sh
cat <<'END'
GROMACS version:    2022.5
Precision:          mixed
OpenMP support:     enabled (GMX_OPENMP_MAX_THREADS = 128)
GPU support:        disabled
SIMD instructions:  {simd}
C++ compiler:       @CXX_PATH@ Clang 16.0.6
END
"""
WRONG_SIMD = "SSE2"


def _fake_gromacs(path: Any, simd: str) -> str:
    """A deterministic tarball (same bytes every run: cached layers are reused); its sha256."""
    import gzip
    import hashlib
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, text in (("CMakeLists.txt", FAKE_CMAKE), ("gmx.in", FAKE_GMX.format(simd=simd))):
            info = tarfile.TarInfo(f"fake-gromacs/{name}")
            data = text.encode()
            info.size, info.mode, info.mtime = len(data), 0o644, 1704067200
            tar.addfile(info, io.BytesIO(data))
    packed = gzip.compress(raw.getvalue(), mtime=0)
    path.write_bytes(packed)
    return hashlib.sha256(packed).hexdigest()


def test_wrong_gmx_version_fails_the_build_and_tags_nothing(engine: Any, tmp_path: Any) -> None:
    """A finished build whose `gmx --version` is not what was asked (SIMD) is refused:
    one clear error naming the difference, its image removed, no tag, no lockfile."""
    from orchestrator.core.events import BuildEnded
    from orchestrator.core.settings import GromacsSource, load_settings
    from orchestrator.images.gromacs import DEV_CURRENT, build_gromacs
    from orchestrator.images.toolchain_package import ensure_toolchain_package

    settings = load_settings(platform="cpu", results_dir=tmp_path / "results")
    assert settings.simd != WRONG_SIMD
    toolchain = ensure_toolchain_package(engine, settings, "clang-16")  # cached: seconds
    tarball = tmp_path / "fake-gromacs.tar.gz"
    sha = _fake_gromacs(tarball, WRONG_SIMD)
    settings = settings.model_copy(
        update={"gromacs": GromacsSource(url=str(tarball), ref="fake", sha256=sha)}
    )
    gromacs_tags = {tag for image in engine.images.list(name="gromacs") for tag in image.tags}
    current = engine_mod.image(engine, DEV_CURRENT)
    before = _containers(engine)
    built: list[str] = []

    def seen(event: Any) -> None:
        if isinstance(event, BuildEnded) and event.ok:
            built.append(event.text.split(" as ", 1)[1].split()[0].removeprefix("sha256:"))

    with pytest.raises(UserError) as err:
        record = build_gromacs(engine, settings, "dev", toolchain_tag=toolchain, emit=seen)
        if current is not None:  # the check let it through: undo, then fail
            engine_mod.tag(engine, current.id, DEV_CURRENT)
        engine.images.remove(record.id, force=True)
    assert err.value.message == (
        "The dev GROMACS build finished but is not what was asked: SIMD instructions is "
        f"'{WRONG_SIMD}', asked for {settings.simd}. Nothing was tagged."
    )
    assert len(built) == 1, "the image was built, then refused"
    assert engine_mod.image(engine, built[0]) is None, "the refused image was removed"
    after = {tag for image in engine.images.list(name="gromacs") for tag in image.tags}
    assert not {tag for tag in after - gromacs_tags if "clang" in tag}
    now = engine_mod.image(engine, DEV_CURRENT)
    assert (now.id if now else None) == (current.id if current else None)
    assert not list(settings.results_dir.glob("images/*.lock.json"))
    assert _containers(engine) <= before
