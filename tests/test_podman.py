"""Podman as the engine: its Docker-compatible API, driven by the same engine module.

A Podman service of our own (`tests/podman.py`: isolated store, its own socket) gets the
images from the Docker engine the way a user would move them (`engine.save`/`load`, and
`share save`/`share load` for a GROMACS image); then, with DOCKER_HOST at Podman's socket,
the orchestrator builds a microbenchmark image there and runs a benchmark in it.
"""

from __future__ import annotations

import contextlib
import grp
import io
import os
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from podman import PodmanService, podman_service

from orchestrator import engine as engine_mod
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.settings import load_settings
from orchestrator.images import catalog, microbench
from orchestrator.images.provenance import LAYERS_LABEL
from orchestrator.platforms.cpu import CpuBuild, CpuPlatform
from orchestrator.runs.runner import RunRequest, execute, plan_run
from orchestrator.workflows import share

pytestmark = [pytest.mark.engine, pytest.mark.slow]

BASE = CpuBuild.default_base


@pytest.fixture(scope="module")
def podman() -> Iterator[PodmanService]:
    with podman_service() as service:
        yield service


@pytest.fixture(scope="module")
def base_archive(engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU base image (Debian, 200 MB) as `docker save` wrote it, by id."""
    from orchestrator.images.base import ensure_base

    base = ensure_base(engine, load_settings(platform="cpu"))
    path = tmp_path_factory.mktemp("podman") / "base.tar"
    with path.open("wb") as out:
        for chunk in engine_mod.save(engine, [base.id]):
            out.write(chunk)
    return path


@pytest.fixture(scope="module")
def podman_base(engine: Any, podman: PodmanService, base_archive: Path) -> engine_mod.Image:
    """The base image in Podman: the same id and layers as in Docker, tagged the same."""
    docker_base = engine_mod.image(engine, BASE)
    assert docker_base is not None
    with base_archive.open("rb") as archive:
        assert engine_mod.load(podman.client, archive, "base") == {docker_base.id}
    engine_mod.tag(podman.client, docker_base.id, BASE)
    loaded = engine_mod.image(podman.client, BASE)
    assert loaded is not None
    assert (loaded.id, loaded.layers, loaded.labels) == (
        docker_base.id, docker_base.layers, docker_base.labels,
    )  # fmt: skip
    assert loaded.tags == (BASE,)  # Podman says docker.io/gmxbench-base/…
    return loaded


def test_engine_kind(engine: Any, podman: PodmanService) -> None:
    found = engine_mod.kind(podman.client)
    assert (found.name, found.rootless) == ("podman", False)
    version = podman.podman("version", "--format", "{{.Client.Version}}").stdout.strip()
    assert found.version == version
    assert engine_mod.kind(engine).name == "docker"


def test_builds_label_cache_mounts_and_failures(
    podman: PodmanService, podman_base: engine_mod.Image
) -> None:
    client, lines = podman.client, list[str]()
    built = engine_mod.build(
        client, f"FROM {BASE}\nRUN echo ok > /ok\n", what="probe",
        labels={"gmxbench.test": "yes"}, emit=lambda e: lines.append(e.text),
    )  # fmt: skip
    image = engine_mod.image(client, built)
    assert image is not None and image.labels["gmxbench.test"] == "yes"
    assert image.labels["io.buildah.version"]  # buildah stamps what it builds
    assert any(line.startswith("STEP 2/3: RUN echo ok") for line in lines)
    # a label-only build keeps the layers: the layers stamp makes it ours, a child is not
    stamped = engine_mod.build(
        client, f"FROM {built}\n", what="labels",
        labels={LAYERS_LABEL: catalog.layers_digest(image), "gmxbench.kind": "builder"},
    )  # fmt: skip
    ours = engine_mod.image(client, stamped)
    assert ours is not None and ours.layers == image.layers and catalog.is_ours(ours)
    both = engine_mod.images(client, ["gmxbench.kind=builder", LAYERS_LABEL])  # two labels
    assert [i.id for i in both] == [stamped]
    assert engine_mod.images(client, ["gmxbench.kind=builder", "gmxbench.test=no"]) == []
    child_id = engine_mod.build(client, f"FROM {stamped}\nRUN true\n", what="child")
    child = engine_mod.image(client, child_id)
    assert child is not None and not catalog.is_ours(child)

    # `RUN --mount=type=cache` needs BuildKit on Docker; buildah runs it through the API
    cached = (
        f"FROM {BASE}\nARG N=\n"
        "RUN --mount=type=cache,id=gmxbench-podman-test,target=/c,sharing=locked "
        "cat /c/seen 2>/dev/null; echo $N >> /c/seen\n"
    )
    lines.clear()
    for n in ("first", "second"):
        engine_mod.build(client, cached, what=n, buildkit=True, build_args={"N": n},
                         emit=lambda e: lines.append(e.text))  # fmt: skip
    assert "first" in lines  # the second build read what the first left in the cache

    with pytest.raises(UserError) as err:
        engine_mod.build(
            client,
            f"FROM {BASE}\nRUN echo preparing\nRUN echo about to fail && echo last && exit 3\n",
            what="gmxbench-test:fail",
        )
    message = err.value.message
    assert "failed at STEP 3/3: RUN echo about to fail" in message
    assert "exit status 3" in message and "last" in message
    assert podman.containers() == []  # buildah's build containers too
    assert not client.images.list(name="gmxbench-test")


def test_import_tags_exactly_what_was_asked(podman: PodmanService, tmp_path: Path) -> None:
    tarball = tmp_path / "root.tar"
    with tarfile.open(tarball, "w") as tar:
        info = tarfile.TarInfo("hello")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    ref = "gmxbench-base/podman-import:test"
    image = engine_mod.import_tarball(podman.client, tarball, ref, ["LABEL gmxbench.kind=base"])
    assert image is not None and image.tags == (ref,)  # not also `:latest`
    assert image.labels == {"gmxbench.kind": "base"} and len(image.layers) == 1


def test_run_options_reach_the_container(
    podman: PodmanService, podman_base: engine_mod.Image, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = (
        "id -G; echo $OMP_NUM_THREADS; pwd; test -c /dev/gmxbench-null && echo device; "
        "grep -c : /proc/net/dev; grep ^Seccomp: /proc/self/status; echo written > out; "
        "echo to-stderr >&2; exit 3"
    )
    config = {
        "image": podman_base.id,
        "command": ["sh", "-c", script],
        "working_dir": "/run",
        "volumes": {str(run_dir): {"bind": "/run", "mode": "rw"}},
        "environment": {"OMP_NUM_THREADS": "2"},
        "labels": {"gmxbench.role": "run", "gmxbench.run": "podman-test"},
        "network_disabled": True,
        "devices": ["/dev/null:/dev/gmxbench-null:rwm"],
        "group_add": ["44", "109"],
        "security_opt": ["seccomp=unconfined"],
    }
    streamed: list[str] = []
    logs = (tmp_path / "stdout", tmp_path / "stderr")
    code = engine_mod.run(
        podman.client, config, name="gmxbench-podman-test", timeout=60, logs=logs,
        emit=lambda e: streamed.append(e.text),
    )  # fmt: skip
    assert code == 3
    out = logs[0].read_text().split("\n")
    assert out[:6] == ["0 44 109", "2", "/run", "device", "1", "Seccomp:\t0"]  # lo only
    assert logs[1].read_text() == "to-stderr\n"
    assert "to-stderr" in "".join(streamed) and "/run" in "".join(streamed)
    assert (run_dir / "out").read_text() == "written\n"
    assert (run_dir / "out").stat().st_uid == 0  # rootful: container root is root

    started = time.monotonic()
    slow = {**config, "command": ["sleep", "60"], "devices": [], "group_add": []}
    assert engine_mod.run(podman.client, slow, name="gmxbench-podman-slow", timeout=2,
                          logs=logs) is None  # fmt: skip
    assert time.monotonic() - started < 30
    code, text = engine_mod.run_capture(podman.client, podman_base.id, ["sh", "-c", "echo hi"])
    assert (code, text) == (0, "hi\n")
    assert engine_mod.containers(podman.client, "gmxbench.role") == []
    assert podman.containers() == []


def test_least_privilege_reaches_a_podman_container(
    podman: PodmanService, podman_base: engine_mod.Image, tmp_path: Path
) -> None:
    """A run's confinement (`ContainerOptions.confined`) as Podman's API applies it."""
    run_dir = tmp_path / "confined"
    run_dir.mkdir()
    os.chown(run_dir, 1000, 1000)
    options = CpuPlatform().run.container_options(0).confined("1000:1000", 64)
    script = (
        "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status; echo mine > out; "
        "i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); echo forked $i; done 2>/dev/null"
    )
    config = {
        "image": podman_base.id, "command": ["sh", "-c", script], "working_dir": "/run",
        "volumes": {str(run_dir): {"bind": "/run", "mode": "rw"}},
        "environment": options.environment, "network_disabled": True,
        **options.engine_kwargs(),
    }  # fmt: skip
    logs = (tmp_path / "stdout", tmp_path / "stderr")
    engine_mod.run(podman.client, config, name="gmxbench-podman-confined", timeout=60, logs=logs)
    out = logs[0].read_text().split("\n")
    assert out[:4] == ["1000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
                       "NoNewPrivs:\t1"], out  # fmt: skip
    assert (run_dir / "out").stat().st_uid == 1000
    forked = [line for line in out if line.startswith("forked ")]
    assert 0 < int(forked[-1].split()[1]) < 64, out


def test_keep_groups_is_podmans_and_must_arrive(
    engine: Any, podman: PodmanService, podman_base: engine_mod.Image
) -> None:
    """`keep-groups` goes as crun's annotation; Podman 4.3's API drops it unless
    containers.conf sets it, and only crun reads it: refused before anything runs."""
    config = {"image": podman_base.id, "command": ["id", "-G"], "group_add": ["keep-groups"]}
    logs = (Path("/dev/null"), Path("/dev/null"))
    with pytest.raises(UsageError, match="is Podman's"):
        engine_mod.run(engine, config, name="gmxbench-keep-groups", timeout=30, logs=logs)
    with pytest.raises(UsageError, match="goes alone"):
        engine_mod.run(podman.client, {**config, "group_add": ["keep-groups", "44"]},
                       name="gmxbench-keep-groups", timeout=30, logs=logs)  # fmt: skip
    if int(engine_mod.kind(podman.client).version.split(".")[0]) < 5:
        with pytest.raises(UserError, match=r"annotations = \[\"run.oci.keep_original_groups=1"):
            engine_mod.run(podman.client, config, name="gmxbench-keep-groups", timeout=30,
                           logs=logs)  # fmt: skip
    assert podman.containers() == []


def _gpu_groups() -> list[int]:
    """The host's ids of the groups that own AMD GPU nodes (Debian: video 44, render)."""
    gids = []
    for name in ("video", "render"):
        with contextlib.suppress(KeyError):
            gids.append(grp.getgrnam(name).gr_gid)
    assert gids, "this host has neither a video nor a render group"
    return gids


def test_keep_groups_set_in_containers_conf_brings_the_users_groups(
    base_archive: Path, tmp_path: Path
) -> None:
    """The service runs with the host's video and render groups, as a user in them would;
    with `keep-groups` the container's process holds exactly those groups under crun. runc
    would drop them: a service whose runtime is runc is refused (Podman 4.3's Docker API
    ignores a container's own `runtime`)."""
    gids = _gpu_groups()
    conf = f'annotations = ["{engine_mod.KEEP_GROUPS_ANNOTATION}=1"]'
    script = "grep ^Groups: /proc/self/status; id -G"
    logs = (tmp_path / "stdout", tmp_path / "stderr")
    for oci_runtime in ("crun", "runc"):
        with podman_service(conf, oci_runtime, gids) as service:
            with base_archive.open("rb") as archive:
                (image_id,) = engine_mod.load(service.client, archive, "base")
            config = {"image": image_id, "command": ["sh", "-c", script],
                      "group_add": ["keep-groups"]}  # fmt: skip
            if oci_runtime == "runc":
                with pytest.raises(UserError, match="needs the crun runtime"):
                    engine_mod.run(service.client, config, name="gmxbench-kg", timeout=30,
                                   logs=logs)  # fmt: skip
            else:
                code = engine_mod.run(service.client, config, name="gmxbench-kg", timeout=30,
                                      logs=logs)  # fmt: skip
                assert code == 0, logs[1].read_text()
                status, ids = logs[0].read_text().splitlines()
                assert status.split()[0] == "Groups:"
                assert sorted(map(int, status.split()[1:])) == sorted(gids)
                assert ids.split() == ["0", *map(str, sorted(gids))]  # root, the user's groups
            assert service.containers() == []


def test_rocm_plan_on_rootless_podman_keeps_groups(tmp_path: Path) -> None:
    """What a `--dry-run` shows: rootless Podman gets `keep-groups`, not host group ids."""
    from orchestrator.platforms.rocm import RocmPlatform

    (tmp_path / "dri").mkdir()
    for node in (tmp_path / "kfd", tmp_path / "dri" / "renderD128"):
        node.touch()
    rocm = RocmPlatform(dev_root=tmp_path)
    rootless = engine_mod.EngineKind("podman", "4.3.1", rootless=True)
    options = rocm.run.container_options(0, engine=rootless).engine_kwargs()
    assert options["group_add"] == [engine_mod.KEEP_GROUPS]
    assert options["devices"] == [
        "/dev/kfd:/dev/kfd:rwm",
        "/dev/dri/renderD128:/dev/dri/renderD128:rwm",
    ]
    rootful = engine_mod.EngineKind("podman", "4.3.1", rootless=False)
    gid = str((tmp_path / "kfd").stat().st_gid)
    assert rocm.run.container_options(0, engine=rootful).engine_kwargs()["group_add"] == [gid]


def test_stable_image_shared_into_podman_builds_and_runs_a_microbenchmark(
    engine: Any,
    stable_image: Any,
    stable_archive: Path,
    podman: PodmanService,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The acceptance run: a BUILD and a RUN of the orchestrator, with Podman as the engine
    (the stable image comes by the session's `share save` archive)."""
    saved = time.monotonic()
    monkeypatch.setenv("DOCKER_HOST", podman.address)
    client = engine_mod.connect()  # what every command does: DOCKER_HOST names Podman
    assert engine_mod.kind(client).name == "podman"
    settings = load_settings(platform="cpu", results_dir=tmp_path / "results")
    record = share.load(client, settings, stable_archive, trust=True)
    loaded = time.monotonic()
    assert (record.id, record.tag) == (stable_image.id, stable_image.tag)
    image = engine_mod.image(client, stable_image.tag)
    assert image is not None and image.tags == (stable_image.tag,)
    assert image.labels == engine.images.get(stable_image.id).labels and catalog.is_ours(image)
    assert [r.tag for r in catalog.list_images(client)] == [stable_image.tag]

    built_image = microbench.ensure(client, settings, stable_image.tag, "bandwidth")  # the build
    built = time.monotonic()
    made = engine_mod.image(client, built_image.id)
    assert made is not None and catalog.is_ours(made)  # the layers stamp holds on Podman
    assert made.labels["gmxbench.kind"] == "kernels"
    assert made.labels["gmxbench.compiler"] == stable_image.compiler
    assert catalog.find_by_inputs(client, made.labels["gmxbench.inputs"], "kernels") == made
    assert microbench.ensure(client, settings, stable_image.tag, "bandwidth").id == built_image.id

    plan = plan_run(client, settings, RunRequest(build=stable_image.tag, system="bandwidth:8MiB",
                                                 tag="podman"))  # fmt: skip
    assert plan.image_id == built_image.id and plan.container["network_disabled"] is True
    result = execute(client, settings, plan)  # the run
    ran = time.monotonic()
    assert result.finished, result.failure
    assert set(result.metrics) == {"ro_peak", "rw_peak"}
    assert all(m.unit == "GB/s" and m.value > 0.5 for m in result.metrics.values())
    assert result.image.id == built_image.id and result.image.labels == made.labels
    assert engine_mod.containers(client, "gmxbench.role") == []
    assert podman.containers() == []
    print(
        f"\nload into Podman {loaded - saved:.0f} s, "
        f"kernel image {built - loaded:.0f} s, run {ran - built:.0f} s"
    )
