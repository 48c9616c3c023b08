"""Several AMD GPU targets in one build: the flags, tags and preflight that carry them.

The CMake flags are checked against GROMACS 2026.3's own CMake code (run by the host's
cmake, from the shared tarball); the preflight runs the runner's real path on an image
labelled as a two-target build, with a fake KFD topology standing in for the host's GPU.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import gromacs_2026_source

from orchestrator import engine as engine_mod
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import ignore
from orchestrator.core.settings import IMAGE_REF, Settings, load_settings
from orchestrator.images.catalog import label_and_tag, new_record
from orchestrator.images.gromacs import dev_build_name, gromacs_ref, refuse_long_name
from orchestrator.images.provenance import ImageRecord
from orchestrator.platforms.base import Compiler
from orchestrator.platforms.rocm import RocmPlatform
from orchestrator.platforms.rocm.targets import detect_gpu_arch
from orchestrator.runs.runner import RunRequest, execute, plan_run

GOLDEN = Path(__file__).parent / "golden"
TWO = "gfx1201,gfx942"
DEV = Compiler(
    name="llvm-d7fead0f", cc="clang", cxx="clang++", hip="/opt/llvm-d7fead0f/bin/clang++"
)


def rocm(gpu_arch: str | None, stack: str = "debian") -> Settings:
    return load_settings(platform="rocm", rocm_stack=stack, gpu_arch=gpu_arch)


def offload(flags: list[str]) -> list[str]:
    return [f for f in flags if f.startswith("--offload-arch")]


def test_microbenchmarks_compile_for_every_target_of_the_image() -> None:
    """A microbenchmark image compiles `bandwidth` for each target its GROMACS image holds (its
    `gpu_arch` label), one `--offload-arch=` per target, primary first."""
    settings = rocm("gfx1100")
    labels = {"rocm_stack": "debian", "gpu_arch": "gfx1201,gfx942,gfx90a"}
    flags = RocmPlatform().codegen.microbench_compiler(settings, labels).flags
    assert offload(flags) == [
        "--offload-arch=gfx1201", "--offload-arch=gfx942", "--offload-arch=gfx90a",
    ]  # fmt: skip
    unlabelled = (
        RocmPlatform().codegen.microbench_compiler(settings, {"rocm_stack": "debian"}).flags
    )
    assert offload(unlabelled) == ["--offload-arch=gfx1100"]


@pytest.mark.parametrize("stack", ["debian", "amd"])
def test_cmake_flags_compile_every_hip_unit_for_each_target(stack: str) -> None:
    """One build for every target: `--offload-arch=` once each in CMAKE_HIP_FLAGS, the
    CMake lists `;`-separated, GROMACS's own list comma-separated, each target's hipcc
    check answered. AMD's stable build keeps the vendor's defaults: only the GROMACS list."""
    platform = RocmPlatform()
    dev = platform.build.cmake_flags(rocm(TWO, stack), "dev", DEV, "/opt/gromacs/x")
    (hip,) = [f for f in dev if f.startswith("-DCMAKE_HIP_FLAGS=")]
    assert offload(hip.split()) == ["--offload-arch=gfx1201", "--offload-arch=gfx942"]
    assert "-DGMX_HIP_TARGET_ARCH=gfx1201,gfx942" in dev
    assert "-DCMAKE_HIP_ARCHITECTURES=gfx1201;gfx942" in dev
    assert "-DGPU_TARGETS=gfx1201;gfx942" in dev
    checked = [f for f in dev if f.startswith("-DHIPCC_HAS_TARGET_ARCH_")]
    assert checked == [
        "-DHIPCC_HAS_TARGET_ARCH_gfx1201=TRUE",
        "-DHIPCC_HAS_TARGET_ARCH_gfx942=TRUE",
    ]
    stable_compiler = platform.build.stable_compiler(rocm(TWO, stack), lambda argv: (0, ""))
    stable = platform.build.cmake_flags(
        rocm(TWO, stack), "stable", stable_compiler, "/opt/gromacs/x"
    )
    assert "-DGMX_HIP_TARGET_ARCH=gfx1201,gfx942" in stable
    explicit = stack == "debian"  # Debian's stable takes the dev build's HIP flags
    assert ("-DGPU_TARGETS=gfx1201;gfx942" in stable) == explicit
    single = platform.build.cmake_flags(rocm("gfx1201", stack), "dev", DEV, "/opt/gromacs/x")
    assert [f for f in single if "gfx" in f] == [
        f.replace("--offload-arch=gfx1201 --offload-arch=gfx942", "--offload-arch=gfx1201")
        .replace(",gfx942", "").replace(";gfx942", "")
        for f in dev if "gfx" in f and "gfx942=TRUE" not in f
    ]  # fmt: skip


def _gromacs_hip_cmake() -> str:
    """GROMACS 2026.3's own parsing of the target list: its two functions and the RDNA
    switch of cmake/gmxManageHipccConfig.cmake, as a `cmake -P` script that prints what
    they decided."""
    source = gromacs_2026_source()
    with tarfile.open(source.path) as tar:
        member = tar.extractfile("gromacs-2026.3/cmake/gmxManageHipccConfig.cmake")
        assert member is not None
        text = member.read().decode()
    names = "gmx_add_hipcc_flag_if_supported|gmx_check_hip_architectures"
    functions = re.findall(rf"^function\((?:{names})\b.*?^endfunction\(\)", text, re.S | re.M)
    start = text.index('gmx_check_hip_architectures("${GMX_HIP_TARGET_ARCH}")')
    end = text.index("mark_as_advanced(GMX_ENABLE_AMD_RDNA_SUPPORT)")
    report = "".join(
        f'message(STATUS "{name}=${{{name}}}")\n'
        for name in (
            "CMAKE_HIP_ARCHITECTURES",
            "GMX_HIP_HIPCC_FLAGS",
            "GMX_ENABLE_AMD_RDNA_SUPPORT",
        )
    )
    return "\n".join(functions) + "\nset(GMX_HIP_HIPCC_FLAGS)\n" + text[start:end] + "\n" + report


def test_gromacs_reads_the_rendered_target_list(tmp_path: Path) -> None:
    """The `-D` arguments of the rendered dev Dockerfile for gfx1201,gfx942, as the shell
    splits its RUN line, given to GROMACS 2026.3's CMake code: both targets accepted
    (without running hipcc), one `--offload-arch` each, RDNA support switched on. A
    `;`-separated GMX_HIP_TARGET_ARCH would split GROMACS's unquoted `if` instead."""
    script = tmp_path / "targets.cmake"
    script.write_text(_gromacs_hip_cmake())
    golden = GOLDEN / "gromacs-dev-rocm@debian-gfx1201_gfx942.Dockerfile"  # = the render
    joined = golden.read_text().replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if "cmake -S /src/gromacs" in x)
    defines = [w for w in shlex.split(line) if w.startswith("-D")]
    proc = subprocess.run(["cmake", "-DHIP_VERSION=7.0.2", *defines, "-P", str(script)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    said = dict(x.removeprefix("-- ").split("=", 1) for x in proc.stdout.splitlines() if "=" in x)
    assert said["CMAKE_HIP_ARCHITECTURES"] == "gfx1201;gfx942"
    assert said["GMX_HIP_HIPCC_FLAGS"] == "--offload-arch=gfx1201;--offload-arch=gfx942"
    assert said["GMX_ENABLE_AMD_RDNA_SUPPORT"] == "ON"
    semicolons = [d.replace("gfx1201,gfx942", "gfx1201;gfx942") for d in defines]
    proc = subprocess.run(["cmake", "-DHIP_VERSION=7.0.2", *semicolons, "-P", str(script)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode != 0 and "Unknown arguments specified" in proc.stderr


def test_tags_carry_the_targets_unless_they_are_the_default() -> None:
    """Today's names stay for gfx1201 alone; any other list is in the name, primary
    first, as a valid Docker tag; the record holds the list and gives it back."""
    platform = RocmPlatform()
    default, two = rocm("gfx1201"), rocm(TWO)
    stable = platform.build.stable_compiler(default, lambda argv: (0, ""))
    assert platform.build.stable_build_name(default, stable) == "stable-rocm-debian-clang21"
    assert (
        platform.build.stable_build_name(two, stable) == "stable-rocm-debian-clang21-gfx1201_gfx942"
    )
    assert (
        platform.build.stable_build_name(rocm("gfx942"), stable)
        == "stable-rocm-debian-clang21-gfx942"
    )
    amd = rocm("gfx90a,gfx1201", stack="amd")
    assert platform.build.stable_build_name(amd, stable) == "stable-rocm7.12-gfx90a_gfx1201"
    from datetime import UTC, datetime

    when = datetime(2026, 5, 16, 2, 43, tzinfo=UTC)
    assert dev_build_name(DEV, when, platform.build.build_suffix(default)) == (
        "dev-llvm-d7fead0f-20260516-0243"
    )
    name = dev_build_name(DEV, when, platform.build.build_suffix(two))
    assert name == "dev-llvm-d7fead0f-gfx1201_gfx942-20260516-0243"
    assert IMAGE_REF.match(gromacs_ref(name))
    assert platform.build.gpu_target(two) == TWO
    record = ImageRecord(tag=gromacs_ref(name), id="sha256:1", build=name, gpu_arch=TWO)
    again = ImageRecord.from_labels(record.tag, record.id, record.labels())
    assert again.labels()["gmxbench.gpu_arch"] == TWO
    assert again.gpu_archs == ["gfx1201", "gfx942"] and ImageRecord(tag="t", id="i").gpu_archs == []


def test_a_name_too_long_for_a_docker_tag_is_refused() -> None:
    many = ",".join(f"gfx{n}" for n in range(1100, 1115))
    name = dev_build_name(DEV, None, RocmPlatform().build.build_suffix(rocm(many)))
    assert len(name) > 128
    with pytest.raises(UsageError, match=r"more than the 128 a Docker tag allows.*fewer targets"):
        refuse_long_name(name, rocm(many))
    refuse_long_name(
        dev_build_name(DEV, None, RocmPlatform().build.build_suffix(rocm(TWO))), rocm(TWO)
    )


# The host's GPU against the image's targets --------------------------------------------

#: A KFD topology node's properties as the amdgpu driver writes them (abridged).
NODE = """cpu_cores_count 0
simd_count 256
mem_banks_count 1
gfx_target_version {version}
vendor_id 4098
device_id 29772
location_id 768
drm_render_minor 128
"""


def fake_host(root: Path, version: int) -> RocmPlatform:
    """A ROCm platform whose /dev has the GPU's nodes and whose KFD topology has a CPU
    node and one GPU of `gfx_target_version` `version` (120001 is gfx1201)."""
    dev = root / "dev"
    (dev / "dri").mkdir(parents=True, exist_ok=True)
    for node in ("kfd", "dri/renderD128"):
        (dev / node).touch()
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    for index, value in enumerate((0, version)):
        (nodes / str(index)).mkdir(parents=True, exist_ok=True)
        (nodes / str(index) / "properties").write_text(NODE.format(version=value))
    return RocmPlatform(dev_root=dev, sys_root=root)


@pytest.mark.parametrize(
    ("version", "target"), [(120001, "gfx1201"), (90402, "gfx942"), (90010, "gfx90a")]
)
def test_the_host_target_is_read_from_the_kfd_topology(
    tmp_path: Path, version: int, target: str
) -> None:
    assert detect_gpu_arch(fake_host(tmp_path, version).run.sys_root) == target
    assert detect_gpu_arch(tmp_path / "elsewhere") is None


@pytest.fixture
def two_target_image(engine: Any, tmp_path: Path) -> Iterator[str]:
    """An image labelled as a dev build for gfx1201,gfx942 (no GROMACS inside: the
    preflight reads labels only), named by the real naming code; removed after."""
    settings = load_settings(platform="rocm", rocm_stack="debian", gpu_arch=TWO,
                             results_dir=tmp_path / "results")  # fmt: skip
    uid = uuid.uuid4().hex[:8]
    compiler = DEV.model_copy(update={"name": f"llvm-{uid}"})
    build = dev_build_name(compiler, None, RocmPlatform().build.build_suffix(settings))
    base = engine_mod.build(engine, f"FROM scratch\nLABEL gmxbench.test=targets-{uid}\n",
                            what="targets test image")  # fmt: skip
    record = new_record(settings, "gromacs", gromacs_ref(build), base, f"targets-{uid}",
                        build=build, gpu_arch=RocmPlatform().build.gpu_target(settings),
                        rocm_stack="debian")  # fmt: skip
    label_and_tag(engine, base, record, [record.tag], ignore)
    try:
        yield build
    finally:
        engine_mod.remove_image(engine, record.tag)  # its untagged parent goes with it
        if engine_mod.image(engine, base) is not None:
            engine_mod.remove_image(engine, base)


@pytest.mark.engine
def test_a_gpu_outside_the_images_targets_is_refused_before_any_container(
    engine: Any, two_target_image: str, tmp_path: Path
) -> None:
    """The runner's own path (`plan_run`, `execute`) on a host whose GPU is gfx90a: one
    paragraph naming the image, its targets, the host's and the fix, no container, no
    run directory. The same image on a gfx942 host passes: the list holds its target."""
    settings = load_settings(platform="rocm", results_dir=tmp_path / "results")
    request = RunRequest(build=two_target_image, system="water:3k", tag="targets")
    before = {c.id for c in engine.containers.list(all=True)}
    gfx90a = fake_host(tmp_path / "gfx90a", 90010)
    plan = plan_run(engine, settings, request, platform=gfx90a)
    with pytest.raises(UserError) as refused:
        execute(engine, settings, plan)
    image = gromacs_ref(two_target_image)
    assert refused.value.message == (
        f"Preflight failed, no container was started: the image {image} holds GPU code for "
        "gfx1201,gfx942 only, but this host's GPU is gfx90a, which it cannot run; rebuild it "
        "with that target added (ORCH_GPU_ARCH=gfx1201,gfx942,gfx90a, or --gpu-arch "
        "gfx1201,gfx942,gfx90a on build or bench), or run this build on the CPU with --cpu-only."
    )
    assert {c.id for c in engine.containers.list(all=True)} == before
    assert not plan.run_dir.exists()
    gfx942 = fake_host(tmp_path / "gfx942", 90402)
    assert plan_run(engine, settings, request, platform=gfx942).problems == []
    gfx1201 = fake_host(tmp_path / "gfx1201", 120001)
    assert plan_run(engine, settings, request, platform=gfx1201).problems == []
