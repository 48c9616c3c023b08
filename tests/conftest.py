"""Shared fixtures. Engine tests fail (not skip) when CI=true and no engine answers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ORCH_ENV_PREFIX = "ORCH_"


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


def our_containers(client: Any) -> list[Any]:
    """Containers carrying this project's labels, in any state."""
    return list(client.containers.list(all=True, filters={"label": "gmxbench.role"}))


# Images built once per test session and shared by every engine test that needs them.
# On a warm engine they are reused in seconds (inputs-keyed); cold, stable and dev each
# compile GROMACS from source (~10-15 min apiece on 2 cores).

TOOLCHAIN_PACKAGE = "clang-16"


@pytest.fixture(scope="session")
def session_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="session")
def cpu_settings(session_results: Path) -> Any:
    from orchestrator.settings import load_settings

    return load_settings(platform="cpu", results_dir=session_results)


@pytest.fixture(scope="session")
def stable_image(engine: Any, cpu_settings: Any) -> Any:
    from orchestrator.images import build_gromacs

    return build_gromacs(engine, cpu_settings, "stable")


@pytest.fixture(scope="session")
def toolchain_image(engine: Any, cpu_settings: Any) -> str:
    from orchestrator.toolchains import ensure_toolchain_package

    return ensure_toolchain_package(engine, cpu_settings, TOOLCHAIN_PACKAGE)


@pytest.fixture(scope="session")
def dev_image(engine: Any, cpu_settings: Any, toolchain_image: str) -> Any:
    from orchestrator.images import build_gromacs

    return build_gromacs(engine, cpu_settings, "dev", toolchain=toolchain_image)
