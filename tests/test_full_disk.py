"""A full disk, for real: small tmpfs filesystems mounted here (root, as on CI), under the
results folder, the inputs cache and the engine's data root.

Running out of space anywhere must end in one paragraph naming what did not fit, where,
and the fix; a run record that says why (`no space left on device: <path>`) or none; no
temporary file and no container left behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SecondEngine
from test_inputs import make_zip, zip_system

from orchestrator import engine as eng
from orchestrator.core.errors import NoSpace
from orchestrator.core.files import write_atomic
from orchestrator.engine import BuildFailed
from orchestrator.runs.inputs import fetch_inputs
from orchestrator.store.layout import RESULT_FILE
from orchestrator.store.records import RunResult
from orchestrator.store.runstore import RunStore

REPO = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() == "true"

Mount = Callable[[Path, str], Path]


@pytest.fixture
def tmpfs() -> Iterator[Mount]:
    """Mount a tmpfs of a given size at a folder (made if missing); unmounted afterwards.

    Needs root (CI's machine is root, as this one): without it the test skips, and fails
    under CI=true, where the full-disk guarantees must be checked.
    """
    mounted: list[Path] = []

    def mount(where: Path, size: str) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            why = f"cannot mount a {size} tmpfs at {where} (needs root): {done.stderr.strip()}"
            if IN_CI:
                pytest.fail(why + "; the full-disk tests must run in CI")
            pytest.skip(why)
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> None:
    """Take every free byte of `folder`'s filesystem (a file that grows until ENOSPC)."""
    with (folder / "filler").open("wb", buffering=0) as out:
        for block in (65536, 4096, 512, 1):
            try:
                while True:
                    out.write(b"\0" * block)
            except OSError:
                continue


def leftovers(root: Path) -> list[str]:
    """Temporary files an interrupted write would leave (atomic writes use dot-names)."""
    return [str(p) for p in root.rglob(".*") if p.name.endswith((".tmp", ".part"))]


# Files and records, no engine --------------------------------------------------------


def test_an_atomic_write_that_does_not_fit_keeps_the_old_file(tmp_path: Path, tmpfs: Mount) -> None:
    disk = tmpfs(tmp_path / "disk", "64k")
    target = write_atomic(disk / "report.json", "old and whole\n")
    fill(disk)
    with pytest.raises(NoSpace) as caught:
        write_atomic(disk / "report.json", "x" * 20000, what="the report")
    message = caught.value.message
    assert message.startswith(
        f"No space left on device: the report could not be written to {target}"
    )
    assert f"mounted at {disk}" in message and "ORCH_RESULTS_DIR" in message
    assert target.read_text() == "old and whole\n"
    assert leftovers(disk) == []


def record(run_dir: Path, **fields: Any) -> RunResult:
    """A run's record as the runner writes it, from a real one's fixture fields."""
    from test_faults import record as faults_record

    return faults_record(run_dir.name, **fields)


def test_a_last_record_that_does_not_fit_is_failed_in_the_room_of_the_first(
    tmp_path: Path, tmpfs: Mount
) -> None:
    disk = tmpfs(tmp_path / "results", "64k")
    run_dir = RunStore(disk).create("b__water-3k-pme__t")
    RunStore.save(run_dir, record(run_dir))
    fill(disk)
    finished = record(run_dir, finished=True, ns_per_day=42.0, facts={"note": "n" * 300})
    with pytest.raises(NoSpace) as caught:
        RunStore.save_last(run_dir, finished)
    kept = run_dir / RESULT_FILE
    assert caught.value.message.endswith(f"The run is recorded as failed in {kept}.")
    result = RunStore.load(run_dir)
    assert not result.finished and result.ns_per_day is None
    assert result.failure == f"no space left on device: {kept}"
    assert RunStore(disk).status(run_dir).state == "failed"
    assert leftovers(disk) == []


def test_a_last_record_with_no_room_at_all_takes_its_run_directory(
    tmp_path: Path, tmpfs: Mount
) -> None:
    disk = tmpfs(tmp_path / "results", "64k")
    run_dir = RunStore(disk).create("b__water-3k-pme__t")
    RunStore.save(run_dir, record(run_dir))
    fill(disk)
    bigger = record(run_dir, failure="mdrun exited with code 1", facts={"log": "x" * 40000})
    with pytest.raises(NoSpace) as caught:
        RunStore.save_last(run_dir, bigger)
    assert f"the run directory {run_dir} was removed" in caught.value.message
    assert not run_dir.exists() and RunStore(disk).runs() == []
    assert leftovers(disk) == []


def test_inputs_that_do_not_fit_in_the_cache(tmp_path: Path, tmpfs: Mount) -> None:
    """The download itself, then the unpacking (zeros pack small, unpack large)."""
    cache = tmpfs(tmp_path / "cache", "64k")
    archive = tmp_path / "bench.zip"
    archive.write_bytes(make_zip({"benchTEST.tpr": os.urandom(100_000)}))
    with pytest.raises(NoSpace) as caught:
        fetch_inputs(zip_system(archive.as_uri(), archive.read_bytes()), cache)
    assert "the input bench.zip could not be written to" in caught.value.message
    assert leftovers(cache) == []
    archive.write_bytes(make_zip({"benchTEST.tpr": bytes(100_000)}))
    with pytest.raises(NoSpace) as caught:
        fetch_inputs(zip_system(archive.as_uri(), archive.read_bytes()), cache)
    assert "the unpacked inputs of benchTEST could not be written to" in caught.value.message
    assert leftovers(cache) == [] and not list((cache / "systems").iterdir())


# A real run on a full results folder ----------------------------------------------------


@pytest.mark.engine
@pytest.mark.parametrize(
    ("size", "filled_by"),
    [("16k", "the start record"), ("96k", "the logs"), ("400k", "mdrun")],
    ids=["no-room-for-the-start-record", "no-room-for-the-logs", "mdrun-fills-it"],
)
def test_a_run_on_a_full_results_folder_ends_clearly_and_honestly(
    engine: Any, stable_image: Any, tmp_path: Path, tmpfs: Mount, size: str, filled_by: str
) -> None:
    """The issue's command (water:3k, 500 steps) on a results folder of `size`.

    At 400 kB mdrun's energy minimisation leaves `em.gro` cut short without a word (GROMACS
    does not check its writes) and grompp fails on it (`Invalid line in em.gro`): the run
    is failed for the full disk, after mdrun's exit code, not for a mystery in em.gro.
    """
    results = tmpfs(tmp_path / "results", size)
    env = {**os.environ, "ORCH_PLATFORM": "cpu", "ORCH_RESULTS_DIR": str(results)}
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", stable_image.build, "water:3k", "t",
         "--steps", "500"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    run_dir = results / f"{stable_image.build}__water-3k-pme__t"
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: No space left on device: ")
    assert f"mounted at {results}" in errors[0]
    assert leftovers(results) == []
    containers = engine.containers.list(all=True, filters={"label": f"gmxbench.run={run_dir.name}"})
    assert containers == []
    if filled_by == "the start record":
        assert "No container was started and nothing was recorded." in errors[0]
        assert not run_dir.exists()
        return
    result = RunStore.load(run_dir)
    assert not result.finished and result.ns_per_day is None
    assert errors[0].endswith(f"The run is recorded as failed in {run_dir / RESULT_FILE}.")
    assert RunStore(results).status(run_dir).state == "failed"  # not abandoned, not running
    if filled_by == "the logs":
        assert result.failure == f"no space left on device: {run_dir / 'stdout.log'}"
        assert not (run_dir / "stdout.log").exists()  # not a log cut short
    else:
        assert (
            result.failure
            == f"no space left on device: {run_dir} (after: mdrun exited with code 1)"
        )
        assert "the files the run's container writes could not be written" in errors[0]
        assert "Fatal error" in (run_dir / "stderr.log").read_text()  # its logs fit


# An image build on a full engine data root ----------------------------------------------


@pytest.fixture
def small_engine(engine: Any, tmpfs: Mount) -> Iterator[SecondEngine]:
    """A second Docker Engine whose data root is a 40 MB tmpfs."""
    dockerd, ip = shutil.which("dockerd"), shutil.which("ip")
    if dockerd is None or ip is None:
        message = "a second engine needs dockerd and ip (apt-get install docker.io iproute2)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    second = SecondEngine(dockerd, ip)
    try:
        tmpfs(second.root / "data", "40m")
        second.start()
        yield second
    finally:
        second.stop()
        subprocess.run(["umount", "-l", str(second.root / "data")], check=False)
        second.delete()


@pytest.mark.engine
@pytest.mark.parametrize("buildkit", [False, True], ids=["api", "buildkit"])
def test_a_build_that_fills_the_engine_disk_is_no_space_not_a_failed_build(
    small_engine: SecondEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buildkit: bool
) -> None:
    """A 64 MB file into a 40 MB data root: NoSpace naming the data root (a bisect stops
    on it instead of skipping the commit as one that does not build), nothing tagged,
    no container left, the whole build log kept."""
    monkeypatch.setenv("DOCKER_HOST", small_engine.address)  # BuildKit's CLI
    client = small_engine.client
    log = tmp_path / "build.log"
    with pytest.raises(NoSpace) as caught:
        eng.build(
            client, "FROM scratch\nCOPY big /big\n", what="a test image", buildkit=buildkit,
            files={"big": os.urandom(64 << 20)}, log=log,
        )  # fmt: skip
    assert not isinstance(caught.value, BuildFailed)
    message = caught.value.message
    root = client.info()["DockerRootDir"]
    assert message.startswith("No space left on device: the engine ran out of disk space")
    assert f"its data root {root}" in message and message.endswith("Nothing was tagged.")
    assert "no space left on device" in message.split("(", 1)[1].lower()
    assert [i for i in client.images.list(all=True) if i.tags] == []
    assert client.containers.list(all=True) == []
    assert log.exists()


def test_a_results_database_on_a_full_disk_is_a_caution_with_the_right_fix(
    tmp_path: Path, tmpfs: Mount
) -> None:
    """The run stays recorded in its directory; the SQLite index says why it is not."""
    from orchestrator.core.events import Caution, Event
    from orchestrator.core.settings import load_settings
    from orchestrator.store.database import record_quietly

    results = tmpfs(tmp_path / "results", "64k")
    run_dir = RunStore(results).create("b__water-3k-pme__t")
    RunStore.save(run_dir, record(run_dir, failure="mdrun exited with code 1"))
    fill(results)
    said: list[Event] = []
    record_quietly(load_settings(platform="cpu", results_dir=results), run_dir,
                   RunStore.load(run_dir), said.append)  # fmt: skip
    (caution,) = [e for e in said if isinstance(e, Caution)]
    assert "database or disk is full. Free space on the disk that holds it" in caution.text
    assert "Check that the server answers" not in caution.text


@pytest.mark.engine
def test_share_save_onto_a_full_disk_leaves_no_partial_archive(
    engine: Any, cpu_settings: Any, stable_image: Any, tmp_path: Path, tmpfs: Mount
) -> None:
    """The stable image's archive (about 750 MB) onto an 8 MB filesystem."""
    from orchestrator.workflows import share

    disk = tmpfs(tmp_path / "usb", "8m")
    with pytest.raises(NoSpace) as caught:
        share.save(engine, cpu_settings, stable_image.tag, disk)
    assert caught.value.message.startswith("No space left on device: the image archive")
    assert f"mounted at {disk}" in caught.value.message
    assert list(disk.iterdir()) == []  # no archive, no sidecar, no temporary folder
