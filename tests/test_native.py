"""The native executor's builds and runs (no container engine): its folders, its refusals,
a failed build leaving nothing, and (`-m native_build`) a real GROMACS built and run on
this host through the same steps as an image's."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.settings import GromacsSource, Settings
from orchestrator.images import native
from orchestrator.images.render import render_script
from orchestrator.runs.native import plan_native
from orchestrator.runs.runner import RunRequest, execute
from orchestrator.store.layout import build_log_path, lockfile_path

FAILING_CMAKE = (
    b'cmake_minimum_required(VERSION 3.16)\nproject(x NONE)\nmessage(FATAL_ERROR "no")\n'
)


def _tarball(path: Path, files: dict[str, bytes]) -> str:
    """A source tarball with one top folder (as GROMACS's), and its sha256."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"gromacs-x/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _settings(tmp_path: Path, **more: object) -> Settings:
    return Settings(platform="cpu", executor="native", native_root=tmp_path / "builds",
                    results_dir=tmp_path / "results", **more)  # type: ignore[arg-type]  # fmt: skip


def test_a_name_outside_the_root_is_no_build(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / native.RECORD_FILE).write_text("{}")
    for name in ("../outside", "/etc", ".work-x", "", "gromacs:../outside"):
        assert native.find(settings, name) is None, name


def test_dev_current_is_replaced_in_one_step(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    settings.native_root.mkdir()
    native.point_dev_current(settings, "dev-a")
    native.point_dev_current(settings, "dev-b")
    link = settings.native_root / native.DEV_CURRENT
    assert os.readlink(link) == "dev-b"
    assert [p.name for p in settings.native_root.iterdir()] == [native.DEV_CURRENT]


def test_an_unwritable_root_is_said_before_anything(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    settings = _settings(tmp_path).model_copy(update={"native_root": blocker / "builds"})
    with pytest.raises(UsageError, match="ORCH_NATIVE_ROOT"):
        native.build_native(settings, "stable")


def test_dev_builds_and_remote_sources_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--flags"):
        native.build_native(_settings(tmp_path), "dev")
    remote = GromacsSource(
        url="https://ftp.gromacs.org/gromacs-2026.3.tar.gz", ref="2026.3", sha256="0" * 64
    )
    with pytest.raises(UsageError, match="ORCH_GROMACS__URL to its absolute path"):
        native.build_native(_settings(tmp_path, gromacs=remote), "stable")


def test_the_native_script_is_the_images_steps_in_its_own_folders(tmp_path: Path) -> None:
    """One partial for both: the native script runs the image's commands, with the work
    folder, the kept folder and the tarball of this host."""
    context = {"source_date_epoch": 1, "build_name": "stable-x", "prefix": "/p/stable-x",
               "cmake_flags": ["-G Ninja", "-DX=1"], "launchers": [], "work": "/w",
               "kept": "/p/stable-x/gmxbench", "tarball": "/t.tar.gz", "ccache": "/c"}  # fmt: skip
    script = render_script(native.TEMPLATE, context)
    assert "tar -C /w/src --strip-components=1 -xzf /t.tar.gz" in script
    assert "cmake -S /w/src -B /w/tree" in script and "ninja -C /w/tree" in script
    assert "tee /p/stable-x/gmxbench/compile-cache.txt" in script
    assert "rm -rf /w/tree /w/src" in script and "/opt/gmxbench" not in script


def test_a_failed_build_leaves_nothing_and_says_its_log(tmp_path: Path) -> None:
    """A real configure that fails (a CMake project whose CMakeLists.txt stops): the
    error ends with the log's last lines; no prefix, work folder, record or lockfile."""
    sha = _tarball(tmp_path / "src.tar.gz", {"CMakeLists.txt": FAILING_CMAKE})
    source = GromacsSource(url=str(tmp_path / "src.tar.gz"), ref="x", sha256=sha)
    settings = _settings(tmp_path, gromacs=source)
    with pytest.raises(UserError) as err:
        native.build_native(settings, "stable")
    assert "The native GROMACS build failed (exit 1)" in err.value.message
    assert 'message(FATAL_ERROR "no")' in err.value.message or "no" in err.value.message
    left = sorted(p.name for p in settings.native_root.iterdir())
    assert left == [], left
    logs = list((settings.results_dir / "logs").iterdir())
    assert len(logs) == 1 and logs[0] == build_log_path(settings.results_dir, logs[0].name
                                                          .removesuffix(".build.log")
                                                          .replace("__", ":"))  # fmt: skip
    assert not lockfile_path(settings.results_dir, "gromacs:stable-cpu-gcc12").exists()


def test_a_changed_tarball_is_refused_before_the_build(tmp_path: Path) -> None:
    _tarball(tmp_path / "src.tar.gz", {"CMakeLists.txt": FAILING_CMAKE})
    source = GromacsSource(url=str(tmp_path / "src.tar.gz"), ref="x", sha256="0" * 64)
    with pytest.raises(UserError, match="has sha256"):
        native.build_native(_settings(tmp_path, gromacs=source), "stable")
    assert not (tmp_path / "builds" / "stable-cpu-gcc12").exists()


@pytest.mark.native_build
def test_a_real_gromacs_builds_and_runs_natively(tmp_path: Path) -> None:
    """GROMACS 2026.3 from shared/gromacs, built on this host's compiler into the native
    root (10-40 minutes on 2 cores) and run once from its prefix: its record says native."""
    tarball = Path(__file__).resolve().parents[2] / "shared/gromacs/gromacs-2026.3.tar.gz"
    if not tarball.is_file():
        pytest.fail(f"{tarball} is missing: the native build needs GROMACS's tarball")
    sha = hashlib.sha256(tarball.read_bytes()).hexdigest()
    root = Path(os.environ.get("GMXBENCH_NATIVE_ROOT", str(tmp_path / "builds")))
    settings = _settings(tmp_path, gromacs=GromacsSource(url=str(tarball), ref="2026.3",
                                                         sha256=sha))  # fmt: skip
    settings = settings.model_copy(update={"native_root": root, "jobs": 2})
    record = native.build_native(settings, "stable")
    assert record.native_prefix == str(root / (record.build or ""))
    assert (root / (record.build or "") / native.RECORD_FILE).is_file()
    again = native.build_native(settings, "stable")  # the same inputs: reused
    assert again.id == record.id
    plan = plan_native(settings, RunRequest(build=record.build or "", system="water",
                                            steps=200, tag="native"))  # fmt: skip
    result = execute(None, settings, plan, launch=__import__(
        "orchestrator.runs.native", fromlist=["launch_native"]).launch_native)  # fmt: skip
    assert result.finished and result.native and (result.ns_per_day or 0) > 0, result.failure


def test_builds_and_runs_on_the_host_never_see_the_tools_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The webhook's and database's URLs live in ORCH_* variables: a native build's script
    and a native run's mdrun get the host's environment without them, as a container
    gets only what its run names."""
    monkeypatch.setenv("ORCH_WEBHOOK_URL", "https://hooks.example/PLANTEDTOKEN123")
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda")
    env = native.host_environment()
    assert "ORCH_WEBHOOK_URL" not in env and env["CUDA_HOME"] == "/usr/local/cuda"
    build = native.NativeBuild(tmp_path, native.ImageRecord(tag="gromacs:x", id="", build="x"))
    assert not any("PLANTEDTOKEN123" in v for v in build.environment().values())
    code, out = native.host_run(build, ["sh", "-c", "env"])
    assert code == 0 and "PLANTEDTOKEN123" not in out and f"{tmp_path}/bin" in out
