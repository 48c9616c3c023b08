"""The LLVM toolchain path for real, on a mini llvm-project (`tests/mini_llvm.py`).

The unchanged `toolchain-llvm` template builds a commit, a second commit that changes one
file, and a dirty working tree (an untracked file too), through `ensure_toolchain_llvm`:
the workspace volume (clone, build tree, ccache), git bundles of what the clone lacks, the
snapshot commit of a dirty tree, configure, `ninja distribution`, the stripped
distribution install, the `--version` check, the container committed, labels and tag.
Only LLVM's own CMake is replaced.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import docker.errors
import pytest
from mini_llvm import (
    DISTRIBUTION_FILES,
    DISTRIBUTION_SYMLINKS,
    INITIAL_MESSAGE,
    MiniLlvm,
    make_mini_llvm,
    version_line,
)

from orchestrator import engine as engine_api
from orchestrator.core.events import Event, Message
from orchestrator.images import builder, toolchain
from orchestrator.images.catalog import probe
from orchestrator.images.toolchain_llvm import (
    CONTENT_FILE,
    ensure_environment,
    ensure_toolchain_llvm,
    prefix_for,
    workspace_volume,
)

pytestmark = pytest.mark.engine

HOST_FLAG = "-fno-unroll-loops"  # the second commit's "backend change"
DEVICE_FLAG = "-fno-unroll-loops"  # the dirty tree's, on the HIP device side only
STEP = re.compile(r"^\[\d+/\d+\] (.+)$")
#: What ninja runs after a commit that changes ExtraFlags.cpp: clang's revision header
#: (its command names the new revision), the two sources, libclang-cpp.so and what links
#: it. libLLVM.so, lld and the LLVM tools depend on neither: not relinked.
INCREMENTAL_STEPS = {
    "Generating VCSVersion.inc",
    "Building CXX object tools/clang/lib/Basic/CMakeFiles/obj.clangBasic.dir/Version.cpp.o",
    "Building CXX object tools/clang/lib/Driver/CMakeFiles/obj.clangDriver.dir/ExtraFlags.cpp.o",
    "Linking CXX shared library lib/libclang-cpp.so.23.0git",
    "Creating library symlink lib/libclang-cpp.so",
    "Linking CXX executable bin/clang-offload-bundler",
    "Linking CXX executable bin/clang",
}
INCREMENTAL_SUMMARY = re.compile(
    r"^ninja: \d+ of \d+ steps, compiled 2 files: (tools/clang/lib/Basic/Version\.cpp, "
    r"tools/clang/lib/Driver/ExtraFlags\.cpp|tools/clang/lib/Driver/ExtraFlags\.cpp, "
    r"tools/clang/lib/Basic/Version\.cpp)$"
)
UNTRACKED = "clang/lib/Driver/NewPass.cpp"  # the dirty tree's new file, never git-added
OMP_PROGRAM = r"""
#include <cstdio>
#include <omp.h>
int main() {
  long sum = 0;
  int threads = 0;
#pragma omp parallel reduction(+ : sum)
  {
#pragma omp single
    threads = omp_get_num_threads();
#pragma omp for
    for (int i = 1; i <= 1000; ++i) sum += i;
  }
  std::printf("threads=%d sum=%ld\n", threads, sum);
}
"""


@dataclass
class Build:
    tag: str
    revision: str  # what CLANG_VC_REVISION was
    prefix: str
    seconds: float
    messages: list[str] = field(default_factory=list)

    def steps(self) -> list[str]:
        return [m[1] for line in self.messages if (m := STEP.match(line))]

    def ninja(self) -> str:
        summary = re.compile(r"^ninja: (\d+ of \d+ steps|no work to do)")
        return next((line for line in self.messages if summary.match(line)), "no summary")


@dataclass
class Builds:
    repo: MiniLlvm
    volume: str
    environment: str
    builder_seconds: float
    first: Build
    second: Build
    dirty: Build


def _build(engine: Any, settings: Any, rev: str, revision: str, label: str) -> Build:
    said: list[Event] = []
    started = time.monotonic()
    tag = ensure_toolchain_llvm(engine, settings, rev, emit=said.append)
    seconds = time.monotonic() - started
    texts = [e.text for e in said if isinstance(e, Message)]
    return Build(tag, revision, prefix_for(label), seconds, texts)


@pytest.fixture(scope="module")
def builds(engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Builds]:
    from orchestrator.core.settings import load_settings

    root = tmp_path_factory.mktemp("mini-llvm")
    # A message of its own: hashes no earlier run had, so BuildKit must build, not reuse.
    repo = make_mini_llvm(root / "llvm-project", f"{INITIAL_MESSAGE} ({uuid.uuid4().hex})")
    settings = load_settings(
        platform="cpu", results_dir=root / "results", llvm_source=str(repo.path)
    )
    started = time.monotonic()
    builder.ensure_builder(engine, settings)
    builder_seconds = time.monotonic() - started
    tags: list[str] = []
    try:
        first = repo.head()
        one = _build(engine, settings, first, first, first[:8])
        tags.append(one.tag)
        second = repo.commit("Add a host flag", host_flags=[HOST_FLAG])
        two = _build(engine, settings, second[:12], second, second[:8])
        tags.append(two.tag)
        repo.edit(device_flags=[DEVICE_FLAG])
        (repo.path / UNTRACKED).write_text("// new, untracked: the build must see it\n")
        dirty = _build(engine, settings, str(repo.path), f"{second}-dirty", f"{second[:8]}-dirty")
        tags.append(dirty.tag)
        print(f"\nbuilder base {builder_seconds:.1f} s")
        for what, build in (("first commit", one), ("second commit", two), ("dirty tree", dirty)):
            print(f"{what}: {build.tag} in {build.seconds:.1f} s; {build.ninja()}")
        environment = ensure_environment(engine, settings)
        volume = workspace_volume(settings, environment, str(repo.path))
        yield Builds(repo, volume, environment.tag, builder_seconds, one, two, dirty)
    finally:
        for tag in tags:
            engine.images.remove(tag, noprune=False)
        environment = ensure_environment(engine, settings)
        with contextlib.suppress(docker.errors.NotFound):
            engine.volumes.get(workspace_volume(settings, environment, str(repo.path))).remove()


def _sh(engine: Any, build: Build, script: str) -> str:
    code, out = probe(engine, build.tag, ["bash", "-c", script])
    assert code == 0, f"{script!r} in {build.tag} exited {code}:\n{out}"
    return out


def _version_lines(build: Build, repository: str) -> list[str]:
    return [
        version_line(build.revision, repository),
        f"Target: {platform.machine()}-unknown-linux-gnu",
        "Thread model: posix",
        f"InstalledDir: {build.prefix}/bin",
    ]


def test_version_names_the_commit_as_real_clang(engine: Any, builds: Builds) -> None:
    repository = str(builds.repo.path)
    for build in (builds.first, builds.second, builds.dirty):
        for driver in ("clang", "clang++"):
            out = _sh(engine, build, f"{build.prefix}/bin/{driver} --version")
            assert out.splitlines() == _version_lines(build, repository), build.tag
        compiler = toolchain.compiler_of(engine, build.tag)
        assert compiler.version == version_line(build.revision, repository)
        assert compiler.cxx == f"{build.prefix}/bin/clang++"
    assert builds.dirty.revision.endswith("-dirty")
    assert "-dirty-" in builds.dirty.tag
    assert toolchain.compiler_of(engine, builds.dirty.tag).llvm_dirty


def test_clang_builds_and_links_an_openmp_program(engine: Any, builds: Builds) -> None:
    bin_dir = f"{builds.first.prefix}/bin"
    out = _sh(
        engine,
        builds.first,
        f"cd /tmp && cat > omp.cpp <<'EOF'\n{OMP_PROGRAM}\nEOF\n"
        f"{bin_dir}/clang++ -fopenmp -O2 --ld-path={bin_dir}/ld.lld omp.cpp -o omp "
        "&& OMP_NUM_THREADS=3 ./omp && readelf -p .comment omp",
    )
    assert "threads=3 sum=500500" in out
    assert "Linker: " in out and "LLD" in out  # linked by ld.lld, through ours
    lld = _sh(engine, builds.first, f"{bin_dir}/ld.lld --version")
    assert "LLD" in lld and "compatible with GNU linkers" in lld
    generic = probe(engine, builds.first.tag, [f"{bin_dir}/lld"])
    assert generic[0] == 1 and "lld is a generic driver" in generic[1]


CMAKE_PROJECT = """
cmake_minimum_required(VERSION 3.16)
project(omp LANGUAGES C CXX)
find_package(OpenMP REQUIRED)
add_executable(omp omp.cpp)
target_link_libraries(omp PRIVATE OpenMP::OpenMP_CXX)
"""


def test_cmake_takes_it_as_c_and_cxx_compiler_with_openmp(engine: Any, builds: Builds) -> None:
    """What GROMACS's CMake asks of a compiler; the second toolchain adds its host flag."""
    bin_dir = f"{builds.second.prefix}/bin"
    out = _sh(
        engine,
        builds.second,
        f"mkdir /tmp/p && cd /tmp/p && cat > omp.cpp <<'EOF'\n{OMP_PROGRAM}\nEOF\n"
        f"cat > CMakeLists.txt <<'EOF'\n{CMAKE_PROJECT}\nEOF\n"
        f"cmake -S . -B b -G Ninja -DCMAKE_C_COMPILER={bin_dir}/clang "
        f"-DCMAKE_CXX_COMPILER={bin_dir}/clang++ && ninja -C b -v && OMP_NUM_THREADS=2 b/omp",
    )
    assert "The C compiler identification is Clang 16." in out
    assert "The CXX compiler identification is Clang 16." in out
    assert "Found OpenMP_CXX: -fopenmp" in out
    assert f"{bin_dir}/clang++ " in out  # ninja -v: the compile and link lines
    assert "threads=2 sum=500500" in out


def test_second_commit_rebuilds_only_the_changed_file(builds: Builds) -> None:
    first_steps = builds.first.steps()
    assert first_steps, "the first build ran no ninja step"
    assert builds.first.ninja().startswith(f"ninja: {len(first_steps)} of ")
    assert set(builds.second.steps()) == INCREMENTAL_STEPS, builds.second.steps()
    assert INCREMENTAL_SUMMARY.match(builds.second.ninja()), builds.second.ninja()


def test_dirty_tree_rebuilds_only_the_changed_file(builds: Builds) -> None:
    assert set(builds.dirty.steps()) == INCREMENTAL_STEPS, builds.dirty.steps()
    assert INCREMENTAL_SUMMARY.match(builds.dirty.ninja()), builds.dirty.ninja()


def test_each_build_sends_only_what_the_clone_lacks(engine: Any, builds: Builds) -> None:
    """A bundle of the new objects per commit; the dirty tree's untracked file arrives."""
    checkouts = [
        next(line for line in build.messages if line.startswith("checkout: "))
        for build in (builds.first, builds.second, builds.dirty)
    ]
    assert checkouts[1].startswith("checkout: 1 files differ"), checkouts
    assert checkouts[2].startswith("checkout: 2 files differ"), checkouts  # + the new file
    assert any("the objects the clone lacks" in line for line in builds.second.messages)
    code, out = engine_api.run_capture(
        engine, builds.environment,
        ["bash", "-c", f"test -f /llvm/src/{UNTRACKED} && "
         "git --git-dir=/llvm/git --work-tree=/llvm/src status --porcelain"],
        volumes={builds.volume: {"bind": "/llvm", "mode": "ro"}},
    )  # fmt: skip
    assert code == 0 and out.strip() == "", out


def test_the_toolchain_is_the_stripped_distribution(engine: Any, builds: Builds) -> None:
    """What `install-distribution-stripped` installs, not `ninja install`'s every library."""
    listing = _sh(engine, builds.first, f"cd {builds.first.prefix} && find . ! -type d | sort")
    found = {line.removeprefix("./") for line in listing.splitlines()}
    expected = set(DISTRIBUTION_FILES) | set(DISTRIBUTION_SYMLINKS) | {CONTENT_FILE}
    assert found == expected, sorted(found)
    digest = _sh(engine, builds.first, f"cat {builds.first.prefix}/{CONTENT_FILE}").strip()
    compiler = toolchain.compiler_of(engine, builds.first.tag)
    assert compiler.content_sha256 == digest and len(digest) == 64  # the compile cache's key


def _cc1_lines(engine: Any, build: Build, args: str) -> list[str]:
    script = f"cd /tmp && echo 'int f() {{ return 1; }}' > x.cpp && {build.prefix}/bin/clang++"
    out = _sh(engine, build, f"{script} -### -c {args} x.cpp 2>&1")
    return [line for line in out.splitlines() if '"-cc1"' in line]


def test_each_toolchain_adds_its_own_flags(engine: Any, builds: Builds) -> None:
    hip = "-x hip --offload-arch=gfx90a -nogpulib -nogpuinc"
    flag = f'"{HOST_FLAG}"'
    device = f'"{DEVICE_FLAG}"'

    (plain,) = _cc1_lines(engine, builds.first, "")
    assert flag not in plain
    (plain,) = _cc1_lines(engine, builds.second, "")
    assert flag in plain
    (plain,) = _cc1_lines(engine, builds.dirty, "")
    assert flag not in plain  # the dirty tree dropped the host flag

    for build, on_host, on_device in (
        (builds.first, False, False),
        (builds.second, True, False),
        (builds.dirty, False, True),
    ):
        lines = _cc1_lines(engine, build, hip)
        device_line = next(line for line in lines if '"amdgcn-amd-amdhsa" "-aux-triple"' in line)
        host_line = next(line for line in lines if '"-aux-triple" "amdgcn-amd-amdhsa"' in line)
        assert (flag in host_line) == on_host, (build.tag, host_line)
        assert (device in device_line) == on_device, (build.tag, device_line)


def test_plan_says_what_a_commit_would_rebuild_and_builds_nothing(
    engine: Any, builds: Builds, tmp_path: Any
) -> None:
    """`build toolchain --llvm <commit> --plan` after the dirty build: going back to the
    second commit would recompile the two files the dirty tree changed, and nothing is
    tagged (ninja -n in the workspace)."""
    second = builds.repo.head()
    env = {
        **os.environ, "ORCH_PLATFORM": "cpu", "ORCH_LLVM_SOURCE": str(builds.repo.path),
        "ORCH_RESULTS_DIR": str(tmp_path / "results"),
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "toolchain", "--llvm", second[:12],
         "--plan"], env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary, links = done.stdout.splitlines()[-2:]
    assert INCREMENTAL_SUMMARY.match(summary), done.stdout
    assert "bin/clang" in links and "lib/libclang-cpp.so.23.0git" in links
    assert "Traceback" not in done.stderr
