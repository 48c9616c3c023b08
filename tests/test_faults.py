"""Faults without an engine: signals, abandoned records, damaged records.

The engine halves (SIGTERM mid-run and mid-build, SIGKILL, an engine restart) are in
`test_faults_engine.py`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core import interrupts
from orchestrator.core.errors import UsageError
from orchestrator.core.files import DamagedRecord
from orchestrator.images.provenance import (
    ImageRecord,
    Lockfile,
    load_lockfile,
    parse_lockfile,
)
from orchestrator.parsers.breakdown import Breakdown
from orchestrator.runs.hostinfo import HostInfo
from orchestrator.runs.liveness import STALE_SECONDS, Owner, heartbeat, heartbeat_age
from orchestrator.store.layout import HEARTBEAT_FILE
from orchestrator.store.records import ImageRef, RunResult
from orchestrator.store.runstore import RunStore

REPO = Path(__file__).resolve().parent.parent


# Signals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sig", "code", "reason"),
    [
        (signal.SIGINT, 130, "interrupted (Ctrl-C)"),
        (signal.SIGTERM, 143, "terminated (SIGTERM)"),
        (signal.SIGHUP, 129, "hung up (SIGHUP)"),
    ],
)
def test_each_signal_becomes_interrupted(sig: int, code: int, reason: str) -> None:
    with pytest.raises(interrupts.Interrupted) as caught, interrupts.handled():
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler raises before this ends
    assert (caught.value.exit_code, caught.value.reason) == (code, reason)
    assert isinstance(caught.value, KeyboardInterrupt)  # Ctrl-C's cleanup runs for all


def test_deferred_block_finishes_before_the_signal_acts() -> None:
    done = []
    with pytest.raises(interrupts.Interrupted) as caught, interrupts.handled():
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            done.append("tagged")
            os.kill(os.getpid(), signal.SIGTERM)  # a second one changes nothing
            done.append("lockfile written")
        done.append("after")  # never reached: the held signal acts at the block's end
    assert done == ["tagged", "lockfile written"]
    assert caught.value.signum == signal.SIGTERM


def test_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with interrupts.handled():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


# Liveness ------------------------------------------------------------------------------


def test_owner_alive_dead_and_elsewhere() -> None:
    me = Owner.current()
    assert me.alive() is True
    child = subprocess.Popen(["sleep", "30"])
    theirs = Owner(**{**me.model_dump(), "pid": child.pid, "started": None})
    assert theirs.alive() is True
    child.kill()
    child.wait()
    assert theirs.alive() is False
    assert me.model_copy(update={"started": (me.started or 0) + 1}).alive() is False  # reused
    assert me.model_copy(update={"boot_id": "another-boot"}).alive() is False
    assert me.model_copy(update={"host": socket.gethostname() + "-x"}).alive() is None


def test_heartbeat_touches_while_the_block_runs(tmp_path: Path) -> None:
    beat = tmp_path / HEARTBEAT_FILE
    assert heartbeat_age(beat) is None
    with heartbeat(beat, every=0.05):
        time.sleep(0.2)
        first = beat.stat().st_mtime
        time.sleep(0.2)
        assert beat.stat().st_mtime > first
    assert (heartbeat_age(beat) or 0) < 5


# Abandoned records ---------------------------------------------------------------------


def record(run_id: str, **fields: Any) -> RunResult:
    values: dict[str, Any] = {
        "run_id": run_id, "build": "b", "system": "water:6k:pme", "tag": "t",
        "platform": "cpu", "timestamp": "2026-11-23T10:00:00+00:00",
        "image": ImageRef(tag="gromacs:b", id="sha256:0"), "command": ["gmx", "mdrun"],
        "host": HostInfo(hostname="h", kernel="k"),
    }  # fmt: skip
    return RunResult(**{**values, **fields})


def save(root: Path, result: RunResult) -> Path:
    path = root / result.run_id
    path.mkdir(parents=True)
    RunStore.save(path, result)
    return path


def dead_owner() -> Owner:
    child = subprocess.Popen(["true"])
    child.wait()
    return Owner(**{**Owner.current().model_dump(), "pid": child.pid, "started": None})


def test_states_finished_failed_running_abandoned(tmp_path: Path) -> None:
    runs = RunStore(tmp_path)
    done = save(tmp_path, record("b__w__done", finished=True, ns_per_day=10.0))
    failed = save(tmp_path, record("b__w__failed", failure="mdrun exited with code 139"))
    running = save(tmp_path, record("b__w__running", owner=Owner.current()))
    dead = save(tmp_path, record("b__w__dead", owner=dead_owner()))
    far = save(tmp_path, record("b__w__far", owner=Owner(host="elsewhere", pid=1)))
    (far / HEARTBEAT_FILE).touch()
    stale = save(tmp_path, record("b__w__stale", owner=Owner(host="elsewhere", pid=1)))
    (stale / HEARTBEAT_FILE).touch()
    old = time.time() - STALE_SECONDS - 5
    os.utime(stale / HEARTBEAT_FILE, (old, old))
    states = {p.name.split("__")[-1]: runs.status(p) for p in runs.runs()}
    assert {k: s.state for k, s in states.items()} == {
        "done": "finished", "failed": "failed", "running": "running", "dead": "abandoned",
        "far": "running", "stale": "abandoned",
    }  # fmt: skip
    assert "ended without recording an end" in states["dead"].why
    assert "no sign of life for" in states["stale"].why
    assert (done, failed, running) == (runs.path("b__w__done"), failed, running)
    assert dead.exists()


def test_compare_refuses_an_abandoned_run_and_names_the_way_out(tmp_path: Path) -> None:
    save(tmp_path, record("b__w__dead", owner=dead_owner()))
    with pytest.raises(UsageError) as err:
        RunStore(tmp_path).finished("b__w__dead")
    assert "b__w__dead is abandoned" in err.value.message
    assert "runs clean" in err.value.message


def test_a_group_lists_what_it_left_out(tmp_path: Path) -> None:
    save(tmp_path, record("b__w__g-r1", finished=True, ns_per_day=10.0))
    save(tmp_path, record("b__w__g-r2", owner=dead_owner()))
    damaged = save(tmp_path, record("b__w__g-r3", finished=True, ns_per_day=11.0))
    (damaged / "result.json").write_text('{"run_id": "b__w__g-r3", "fini')
    said: list[Any] = []
    runs = RunStore(tmp_path).finished("b__w__g", said.append)
    assert [r.path.name for r in runs] == ["b__w__g-r1"]
    texts = [e.text for e in said]
    assert any(t.startswith("left out b__w__g-r2: abandoned") for t in texts)
    assert any(t.startswith("left out b__w__g-r3: unreadable") for t in texts)


# Damaged records -----------------------------------------------------------------------


def lockfile() -> Lockfile:
    return Lockfile(
        record=ImageRecord(tag="gromacs:stable-cpu-gcc12", id="sha256:1"),
        template="gromacs-stable-cpu.Dockerfile.j2",
        context={},
        dockerfile_sha256="0" * 64,
    )


def good_text(kind: str) -> str:
    if kind == "result":
        return record("b__w__t", finished=True, ns_per_day=1.0).model_dump_json(indent=2)
    if kind == "breakdown":
        empty = Breakdown(source="md.log", categories={}, kernels=[], unknown=[])
        return empty.model_dump_json(indent=2)
    return lockfile().model_dump_json(indent=2)


def damaged_variants(text: str) -> dict[str, str]:
    data = json.loads(text)
    first = next(iter(data))
    return {
        "truncated": text[: len(text) // 2],
        "schema-invalid": json.dumps({**data, first: {"not": "this"}}),
        "empty": "",
    }


READERS = {
    "result": ("result.json", lambda p: RunStore.load(p.parent)),
    "breakdown": ("kernel_result.json", lambda p: RunStore.breakdown(p.parent)),
    "lockfile": ("x.lock.json", load_lockfile),
}


@pytest.mark.parametrize("kind", sorted(READERS))
@pytest.mark.parametrize("damage", ["truncated", "schema-invalid", "empty"])
def test_every_reader_names_a_damaged_file_and_the_fix(
    tmp_path: Path, kind: str, damage: str
) -> None:
    name, read = READERS[kind]
    path = tmp_path / "b__w__t" / name
    path.parent.mkdir()
    path.write_text(good_text(kind))
    read(path)  # the undamaged file reads
    path.write_text(damaged_variants(good_text(kind))[damage])
    with pytest.raises(DamagedRecord) as err:
        read(path)
    message = err.value.message
    assert str(path) in message and "\n" not in message
    assert ("ends mid-way" in message) == (damage in ("truncated", "empty"))
    assert any(fix in message for fix in ("Restore it", "Delete it", "run b__w__t again"))


def test_missing_record_is_named(tmp_path: Path) -> None:
    with pytest.raises(DamagedRecord, match=r"result.json \(a run record\) is missing"):
        RunStore.load(tmp_path)


def test_damaged_lockfile_label_and_image_labels() -> None:
    raw = lockfile().model_dump_json()
    with pytest.raises(DamagedRecord, match="the label of x is damaged or not a lockfile"):
        parse_lockfile(raw[:40], "the label of x", "sha256:1")
    with pytest.raises(DamagedRecord, match=r"gromacs:x .* are damaged: Expecting value"):
        ImageRecord.from_labels("gromacs:x", "sha256:2", {"gmxbench.cmake_flags": "[-DX"})
    with pytest.raises(DamagedRecord, match="kind: Input should be"):
        ImageRecord.from_labels("gromacs:x", "sha256:2", {"gmxbench.kind": "pizza"})


def test_cli_compare_and_list_on_a_damaged_record(tmp_path: Path) -> None:
    good = save(tmp_path, record("b__w__good", finished=True, ns_per_day=10.0))
    bad = save(tmp_path, record("b__w__bad", finished=True, ns_per_day=10.0))
    (bad / "result.json").write_text((bad / "result.json").read_text()[:100])
    env = {**os.environ, "ORCH_RESULTS_DIR": str(tmp_path), "ORCH_PLATFORM": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "compare", str(bad), str(good)],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{bad / 'result.json'} (a run record) is damaged: it ends mid-way" in proc.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "orchestrator", "runs", "list"],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rows = {line.split()[0]: line.split()[1] for line in listed.splitlines()[2:]}
    assert rows == {"b__w__bad": "unreadable", "b__w__good": "finished"}
