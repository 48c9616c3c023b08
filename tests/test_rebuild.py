"""`rebuild`: lockfile lookup, pinned parents, the file comparison, and a real rebuild."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from conftest import cache_files

from orchestrator.core.errors import UserError
from orchestrator.core.settings import load_settings
from orchestrator.images.blocks import example_context
from orchestrator.images.provenance import ImageRecord, Lockfile, save_lockfile
from orchestrator.images.render import render
from orchestrator.store.layout import lockfile_path, rebuild_report_path
from orchestrator.workflows.rebuild import (
    FileDiff,
    RebuildReport,
    diff_files,
    dockerfile_of,
    find_lockfile,
    private_mounts,
    rebuild,
    summary,
)

REPO = Path(__file__).resolve().parent.parent

DOCKERFILE = """FROM gmxbench-builder:cpu-abc AS source
RUN true
FROM gmxbench-toolchain:cpu-clang-16
COPY --from=source /src /src
"""


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _lock(**changes: Any) -> Lockfile:
    lock = Lockfile(
        record=ImageRecord(tag="gromacs:dev-clang16-20260101-0000", id="sha256:" + "1" * 64),
        template="gromacs-dev-cpu",
        context={"prefix": "/opt/gromacs/dev-clang16-20260101-0000"},
        dockerfile_sha256="0" * 64,
        dockerfile=DOCKERFILE,
    )
    return lock.model_copy(update=changes)


def test_diff_files_reports_changed_missing_and_extra() -> None:
    before = {"bin/gmx": "aa", "lib/libgromacs.so.7": "link:libgromacs.so.7.0.0", "x": "1"}
    after = {"bin/gmx": "bb", "lib/libgromacs.so.7": "link:libgromacs.so.7.0.0", "y": "2"}
    assert diff_files(before, after) == [
        FileDiff(path="bin/gmx", original="aa", rebuilt="bb"),
        FileDiff(path="x", original="1", rebuilt=None),
        FileDiff(path="y", original=None, rebuilt="2"),
    ]
    assert diff_files(before, dict(before)) == []


def test_summary_lists_differing_files() -> None:
    report = RebuildReport(
        tag="gromacs:dev-x", lockfile="l", original_id="sha256:1", rebuilt_id="sha256:2",
        rebuilt_tag="gmxbench-rebuild:dev-x", created="t", prefix="/opt/gromacs/dev-x",
        files_compared=3, identical=False,
        differing=[FileDiff(path="bin/gmx", original="a" * 64, rebuilt="b" * 64)],
    )  # fmt: skip
    text = summary(report)
    assert text.startswith("NOT identical: 1 of 3 files")
    assert "bin/gmx" in text and "a" * 12 in text and "b" * 12 in text
    same = report.model_copy(update={"identical": True, "differing": []})
    assert summary(same).startswith("identical: all 3 files under /opt/gromacs/dev-x")


def test_unknown_tag_and_bad_lockfile_are_clear_errors(engine: Any, tmp_path: Path) -> None:
    settings = load_settings(platform="cpu", results_dir=tmp_path)
    with pytest.raises(UserError, match="No lockfile for gromacs:no-such-build"):
        find_lockfile(engine, settings, "no-such-build")
    bad = tmp_path / "bad.lock.json"
    bad.write_text('{"record": 1}')
    with pytest.raises(UserError, match="is damaged or not a lockfile of this tool"):
        find_lockfile(engine, settings, str(bad))
    with pytest.raises(UserError, match="does not exist"):
        find_lockfile(engine, settings, str(tmp_path / "gone.lock.json"))


def test_lockfile_found_in_results_by_tag(engine: Any, tmp_path: Path) -> None:
    settings = load_settings(platform="cpu", results_dir=tmp_path)
    lock = _lock()
    save_lockfile(tmp_path, lock)
    assert find_lockfile(engine, settings, "dev-clang16-20260101-0000") == lock
    path = lockfile_path(tmp_path, lock.record.tag)
    assert find_lockfile(engine, settings, str(path)) == lock


def test_parents_are_pinned_to_their_recorded_ids(engine: Any, toolchain_image: str) -> None:
    toolchain_id = engine.images.get(toolchain_image).id
    lock = _lock(
        dockerfile=DOCKERFILE.replace("gmxbench-toolchain:cpu-clang-16", toolchain_image),
        parents={toolchain_image: toolchain_id},
    )
    text = dockerfile_of(lock, engine)
    # BuildKit reads `FROM sha256:…` as a registry name: the id is named by a pinned tag
    assert f"FROM gmxbench-pinned:{toolchain_id.removeprefix('sha256:')[:12]}\n" in text
    assert toolchain_image not in text


def test_missing_parent_names_it_and_the_fix(engine: Any) -> None:
    gone = "sha256:" + "f" * 64
    lock = _lock(parents={"gmxbench-builder:cpu-abc": gone})
    with pytest.raises(UserError, match=r"parent image gmxbench-builder:cpu-abc.*share -- load"):
        dockerfile_of(lock, engine)


def test_changed_template_without_stored_dockerfile_is_refused(engine: Any) -> None:
    """Old lockfiles (no Dockerfile text) rebuild only while the template renders the same."""
    context = example_context("gromacs-dev-cpu", load_settings(platform="cpu"))
    text = render("gromacs-dev-cpu", context)
    same = _lock(dockerfile=None, context=context, dockerfile_sha256=sha256(text))
    assert dockerfile_of(same, engine) == text
    for changed in (
        same.model_copy(update={"dockerfile_sha256": "0" * 64}),
        same.model_copy(update={"context": {"prefix": "/opt/x"}}),
    ):
        with pytest.raises(UserError, match="template gromacs-dev-cpu has changed"):
            dockerfile_of(changed, engine)


#: A stand-in for a GROMACS build stage (seconds instead of a compile): it writes into its
#: compile cache when the cache is on, and installs a `gmx` that reports a version.
STAND_IN = """FROM {parent}
ARG GMXBENCH_NO_COMPILE_CACHE=
RUN --mount=type=cache,id={mount},target=/ccache \\
    mkdir -p /opt/gromacs/{build}/bin \\
 && if [ -z "$GMXBENCH_NO_COMPILE_CACHE" ]; then echo object > /ccache/object; fi \\
 && printf '#!/bin/sh\\necho "GROMACS version:    stand-in"\\n' > /opt/gromacs/{build}/bin/gmx \\
 && chmod 755 /opt/gromacs/{build}/bin/gmx
ENV PATH=/opt/gromacs/{build}/bin:$PATH
"""


def _stand_in(
    engine: Any, template: str, parent: str, name: str, results: Path, **fields: str
) -> tuple[str, Any, list[str]]:
    """A stand-in build stage built and tagged like a dev image, its lockfile saved in
    `results`: the tag, the settings that find it, and the image ids to remove."""
    from orchestrator import engine as engine_mod

    build = f"dev-{name}-{uuid.uuid4().hex[:8]}"
    tag = f"gromacs:{build}"
    dockerfile = template.format(parent=parent, build=build, **fields)
    original = engine_mod.build(engine, dockerfile, what=tag, buildkit=True)
    engine_mod.tag(engine, original, tag)
    lock = _lock(
        record=ImageRecord(tag=tag, id=original, build=build),
        context={
            "prefix": f"/opt/gromacs/{build}",
            "source": {"scheme": "deb-src", "url": "deb-src:gromacs", "ref": "x"},
        },
        dockerfile=dockerfile,
        parents={parent: engine.images.get(parent).id},
        gmx_version_info={"GROMACS version": "stand-in"},
    )
    save_lockfile(results, lock)
    return tag, load_settings(platform="cpu", results_dir=results), [original]


def test_rebuild_runs_the_compile_stage_again_and_keeps_the_compile_cache(
    engine: Any, toolchain_image: str, tmp_path: Path
) -> None:
    """What `rebuild` asks of BuildKit, on a stand-in build stage: the stage runs again (a
    new layer, twice over), with the compile cache off, and the cache mount keeps what
    earlier builds put there (`--no-cache` would have swapped it for an empty one)."""
    from orchestrator.store.layout import lockfile_path

    mount = f"gmxbench-test-{uuid.uuid4().hex}"
    tag, settings, made = _stand_in(engine, STAND_IN, toolchain_image, "standin", tmp_path,
                                    mount=mount)  # fmt: skip
    try:
        first = rebuild(engine, settings, str(lockfile_path(tmp_path, tag)))
        made.append(first.rebuilt_id)
        second = rebuild(engine, settings, str(lockfile_path(tmp_path, tag)))
        made.append(second.rebuilt_id)
        assert first.identical and second.identical and first.files_compared == 1
        assert len(set(made)) == 3  # the stage ran each time: no layer was reused
        assert cache_files(engine, toolchain_image, mount) == ["/ccache/object"]
    finally:
        for image_id in made:
            with contextlib.suppress(docker.errors.ImageNotFound):
                engine.images.remove(image_id, force=True)


def test_cache_mounts_get_an_id_of_their_own() -> None:
    text = (
        "RUN --mount=type=cache,id=gmxbench-ccache-x,target=/ccache make\n"
        "RUN --mount=target=/c,type=cache --mount=type=bind,source=a,target=/a true\n"
    )
    out = private_mounts(text, "mine")
    assert out == (
        "RUN --mount=type=cache,target=/ccache,id=mine make\n"
        "RUN --mount=target=/c,type=cache,id=mine --mount=type=bind,source=a,target=/a true\n"
    )
    for unreadable in (
        "--mount=type=$T,id=x,target=/c",
        '--mount="type=cache,id=x',
        "--mount=ID=x",
    ):
        with pytest.raises(UserError, match="rebuild cannot check"):
            private_mounts(f"RUN {unreadable} true\n", "mine")


#: An archive's Dockerfile that writes into its cache mount only when rebuilt.
PLANTING = """FROM {parent}
ARG GMXBENCH_NO_COMPILE_CACHE=
RUN --mount=type=cache,id={mount},target=/ccache \\
    mkdir -p /opt/gromacs/{build}/bin \\
 && if [ -n "$GMXBENCH_NO_COMPILE_CACHE" ]; then echo planted > /ccache/planted; fi \\
 && printf '#!/bin/sh\\necho "GROMACS version:    stand-in"\\n' > /opt/gromacs/{build}/bin/gmx \\
 && chmod 755 /opt/gromacs/{build}/bin/gmx
ENV PATH=/opt/gromacs/{build}/bin:$PATH
"""


def test_rebuild_never_mounts_the_shared_compile_cache(
    engine: Any, cpu_settings: Any, tmp_path: Path
) -> None:
    """A lockfile from someone's archive names the shared cache's id and writes into it
    when rebuilt: the rebuild's mount is another, so the shared cache stays empty."""
    from orchestrator.images.base import ensure_base
    from orchestrator.platforms import active

    ensure_base(engine, cpu_settings)
    parent = active(cpu_settings).build.base_image(cpu_settings)
    mount = f"gmxbench-test-{uuid.uuid4().hex}"
    tag, settings, made = _stand_in(engine, PLANTING, parent, "planting", tmp_path, mount=mount)
    try:
        made.append(rebuild(engine, settings, str(lockfile_path(tmp_path, tag))).rebuilt_id)
        assert cache_files(engine, parent, mount) == []
    finally:
        for image_id in made:
            with contextlib.suppress(docker.errors.ImageNotFound):
                engine.images.remove(image_id, force=True)


@pytest.mark.full_compile
@pytest.mark.slow
def test_rebuild_of_dev_image_is_identical(engine: Any, dev_image: Any, cpu_settings: Any) -> None:
    """The issue's acceptance: rebuilding the dev image reports identical binaries."""
    env = {
        **os.environ,
        "ORCH_PLATFORM": "cpu",
        "ORCH_RESULTS_DIR": str(cpu_settings.results_dir),
    }
    cache_before = _compile_cache_entries(engine, dev_image, cpu_settings)
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "rebuild", dev_image.tag],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.startswith("identical: all ")
    report = RebuildReport.model_validate(
        json.loads(rebuild_report_path(cpu_settings.results_dir, dev_image.tag).read_text())
    )
    assert report.identical is True and report.original_id == dev_image.id
    assert report.files_compared > 100 and report.version_mismatches == {}
    assert engine.images.get(report.rebuilt_tag).id == report.rebuilt_id != dev_image.id
    # the rebuild bypassed the compile cache and left it as it was for later builds
    assert _compile_cache_entries(engine, dev_image, cpu_settings) == cache_before > 0


def _compile_cache_entries(engine: Any, image: Any, settings: Any) -> int:
    """Files in the image's compile cache (its BuildKit cache mount)."""
    from orchestrator.images.provenance import load_lockfile

    mount = load_lockfile(lockfile_path(settings.results_dir, image.tag)).context["compile_cache"]
    return len(cache_files(engine, image.tag, mount))


#: A stand-in build stage that installs three files; `{stamp}` makes the third one
#: unreproducible (a new random value each time the stage runs), or fixes it.
THREE_FILES = """FROM {parent}
ARG GMXBENCH_NO_COMPILE_CACHE=
RUN mkdir -p /opt/gromacs/{build}/bin /opt/gromacs/{build}/share/gromacs \\
 && printf '#!/bin/sh\\necho "GROMACS version:    stand-in"\\n' > /opt/gromacs/{build}/bin/gmx \\
 && chmod 755 /opt/gromacs/{build}/bin/gmx \\
 && echo top-level-data > /opt/gromacs/{build}/share/gromacs/top.dat \\
 && {stamp} > /opt/gromacs/{build}/share/gromacs/buildstamp
ENV PATH=/opt/gromacs/{build}/bin:$PATH
"""
RANDOM_STAMP = "head -c 16 /dev/urandom | od -An -tx1"
FIXED_STAMP = "echo 2024-01-01"


def _stand_in_rebuild(engine: Any, parent: str, tmp_path: Path, stamp: str) -> Any:
    """Build the stand-in, tag it as a GROMACS build with its lockfile, rebuild it; the report,
    and the sha256 of each installed file in the original and the rebuild, read by
    `sha256sum` in each image (not by `rebuild`'s own listing)."""
    tag, settings, made = _stand_in(engine, THREE_FILES, parent, "standin", tmp_path,
                                    stamp=stamp)  # fmt: skip
    original, prefix = made[0], f"/opt/gromacs/{tag.removeprefix('gromacs:')}"
    report = None
    try:
        report = rebuild(engine, settings, str(lockfile_path(tmp_path, tag)))
        digests = [_sha256sums(engine, image, prefix) for image in (original, report.rebuilt_id)]
    finally:
        for image_id in (original, report.rebuilt_id if report else None):
            if image_id:
                with contextlib.suppress(docker.errors.ImageNotFound):
                    engine.images.remove(image_id, force=True)
    return report, digests


def _sha256sums(engine: Any, image: str, prefix: str) -> dict[str, str]:
    from orchestrator import engine as engine_mod

    script = f"cd {prefix} && for f in bin/gmx share/gromacs/*; do sha256sum $f; done"
    code, out = engine_mod.run_capture(engine, image, ["sh", "-c", script])
    assert code == 0, out
    return {name: digest for digest, name in (line.split() for line in out.splitlines())}


def test_rebuild_names_exactly_the_file_that_differs(engine: Any, tmp_path: Path) -> None:
    """A real rebuild whose one unreproducible file (a random build stamp) differs is
    NOT identical, and names exactly that file with both digests; the same stage with a
    fixed stamp rebuilds identical, all three files compared."""
    from orchestrator.images.toolchain_package import ensure_toolchain_package

    parent = ensure_toolchain_package(engine, load_settings(platform="cpu"), "clang-16")  # cached
    report, (before, after) = _stand_in_rebuild(engine, parent, tmp_path, RANDOM_STAMP)
    stamp = "share/gromacs/buildstamp"
    assert before[stamp] != after[stamp]
    assert {k: v for k, v in before.items() if k != stamp} == {
        k: v for k, v in after.items() if k != stamp
    }
    assert report.identical is False and report.files_compared == 3
    assert report.differing == [FileDiff(path=stamp, original=before[stamp], rebuilt=after[stamp])]
    text = summary(report)
    assert text.startswith("NOT identical: 1 of 3 files") and stamp in text
    saved = RebuildReport.model_validate_json(rebuild_report_path(tmp_path, report.tag).read_text())
    assert saved == report

    same, (before, after) = _stand_in_rebuild(engine, parent, tmp_path, FIXED_STAMP)
    assert before == after and len(before) == 3
    assert same.identical is True and same.differing == [] and same.files_compared == 3
    assert summary(same).startswith("identical: all 3 files")
