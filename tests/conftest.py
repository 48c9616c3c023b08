"""Shared fixtures. Engine tests fail (not skip) when CI=true and no engine answers."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ORCH_ENV_PREFIX = "ORCH_"
_STARTED = pytest.StashKey[datetime]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STARTED] = datetime.now(UTC)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the engine (directly or through a fixture) is an engine test,
    marked or not: `-m "not engine"` leaves it out and the budget counts it as one."""
    for item in items:
        if "engine" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("engine"):
            item.add_marker(pytest.mark.engine)
    # The README's first command goes first: on CI's cold engine it is what builds the base,
    # the builder and the stable image, so its line count is a cold machine's.
    items.sort(key=lambda item: item.path.name != "test_first_command.py")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """CI's budget at the end of a session that ran engine tests (`tests/ci_budget.py`)."""
    import ci_budget

    reports = [
        report
        for reports in terminalreporter.stats.values()
        for report in reports
        if isinstance(report, pytest.TestReport)
    ]
    if not any("engine" in report.keywords for report in reports):
        return
    basetemp = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    terminalreporter.write_sep("=", "where the time went")
    terminalreporter.write_line(ci_budget.render(basetemp, config.stash[_STARTED], reports))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Remove the LLVM workspace volumes of this session's stand-in repositories (they
    live in its temporary folder); a user's, and the cached real llvm-project's, stay."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    client = _engine() if factory is not None else None
    if client is None:
        return
    basetemp = str(factory.getbasetemp())
    for volume in client.volumes.list(filters={"label": "gmxbench.workspace=llvm"}):
        if str((volume.attrs.get("Labels") or {}).get("gmxbench.repository", "")).startswith(
            basetemp
        ):
            with contextlib.suppress(Exception):
                volume.remove(force=True)


@pytest.fixture(autouse=True)
def _clean_orch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see only the ORCH_* variables they set themselves."""
    for name in list(os.environ):
        if name.startswith(ORCH_ENV_PREFIX):
            monkeypatch.delenv(name)


def _engine() -> Any | None:
    import docker

    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception:
        return None
    return client


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    """A live Docker client; without an engine: fail under CI, skip elsewhere."""
    client = _engine()
    if client is None:
        message = "no Docker Engine answers (start dockerd, see README)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + ": engine tests must run in CI")
        pytest.skip(message)
    yield client


@pytest.fixture
def cpu_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """CPU platform settings with results in a temporary directory."""
    results = tmp_path / "results"
    monkeypatch.setenv("ORCH_PLATFORM", "cpu")
    monkeypatch.setenv("ORCH_RESULTS_DIR", str(results))
    return results


@contextlib.contextmanager
def local_http(
    handler: Callable[..., BaseHTTPRequestHandler], host: str = "127.0.0.1"
) -> Iterator[str]:
    """A real HTTP server on `host` (any free port) for the duration; yields its base URL."""
    httpd = ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def json_webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A real JSON webhook on 127.0.0.1: its URL and the payloads it received."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with local_http(Handler) as base:
        yield f"{base}/hooks/gmxbench", received


def our_containers(client: Any) -> list[Any]:
    """Containers carrying this project's labels, in any state."""
    return list(client.containers.list(all=True, filters={"label": "gmxbench.role"}))


# Images built once per test session and shared by every engine test that needs them.
# On a warm engine they are reused in seconds (inputs-keyed); cold, stable and dev each
# compile GROMACS from source (~10-15 min apiece on 2 cores). The dev compiler is the
# LLVM toolchain path for real, on a mini llvm-project (`tests/mini_llvm.py`) whose clang
# forwards to Debian's clang-16: the LLVM template, its workspace volume and ccache all run.

TOOLCHAIN_PACKAGE = "clang-16"


@pytest.fixture(scope="session")
def session_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="session")
def cpu_settings(session_results: Path) -> Any:
    from orchestrator.core.settings import load_settings

    return load_settings(platform="cpu", results_dir=session_results)


def build_ours(engine: Any, build: Any, *args: Any, **kwargs: Any) -> Any:
    """`build(engine, *args)`, first untagging a tag an older checkout left for other inputs.

    The product refuses to move a tag (results name images by it); on a test machine the
    tags of the suite's own builds are the suite's, and the image keeps its id.
    """
    from orchestrator.images.catalog import StaleTag

    try:
        return build(engine, *args, **kwargs)
    except StaleTag as stale:
        engine.images.remove(stale.tag, noprune=True)
        return build(engine, *args, **kwargs)


def cache_files(engine: Any, image: str, mount: str) -> list[str]:
    """The files in a BuildKit cache mount, listed by a tiny build FROM `image` (a fresh
    layer each time: a nonce build argument)."""
    from orchestrator import engine as engine_api

    listed = engine_api.build(
        engine,
        f"FROM {image}\nARG NONCE\n"  # BuildKit takes no `FROM sha256:`
        f"RUN --mount=type=cache,id={mount},target=/ccache "
        "find /ccache -type f | sort > /cache-files\n",
        what="compile cache listing", buildkit=True, build_args={"NONCE": uuid.uuid4().hex},
    )  # fmt: skip
    try:
        code, out = engine_api.run_capture(engine, listed, ["cat", "/cache-files"])
    finally:
        engine_api.remove_image(engine, listed, force=True)
    assert code == 0, out
    return out.split()


def warm_compile_cache(engine: Any, settings: Any, record: Any) -> None:
    """Fill the compile cache of a stable image that exists while its cache does not.

    The images outlive the build cache (`docker builder prune`, BuildKit's garbage
    collection): then a dev build compiles every unit, not only the compiler's, and the
    tests that count its compiles would fail on the engine's past, not on the product. The
    stable image's own Dockerfile is built once more (a new build argument makes its
    compile step run again, with the cache), and the copy is dropped.
    """
    from orchestrator import engine as engine_api
    from orchestrator.images.gromacs import SourceSpec
    from orchestrator.images.provenance import load_lockfile
    from orchestrator.store.layout import lockfile_path

    lock = load_lockfile(lockfile_path(settings.results_dir, record.tag))
    cache, builder = lock.context["compile_cache"], lock.context["builder_image"]
    if lock.dockerfile is None or cache_files(engine, builder, cache):
        return
    started = time.monotonic()
    marker = "ARG GMXBENCH_NO_COMPILE_CACHE="
    dockerfile = lock.dockerfile.replace(marker, f"{marker}\nARG GMXBENCH_CACHE_REFILL=")
    source = SourceSpec.model_validate(lock.context["source"])
    image = engine_api.build(
        engine, dockerfile, what=f"compile cache of {record.tag}", buildkit=True,
        files=source.context_files(), build_args={"GMXBENCH_CACHE_REFILL": uuid.uuid4().hex},
    )  # fmt: skip
    engine_api.remove_image(engine, image)
    print(f"\ncompile cache {cache} was empty: filled by {record.tag}'s own Dockerfile "
          f"in {time.monotonic() - started:.0f} s")  # fmt: skip


@pytest.fixture(scope="session")
def stable_image(engine: Any, cpu_settings: Any) -> Any:
    from orchestrator.images.gromacs import build_gromacs

    record = build_ours(engine, build_gromacs, cpu_settings, "stable")
    warm_compile_cache(engine, cpu_settings, record)
    return record


@pytest.fixture(scope="session")
def stable_archive(
    engine: Any, cpu_settings: Any, stable_image: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """`share save` of the stable image, made once for the share and Podman tests (~30 s)."""
    from orchestrator.workflows import share

    started = time.monotonic()
    path = share.save(engine, cpu_settings, stable_image.tag, tmp_path_factory.mktemp("share"))
    print(f"\nshare save: {time.monotonic() - started:.1f} s, {path.stat().st_size / 1e6:.0f} MB")
    yield path
    path.unlink()  # 750 MB: not left for pytest's basetemp rotation
    share.sidecar(path).unlink()


@pytest.fixture(scope="session")
def mini_llvm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A mini llvm-project at its first commit (same content, same hash, every session)."""
    from mini_llvm import make_mini_llvm

    return make_mini_llvm(tmp_path_factory.mktemp("llvm") / "llvm-project")


@pytest.fixture(scope="session")
def llvm_settings(cpu_settings: Any, mini_llvm: Any) -> Any:
    """CPU settings with `llvm_source` (ORCH_LLVM_SOURCE) at the mini llvm-project."""
    return cpu_settings.model_copy(update={"llvm_source": str(mini_llvm.path)})


@pytest.fixture(scope="session")
def toolchain_image(engine: Any, llvm_settings: Any, mini_llvm: Any) -> str:
    """The LLVM toolchain of the mini llvm-project's first commit, on the CPU builder."""
    from orchestrator.images.toolchain_llvm import ensure_toolchain_llvm

    return ensure_toolchain_llvm(engine, llvm_settings, mini_llvm.head())


@pytest.fixture(scope="session")
def dev_image(engine: Any, cpu_settings: Any, toolchain_image: str) -> Any:
    from orchestrator.images.gromacs import build_gromacs

    return build_ours(engine, build_gromacs, cpu_settings, "dev", toolchain_tag=toolchain_image)


class SecondEngine:
    """A second, empty Docker Engine of our own that a test may stop and start again.

    It has its own data root, exec root (hence its own containerd), pid file and socket,
    no iptables rules, and a bridge of its own (a /30 of TEST-NET-1, 192.0.2.0/24): `--bridge=none`
    would make it delete the host's `docker0` at start-up, cutting the main engine's
    containers off. It reaches registries on 127.0.0.1 like any engine on the host.
    """

    def __init__(self, dockerd: str, ip: str) -> None:
        self.ip = ip
        # Short path: containerd's socket under the exec root must fit in 108 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="gmxd-", dir="/tmp"))
        (self.root / "daemon.json").write_text("{}\n")  # not /etc/docker/daemon.json
        self.socket = self.root / "docker.sock"
        self.bridge, net = f"gmxb{uuid.uuid4().hex[:8]}", uuid.uuid4().int % 64 * 4
        self.command = [
            dockerd,
            f"--config-file={self.root / 'daemon.json'}",
            f"--data-root={self.root / 'data'}",
            f"--exec-root={self.root / 'exec'}",
            f"--pidfile={self.root / 'docker.pid'}",
            f"--host=unix://{self.socket}",
            f"--bridge={self.bridge}",
            "--iptables=false",
            "--ip-masq=false",
        ]
        self.address = f"unix://{self.socket}"
        self.client: Any = None
        self.proc: Any = None
        self._log = (self.root / "dockerd.log").open("ab")
        run = subprocess.run
        run([ip, "link", "add", "name", self.bridge, "type", "bridge"], check=True)
        run([ip, "addr", "add", f"192.0.2.{net + 1}/30", "dev", self.bridge], check=True)

    def start(self) -> Any:
        import docker
        import docker.errors

        self.proc = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT)
        deadline, self.client = time.monotonic() + 60, None
        while self.client is None:
            try:  # the client asks the engine for its API version when it is made
                self.client = docker.DockerClient(base_url=self.address, timeout=600)
            except docker.errors.DockerException:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    tail = (self.root / "dockerd.log").read_text(errors="replace")[-2000:]
                    pytest.fail(f"the second dockerd did not answer:\n{tail}")
                time.sleep(0.3)
        return self.client

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def delete(self) -> None:

        self.stop()
        self._log.close()
        subprocess.run([self.ip, "link", "delete", self.bridge], check=False, capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def second_engine(engine: Any) -> Iterator[SecondEngine]:
    """A started `SecondEngine`, deleted afterwards (needs dockerd and ip)."""
    dockerd, ip = shutil.which("dockerd"), shutil.which("ip")
    if dockerd is None or ip is None:
        message = "a second engine needs dockerd and ip (apt-get install docker.io iproute2)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    second = SecondEngine(dockerd, ip)
    try:
        second.start()
        yield second
    finally:
        second.delete()


@pytest.fixture
def clean_engine(second_engine: SecondEngine) -> Any:
    """The client of a second, empty Docker Engine (see `SecondEngine`)."""
    return second_engine.client


# The ROCm platform built from Debian's ROCm packages, with GROMACS 2026 from a local
# tarball (../shared/gromacs/, for machines that cannot reach upstream, CI included).

GROMACS_2026 = "gromacs-2026.3.tar.gz"


def shared_gromacs() -> Path:
    """`shared/gromacs/` beside the checkout (or beside a folder above it), or
    GMXBENCH_GROMACS_DIR: where a machine without upstream access keeps the tarball."""
    if "GMXBENCH_GROMACS_DIR" in os.environ:
        return Path(os.environ["GMXBENCH_GROMACS_DIR"])
    for folder in Path(__file__).resolve().parents[1:]:
        if (folder / "shared" / "gromacs" / "SHA256SUMS").is_file():
            return folder / "shared" / "gromacs"
    return Path(__file__).resolve().parents[2] / "shared" / "gromacs"


def gromacs_2026_source() -> Any:
    """`GromacsSource` of the shared 2026.3 tarball (its sha256 from SHA256SUMS beside it)."""
    from orchestrator.core.settings import GromacsSource

    folder = shared_gromacs()
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        message = f"no GROMACS 2026 tarball: {sums} is missing (set GMXBENCH_GROMACS_DIR)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + ": the ROCm build tests must run in CI")
        pytest.skip(message)
    digest = next(
        line.split()[0] for line in sums.read_text().splitlines() if line.endswith(GROMACS_2026)
    )
    return GromacsSource(url=str(folder / GROMACS_2026), ref="v2026.3", sha256=digest)


@pytest.fixture(scope="session")
def rocm_settings(session_results: Path) -> Any:
    from orchestrator.core.settings import load_settings

    return load_settings(
        platform="rocm", rocm_stack="debian", gpu_arch="gfx1201",
        gromacs=gromacs_2026_source(), results_dir=session_results,
    )  # fmt: skip


@pytest.fixture(scope="session")
def rocm_stable(engine: Any, rocm_settings: Any) -> Any:
    """GROMACS 2026.3 with HIP for gfx1201, built with Debian's clang (~15 min cold)."""
    from orchestrator.images.gromacs import build_gromacs

    record = build_ours(engine, build_gromacs, rocm_settings, "stable")
    warm_compile_cache(engine, rocm_settings, record)
    return record


@pytest.fixture
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium under chromedriver, names resolving nowhere."""
    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver_path is None:
        message = "Debian's chromium and chromium-driver are not installed"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(
                message + ": .ci/setup-tests installs them; the browser test must run in CI"
            )
        pytest.skip(message)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:  # the [dev] extra has it; importorskip would skip under CI too
        message = f"selenium is not importable ({exc}): pip install -e '.[dev]'"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + ": the browser test must run in CI")
        pytest.skip(message)

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,2000", "--host-resolver-rules=MAP * ~NOTFOUND",
                "--allow-file-access-from-files"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
