"""A Podman engine of our own behind a Docker-compatible socket, for the engine tests.

`podman system service` serves the Docker API (and its own) on a Unix socket; docker-py
talks to it as to a Docker Engine. This one shares nothing with the host's Podman: its
image store (`--root`), run state (`--runroot`), temporary, network and volume folders
and configuration files all live in one temporary folder, and it runs in a mount
namespace of its own where that folder is also mounted over the two paths rootful
Podman 4.3 writes whatever its configuration says (`/var/lib/containers/cache`, the
blob cache, and `/run/containers/networks`, netavark's state). Its overlay mounts stay
in that namespace, so they go with the service; `delete` removes the folder.

It runs as root without systemd: cgroupfs, events in a file, the OCI runtime `runtime()`
picks, and container limits no higher than the service's own (`_ulimits`). Asked for crun
on hybrid cgroups, its namespace hides the v2 tree (`/sys/fs/cgroup/unified`) under a
tmpfs, so crun sees the v1 hierarchies runc uses. Given `groups`, it runs with exactly
those supplementary groups, as a user in them would (what `keep-groups` passes on).
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

#: The storage drivers to try: the kernel's overlayfs works for root on ext4/xfs; vfs (a
#: full copy per layer: slow, but works everywhere) is the fallback.
DRIVERS = ("overlay", "vfs")
#: Podman 4.3 sets its own RLIMIT_NPROC to this at start (strace shows it).
PODMAN_NPROC = 32768
#: Where rootful Podman writes whatever --root, --runroot and containers.conf say.
FIXED_PATHS = (Path("/var/lib/containers"), Path("/run/containers"))
#: The cgroup v2 tree beside the v1 hierarchies on a host with hybrid cgroups.
CGROUP2 = Path("/sys/fs/cgroup/unified")
#: Host folders made only to mount over (they did not exist), and the services alive.
_MADE: set[Path] = set()
_ALIVE: list[PodmanService] = []


def podman_binary() -> str | None:
    return shutil.which("podman")


def missing(message: str) -> None:
    """Fail under CI (the Podman tests must run there), skip elsewhere."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + ": the Podman engine tests must run in CI")
    pytest.skip(message)


def hybrid_cgroups() -> bool:
    """v1 controllers plus a v2 tree at /sys/fs/cgroup/unified."""
    cgroups = Path("/sys/fs/cgroup")
    return (cgroups / "unified").is_dir() and not (cgroups / "cgroup.controllers").exists()


def runtime() -> str:
    """crun, Podman's default, unless cgroups are hybrid, which crun 1.8 refuses ("cgroups
    in hybrid mode not supported") and runc, the runtime Docker uses, handles."""
    return "runc" if hybrid_cgroups() and shutil.which("runc") else "crun"


def _ulimits() -> str:
    """Open-file and process limits no higher than the service's own, for containers.conf.

    Rootful Podman gives a container RLIMIT_NOFILE and RLIMIT_NPROC of 1048576, which the
    runtime cannot set above the service's own limits without CAP_SYS_RESOURCE (a sandboxed
    root may lack it: "crun: setrlimit `RLIMIT_NPROC`: Operation not permitted"). Docker's
    containers inherit dockerd's limits; these make Podman's do about the same.
    """
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1 << 20)
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], PODMAN_NPROC)
    return f'["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]'


class PodmanService:
    """`podman system service --time=0` on `<tmp>/podman.sock` with a store of its own.

    `address` is what DOCKER_HOST takes (`unix://…`); `podman(*args)` runs the Podman CLI
    on the same store, in the service's mount namespace, for what a test checks behind
    the API. `containers_conf` adds lines under `[containers]` of its containers.conf;
    `oci_runtime` overrides `runtime()`; `groups` are the service's supplementary groups.
    """

    def __init__(
        self, podman: str, driver: str = "overlay", containers_conf: str = "",
        oci_runtime: str | None = None, groups: Sequence[int] = (),
    ) -> None:  # fmt: skip
        self.binary, self.driver, self.groups = podman, driver, tuple(groups)
        self.runtime = oci_runtime or runtime()
        #: crun on hybrid cgroups: the v2 tree hidden in the service's mount namespace
        self.hide_cgroup2 = self.runtime == "crun" and hybrid_cgroups()
        # short path: the socket's path must fit in 108 bytes
        self.root = Path(tempfile.mkdtemp(prefix="gmxp-", dir="/tmp"))
        self.root.chmod(0o755)  # the runtime looks up paths below it as the container user
        self.socket = self.root / "podman.sock"
        self.address = f"unix://{self.socket}"
        folders = ("storage", "run", "tmp", "networks", "volumes", "var-lib", "run-containers")
        for folder in folders:
            (self.root / folder).mkdir()
        storage = self.root / "storage.conf"
        storage.write_text(
            f'[storage]\ndriver = "{driver}"\n'
            f'graphroot = "{self.root / "storage"}"\nrunroot = "{self.root / "run"}"\n'
        )
        conf = self.root / "containers.conf"
        conf.write_text(
            "[containers]\n"
            f"default_ulimits = {_ulimits()}\n"
            f"{containers_conf}\n"
            "[engine]\n"
            'cgroup_manager = "cgroupfs"\n'  # no systemd here
            'events_logger = "file"\n'
            f'events_logfile_path = "{self.root / "tmp" / "events.log"}"\n'
            f'tmp_dir = "{self.root / "tmp"}"\n'
            f'volume_path = "{self.root / "volumes"}"\n'
            f'runtime = "{self.runtime}"\n'
            "[network]\n"
            f'network_config_dir = "{self.root / "networks"}"\n'
        )
        #: The environment of every Podman process of ours: our configuration files only.
        self.env = {
            **os.environ,
            "CONTAINERS_CONF": str(conf),
            "CONTAINERS_STORAGE_CONF": str(storage),
            "TMPDIR": str(self.root / "tmp"),  # buildah's cache mounts live here too
        }
        self.global_args = [
            f"--root={self.root / 'storage'}",
            f"--runroot={self.root / 'run'}",
            f"--storage-driver={driver}",
            f"--tmpdir={self.root / 'tmp'}",
            f"--network-config-dir={self.root / 'networks'}",
            "--cgroup-manager=cgroupfs",
            "--events-backend=file",
            f"--runtime={self.runtime}",
        ]
        self.client: Any = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.root / "service.log"
        for path in FIXED_PATHS:
            if not path.exists():
                path.mkdir(mode=0o700)
                _MADE.add(path)
        _ALIVE.append(self)

    def _isolated(self, args: list[str]) -> list[str]:
        """`args` in the service's mount namespace, or in a new one set up the same way."""
        if self.proc is not None and self.proc.poll() is None:
            return ["nsenter", f"--mount=/proc/{self.proc.pid}/ns/mnt", "--", *args]
        script = 'mount --bind "$1" "$3" && mount --bind "$2" "$4" && shift 4 && exec "$@"'
        if self.hide_cgroup2:  # crun writes its (empty) v2 cgroups into this tmpfs
            script = f"mount -t tmpfs -o size=1m gmxbench-no-cgroup2 {CGROUP2} && {script}"
        private = [str(self.root / "var-lib"), str(self.root / "run-containers")]
        return ["unshare", "--mount", "--propagation=private", "sh", "-c", script, "sh",
                *private, *map(str, FIXED_PATHS), *args]  # fmt: skip

    def podman(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The Podman CLI on this service's store (a second process beside the service)."""
        return subprocess.run(
            self._isolated([self.binary, *self.global_args, *args]),
            env=self.env, capture_output=True, text=True, check=check,
        )  # fmt: skip

    def start(self) -> Any:
        import docker
        import docker.errors

        command = [self.binary, *self.global_args, "system", "service", "--time=0", self.address]
        if self.groups:  # its containers' processes (conmon, the runtime) inherit them
            command = ["setpriv", f"--groups={','.join(map(str, self.groups))}", "--", *command]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                self._isolated(command), env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline, self.client = time.monotonic() + 60, None
        while self.client is None:
            try:  # the client asks the engine for its API version when it is made
                self.client = docker.DockerClient(base_url=self.address, timeout=600)
                self.client.ping()
            except docker.errors.DockerException:
                self.client = None
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    tail = self.log.read_text(errors="replace")[-2000:]
                    pytest.fail(f"podman system service did not answer:\n{tail}")
                time.sleep(0.3)
        return self.client

    def containers(self) -> list[str]:
        """Every container in the store, buildah's build containers included."""
        out = self.podman("ps", "--all", "--external", "--format", "{{.ID}}").stdout
        return out.split()

    def stop(self) -> None:
        """Remove every container (their monitors would keep the namespace), then stop."""
        if self.client is not None:
            with contextlib.suppress(Exception):
                for container in self.client.containers.list(all=True):
                    container.remove(force=True)
            self.client.close()
            self.client = None
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def delete(self) -> None:
        """Stop the service and remove everything of it, on the host as well."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        if self in _ALIVE:
            _ALIVE.remove(self)
        if not _ALIVE:  # a folder made to mount over goes when no namespace uses it
            for path in sorted(_MADE):
                with contextlib.suppress(OSError):
                    path.rmdir()
                _MADE.discard(path)


def storage_driver(podman: str) -> str:
    """The first of `DRIVERS` that can hold a layer here (overlay on tmpfs, or in a
    container's overlay root, may not)."""
    for driver in DRIVERS:
        service = PodmanService(podman, driver)
        try:
            probe = service.podman("info", "--format", "{{.Store.GraphDriverName}}", check=False)
            if probe.returncode == 0 and probe.stdout.strip() == driver:
                return driver
        finally:
            service.delete()
    return DRIVERS[-1]


@contextlib.contextmanager
def podman_service(
    containers_conf: str = "", oci_runtime: str | None = None, groups: Sequence[int] = ()
) -> Iterator[PodmanService]:
    """A started `PodmanService`, deleted afterwards; skips (fails under CI) without Podman."""
    binary = podman_binary()
    if binary is None or os.geteuid() != 0:
        missing("Podman is not installed (apt-get install podman crun uidmap), or not root")
    assert binary is not None
    driver = storage_driver(binary)
    service = PodmanService(binary, driver, containers_conf, oci_runtime, groups)
    try:
        service.start()
        yield service
    finally:
        service.delete()
