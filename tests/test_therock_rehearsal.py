"""Rehearsal of the amd stack's builder against a local TheRock 7.12 apt repository.

No machine here reaches repo.amd.com, so the builder template's install logic runs end to
end against a repository this test builds and serves over HTTP from the host to the
build (tests/therock_repo.py: TheRock 7.12's names, versions, dependencies and layout,
stand-in contents), through the same settings a mirror would use. The base is the
project's debootstrapped Debian sid, standing in for ubuntu:24.04 (no image registry
here): both have cmake >= 3.28 and a libstdc++-14-dev, which AMD's packages depend on.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import local_http

from orchestrator.core.errors import UserError
from orchestrator.core.settings import Settings
from orchestrator.images.base import base_tag
from orchestrator.images.builder import ensure_builder
from tests.therock_repo import make_key, make_repo

pytestmark = pytest.mark.engine

FAMILIES = ["gfx120X-all", "gfx94X-dcgpu"]


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(root: Path, host: str) -> Iterator[str]:
    """`root` over HTTP on `host` (the engine's bridge: build containers reach it)."""
    with local_http(functools.partial(Quiet, directory=str(root)), host) as url:
        yield url


@pytest.fixture(scope="module")
def repos(engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Served at the returned URL: good/ (signed, both families), unsigned/, norocprof/
    (amdrocm-profiler-base7.12 without bin/rocprofv3), keys/rocm.gpg and keys/other.gpg."""
    root = tmp_path_factory.mktemp("therock")
    keys = root / "keys"
    keys.mkdir()
    (keys / "rocm.gpg").write_text(make_key(root / "gnupg", "gmxbench rehearsal <r@invalid>"))
    (keys / "other.gpg").write_text(make_key(root / "other", "someone else <o@invalid>"))
    make_repo(root / "good", root / "gnupg", FAMILIES)
    make_repo(root / "norocprof", root / "gnupg", FAMILIES, drop={"bin/rocprofv3"})
    shutil.copytree(root / "good", root / "unsigned")
    (root / "unsigned" / "dists" / "stable" / "InRelease").unlink()
    gateway = engine.networks.get("bridge").attrs["IPAM"]["Config"][0]["Gateway"]
    try:
        with serve(root, gateway) as url:
            yield url
    finally:  # the agents gpg started for the two throwaway keys would outlive the tests
        for home in (root / "gnupg", root / "other"):
            subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"],
                           check=False, capture_output=True)  # fmt: skip


@pytest.fixture
def built(engine: Any) -> Iterator[list[str]]:
    """Tags this test made, removed afterwards (`untag`); nothing else is touched."""
    tags: list[str] = []
    yield tags
    untag(engine, tags)


#: Where the build tools' layer is kept between runs, so that only the first run on an
#: engine installs them (the slow step); the rest of each build is removed.
CACHE_TAG = ("gmxbench-rehearsal/build-tools", "sid")


def untag(engine: Any, tags: list[str]) -> None:
    """Remove each tag with the layers only it used, keeping the build tools' layer."""
    for tag in tags:
        with contextlib.suppress(Exception):
            for entry in engine.api.history(tag):
                if "build-essential" in entry.get("CreatedBy", "") and entry["Id"] != "<missing>":
                    engine.api.tag(entry["Id"], *CACHE_TAG)
                    break
        with contextlib.suppress(Exception):
            engine.images.remove(tag)


def remove_built_on(engine: Any, image_id: str) -> None:
    """The steps a failed build left on `image_id` (the engine keeps them as cache)."""
    children = [i["Id"] for i in engine.api.images(all=True) if i.get("ParentId") == image_id]
    for child in children:
        remove_built_on(engine, child)
        with contextlib.suppress(Exception):
            engine.images.remove(child, noprune=True)


@pytest.fixture(scope="module")
def good(engine: Any, repos: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The builder for two targets of one family (gfx1200, gfx1201), from the good repo."""
    ref = ensure_builder(
        engine, settings(tmp_path_factory.mktemp("good"), repos, "gfx1200,gfx1201")
    )
    yield ref.tag
    untag(engine, [ref.tag])


def settings(tmp_path: Path, repos: str, targets: str, **apt: str) -> Settings:
    values = {"url": f"{repos}/good", "key_url": f"{repos}/keys/rocm.gpg", **apt}
    return Settings(
        platform="rocm", rocm_stack="amd", base_image=base_tag("sid"), gpu_arch=targets,
        rocm_apt=values, results_dir=tmp_path / "results",
    )  # fmt: skip


def refusal(engine: Any, chosen: Settings) -> str:
    with pytest.raises(UserError) as caught:
        ensure_builder(engine, chosen)
    return str(caught.value)


def shell(engine: Any, image: str, command: str) -> str:
    out = engine.containers.run(image, ["bash", "-c", command], remove=True)
    return out.decode() if isinstance(out, bytes) else str(out)


def test_one_family_installs_from_the_signed_repository(engine: Any, good: str) -> None:
    installed = shell(engine, good, "dpkg-query -W -f '${Package}\\n' 'amdrocm*' | sort")
    assert installed.split() == sorted(
        ["amdrocm-amdsmi7.12", "amdrocm-base7.12", "amdrocm-ccl-dev7.12-gfx120x",
         "amdrocm-fft-dev7.12-gfx120x", "amdrocm-fft7.12-gfx120x", "amdrocm-llvm-dev7.12",
         "amdrocm-llvm7.12", "amdrocm-profiler-base7.12", "amdrocm-profiler7.12",
         "amdrocm-runtime-dev7.12", "amdrocm-runtime7.12", "amdrocm-sysdeps7.12"]
    )  # fmt: skip
    facts = shell(
        engine, good,
        "cat /opt/rocm/core-7.12/.info/version /opt/gmxbench/stable-code-object-version; "
        "echo $ROCM_PATH; test -e /opt/rocm/lib || echo no-opt-rocm-lib",
    )  # fmt: skip
    assert facts.split() == ["7.12.0", "6", "/opt/rocm/core-7.12", "no-opt-rocm-lib"]


def test_two_families_ask_for_both_and_say_one_image_holds_one(
    engine: Any, repos: str, tmp_path: Path
) -> None:
    message = refusal(engine, settings(tmp_path, repos, "gfx1201,gfx942"))
    assert "amdrocm-fft-dev7.12-gfx94x" in message or "gfx94x" in message
    assert (
        "packages of GPU families gfx120X-all and gfx94X-dcgpu install the same files below "
        "/opt/rocm/core-7.12" in message
    )


@pytest.mark.parametrize(
    ("what", "apt"),
    [("unsigned", {"url": "unsigned"}), ("another key", {"key_url": "keys/other.gpg"})],
)
def test_a_repository_not_signed_by_its_key_is_refused(
    engine: Any, repos: str, tmp_path: Path, what: str, apt: dict[str, str]
) -> None:
    chosen = settings(tmp_path, repos, "gfx1201", **{k: f"{repos}/{v}" for k, v in apt.items()})
    message = refusal(engine, chosen)
    assert "apt could not read a signed index of AMD's ROCm repository" in message, what
    assert "ORCH_ROCM_APT__URL" in message


def test_a_missing_tool_is_named_with_its_package(engine: Any, repos: str, tmp_path: Path) -> None:
    message = refusal(engine, settings(tmp_path, repos, "gfx1201", url=f"{repos}/norocprof"))
    assert (
        "ROCm 7.12 in /opt/rocm/core-7.12 lacks bin/rocprofv3 (the kernel profiler; "
        "package amdrocm-profiler-base7.12)." in message
    )


def test_a_base_whose_rocm_says_another_release_is_refused(
    engine: Any, repos: str, good: str, tmp_path: Path, built: list[str]
) -> None:
    base = f"gmxbench-rehearsal/rocm-7.11:{tmp_path.name.lower()}"
    container = engine.containers.run(
        good, ["bash", "-c", "echo 7.11.0 > /opt/rocm/core-7.12/.info/version"], detach=True
    )
    container.wait()
    base_id = container.commit(*base.split(":")).id
    container.remove()
    built.append(base)
    chosen = settings(tmp_path, repos, "gfx1201").model_copy(update={"base_image": base})
    try:
        message = refusal(engine, chosen)
    finally:
        remove_built_on(engine, base_id)
    assert (
        "/opt/rocm/core-7.12/.info/version says ROCm 7.11.0, but this build pins ROCm 7.12"
        in message
    )
