"""The real llvm-project (Debian's llvm-toolchain-22 source, 2.4 GB) through the product's
LLVM path, up to what 2 cores can do: the workspace volume, bundles, checkouts and the
configure line of the `toolchain-llvm` template, and ninja's plan of the distribution.

Compiling LLVM takes 3-4.5 hours here, so these tests plan (`plan_toolchain_llvm`: the
build script up to `ninja -n -d explain distribution`); the build itself, and the plan
after a one-file commit in a built tree, ran on the lent 16-core host
(tests/data/real_llvm/, checked in test_llvm_host_build.py). Run with `-m real_llvm`.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import docker.errors
import pytest
from real_llvm import RealLlvm, real_llvm

from orchestrator import engine as engine_api
from orchestrator.core.events import Event, Message
from orchestrator.images import llvm_workspace
from orchestrator.images.toolchain_llvm import (
    COMPONENTS,
    NinjaProgress,
    ensure_environment,
    plan_toolchain_llvm,
    workspace_volume,
)

pytestmark = [pytest.mark.engine, pytest.mark.real_llvm]

UNTRACKED = "llvm/lib/Target/AMDGPU/GmxbenchUntracked.cpp"
CHECKOUT = re.compile(r"^checkout: (\d+) files")
BUNDLE = re.compile(r"^bundle: ([\d.]+) MB")


@dataclass
class Plan:
    progress: NinjaProgress
    seconds: float
    lines: list[str] = field(default_factory=list)

    def checkout_files(self) -> int:
        return next(int(m[1]) for line in self.lines if (m := CHECKOUT.match(line)))

    def bundle_mb(self) -> float | None:
        return next((float(m[1]) for line in self.lines if (m := BUNDLE.match(line))), None)


@dataclass
class Plans:
    repo: RealLlvm
    volume: str
    environment: str
    release: Plan
    edited: Plan
    dirty: Plan


def _plan(engine: Any, settings: Any, rev: str) -> Plan:
    said: list[Event] = []
    started = time.monotonic()
    progress = plan_toolchain_llvm(engine, settings, rev, emit=said.append)
    lines = [e.text for e in said if isinstance(e, Message)]
    return Plan(progress, time.monotonic() - started, lines)


@pytest.fixture(scope="module")
def plans(engine: Any, rocm_settings: Any) -> Iterator[Plans]:
    repo = real_llvm()
    settings = rocm_settings.model_copy(update={"llvm_source": str(repo.path)})
    environment = ensure_environment(engine, settings)
    volume = workspace_volume(settings, environment, str(repo.path))
    with contextlib.suppress(docker.errors.NotFound):  # a new clone: the whole path, measured
        engine.volumes.get(volume).remove()
    release = _plan(engine, settings, repo.release)
    edited = _plan(engine, settings, repo.edited)
    # A new pass as a user adds one: a new file, not yet `git add`ed, and its line in the
    # target's CMakeLists (LLVM's CMake refuses a source file that no target lists).
    untracked = repo.path / UNTRACKED
    cmakelists = repo.path / "llvm/lib/Target/AMDGPU/CMakeLists.txt"
    original = cmakelists.read_text()
    try:
        untracked.write_text("namespace llvm { int gmxbenchUntracked() { return 1; } }\n")
        cmakelists.write_text(original.replace(
            "  AMDGPUTargetMachine.cpp\n", "  AMDGPUTargetMachine.cpp\n  GmxbenchUntracked.cpp\n", 1
        ))  # fmt: skip
        dirty = _plan(engine, settings, str(repo.path))
    finally:
        untracked.unlink(missing_ok=True)
        cmakelists.write_text(original)
    for name, plan in (("release", release), ("edited", edited), ("dirty", dirty)):
        print(f"\n{name}: {plan.seconds:.1f} s; {plan.progress.summary()[:120]}")
    yield Plans(repo, volume, environment.tag, release, edited, dirty)


def test_the_template_configures_the_real_tree_and_plans_the_distribution(plans: Plans) -> None:
    """No unused option (the script fails on one), and the plan is the distribution's:
    the compilers, tools and the two shared libraries, not every LLVM tool."""
    progress = plans.release.progress
    assert 3000 < progress.total < 4500, progress.summary()
    linked = set(progress.linked)
    for wanted in ("bin/clang", "bin/lld", "bin/llvm-objdump", "bin/llvm-readobj"):
        assert any(target.startswith(wanted) for target in linked), wanted
    assert any(target.startswith("lib/libLLVM.so") for target in linked)
    assert any(target.startswith("lib/libclang-cpp.so") for target in linked)
    for not_wanted in ("bin/llc", "bin/opt", "bin/clang-format", "bin/llvm-ar"):
        assert not any(target == not_wanted for target in linked), not_wanted
    compiled = set(progress.compiled)
    assert any(path.endswith("AMDGPU/AMDGPUTargetMachine.cpp") for path in compiled)
    assert len(COMPONENTS) == 9


def test_a_commit_sends_a_small_bundle_and_rewrites_one_file(plans: Plans) -> None:
    """The second commit reaches the clone as the objects it lacks, and the checkout
    rewrites only the file the commit changed: ninja sees the rest as it was."""
    edited = plans.edited
    assert edited.checkout_files() == 1
    bundle = edited.bundle_mb()
    assert bundle is not None and bundle < 1.0, edited.lines[:20]


def test_a_dirty_tree_brings_its_untracked_files(engine: Any, plans: Plans) -> None:
    """`git stash create` would leave a new file out; the snapshot commit keeps it, and
    the build compiles it."""
    assert plans.dirty.checkout_files() == 2  # the CMakeLists and the new file
    compiled = list(plans.dirty.progress.compiled)
    assert any(path.endswith("AMDGPU/GmxbenchUntracked.cpp") for path in compiled), compiled[:5]
    code, out = engine_api.run_capture(
        engine, plans.environment,
        ["bash", "-c", f"test -f {llvm_workspace.MOUNT}/src/{UNTRACKED} && "
         f"git --git-dir={llvm_workspace.GIT_DIR} --work-tree={llvm_workspace.MOUNT}/src "
         "status --porcelain | wc -l"],
        volumes={plans.volume: {"bind": llvm_workspace.MOUNT, "mode": "ro"}},
    )  # fmt: skip
    assert code == 0, out
    assert out.strip() == "0"  # the work tree is exactly the snapshot commit


def test_the_workspace_volume_is_kept_from_prunes(engine: Any, plans: Plans) -> None:
    volume = engine.volumes.get(plans.volume)
    assert volume.attrs["Labels"][llvm_workspace.KEEP_LABEL] == "true"
    assert volume.attrs["Labels"][llvm_workspace.WORKSPACE_LABEL] == "llvm"
