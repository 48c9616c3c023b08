"""Rendered Dockerfiles: exact golden text (hpccm style) plus the recipe properties.

The goldens in tests/golden/ are renders of `example_context` with settings spelled
out here, so no ORCH_* variable, orchestrator.toml or host GPU changes them. After a
deliberate template change, regenerate them with `python tests/update_golden.py`
(or `UPDATE_GOLDEN=1 python -m pytest tests/test_templates.py`) and review the diff.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import GROMACS_2026_RELEASE, Settings
from orchestrator.images.blocks import example_context
from orchestrator.images.render import render, render_script, templates, uses_buildkit
from orchestrator.images.toolchain_llvm import COMPONENTS, configure_line
from orchestrator.platforms.rocm.stacks import STACKS, code_object_flag

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
ROCM = "/opt/rocm/core-7.12"
ARCH = "gfx1201"
PREFIX_MAP = "-ffile-prefix-map=/src/gromacs=. -ffile-prefix-map=/build/gromacs=build"
#: The ROCm platform on Debian's ROCm packages, GROMACS from a local tarball.
DEBIAN: dict[str, Any] = {
    "platform": "rocm",
    "rocm_stack": "debian",
    "gromacs": {"url": "/srv/gromacs-2026.3.tar.gz", "ref": "v2026.3", "sha256": "c" * 64},
}
#: The CUDA platform on Debian's CUDA toolkit, for the default sm_90.
CUDA: dict[str, Any] = {"platform": "cuda", "gpu_arch": "sm_90"}
#: The compile cache's launchers: how objects are made, not what (checked on their own).
LAUNCHER = re.compile(r"^-DCMAKE_[A-Z]+_COMPILER_LAUNCHER=ccache$")

#: Golden name -> (template, settings). Every template has one under its own name;
#: `<template>@<variant>` pins another rendering of the same template.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "cpu-base": ("cpu-base", {"platform": "cpu"}),
    "rocm-base": ("rocm-base", {"platform": "rocm"}),
    "toolchain-package": ("toolchain-package", {"platform": "cpu"}),
    "toolchain-llvm": ("toolchain-llvm", {"platform": "rocm"}),
    "toolchain-llvm@cpu": ("toolchain-llvm", {"platform": "cpu"}),
    "gromacs-stable-cpu": ("gromacs-stable-cpu", {"platform": "cpu"}),
    "gromacs-dev-cpu": ("gromacs-dev-cpu", {"platform": "cpu"}),
    "gromacs-stable-rocm": ("gromacs-stable-rocm", {"platform": "rocm"}),
    "gromacs-dev-rocm": ("gromacs-dev-rocm", {"platform": "rocm"}),
    "rocm-debian-base": ("rocm-debian-base", {"platform": "rocm", "rocm_stack": "debian"}),
    "gromacs-stable-rocm@debian": ("gromacs-stable-rocm", DEBIAN),
    "gromacs-dev-rocm@debian": ("gromacs-dev-rocm", DEBIAN),
    # one build for two GPU targets (ORCH_GPU_ARCH=gfx1201,gfx942): its tags carry them
    "gromacs-stable-rocm@debian-gfx1201_gfx942": (
        "gromacs-stable-rocm",
        {**DEBIAN, "gpu_arch": "gfx1201,gfx942"},
    ),
    "gromacs-dev-rocm@debian-gfx1201_gfx942": (
        "gromacs-dev-rocm",
        {**DEBIAN, "gpu_arch": "gfx1201,gfx942"},
    ),
    "cuda-base": ("cuda-base", CUDA),
    "gromacs-stable-cuda": ("gromacs-stable-cuda", CUDA),
    "gromacs-dev-cuda": ("gromacs-dev-cuda", CUDA),
    # one build for two GPU targets: CMake's list, and the tags carry them
    "gromacs-stable-cuda@sm_90_sm_80": ("gromacs-stable-cuda", {**CUDA, "gpu_arch": "sm_90,sm_80"}),
    "kernel-bandwidth": ("kernel-bandwidth", {"platform": "cpu"}),
    "kernel-bandwidth@rocm": ("kernel-bandwidth", {"platform": "rocm"}),
    "kernel-bandwidth@debian": ("kernel-bandwidth", DEBIAN),
    "kernel-tune": ("kernel-tune", {"platform": "cpu"}),
    "kernel-user": ("kernel-user", {"platform": "cpu"}),
    "kernel-user@debian": ("kernel-user", DEBIAN),
}

#: The issue's recipes, written out here rather than taken from buildspec.
STABLE_ROCM = [
    "-G",
    "Ninja",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGMX_GPU=HIP",
    f"-DCMAKE_HIP_COMPILER={ROCM}/bin/amdclang++",
    f"-DCMAKE_HIP_COMPILER_ROCM_ROOT={ROCM}",
    f"-DGMX_HIP_TARGET_ARCH={ARCH}",
    f"-DCMAKE_PREFIX_PATH={ROCM}",
    f"-DCMAKE_C_FLAGS={PREFIX_MAP}",
    f"-DCMAKE_CXX_FLAGS={PREFIX_MAP}",
    "-DGMX_MPI=OFF",
    "-DGMX_OPENMP=ON",
    "-DGMX_BUILD_OWN_FFTW=OFF",
    "-DGMX_DOUBLE=OFF",
    "-DGMX_SIMD=AVX2_256",
    "-DGMX_USE_RDTSCP=ON",
    "-DCMAKE_INSTALL_PREFIX=/opt/gromacs/stable-rocm7.12",
]
HIP_FLAGS = [
    f"--rocm-path={ROCM}",
    f"--offload-arch={ARCH}",
    "-fPIC",
    "-fno-gpu-rdc",
    "-ffast-math",
    "-munsafe-fp-atomics",
    "-fdenormal-fp-math=ieee",
    "-fcuda-flush-denormals-to-zero",
    "-fno-slp-vectorize",
    "-Wno-unused-command-line-argument",
    "-Wno-pass-failed",
]
DEV_ONLY = [
    f"-DCMAKE_HIP_ARCHITECTURES={ARCH}",
    f"-DGPU_TARGETS={ARCH}",
    f"-DHIPCC_HAS_TARGET_ARCH_{ARCH}=TRUE",
]
DEV_ROCM = [
    *(a for a in STABLE_ROCM if not a.startswith(("-DCMAKE_HIP_COMPILER=", "-DCMAKE_INSTALL"))),
    "-DCMAKE_HIP_COMPILER=/opt/llvm-d7fead0f/bin/clang++",
    "-DCMAKE_INSTALL_PREFIX=/opt/gromacs/dev-llvm-d7fead0f-20260516-0243",
    *DEV_ONLY,
]


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ORCH_* variable and no orchestrator.toml / pyproject.toml in the working dir."""
    for name in list(os.environ):
        if name.startswith("ORCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def settings(platform: str, **overrides: Any) -> Settings:
    """Explicit settings: every value a render depends on is spelled out."""
    values: dict[str, Any] = {
        "platform": platform,
        "rocm_version": "7.12",
        "gpu_arch": ARCH,
        "simd": "AVX2_256",
        "llvm_source": "https://github.com/llvm/llvm-project.git",
        **overrides,
    }
    return Settings(**values)


def rendered(name: str) -> str:
    template, values = CASES[name]
    return render(template, example_context(template, settings(**values)))


def cmake_args(dockerfile: str) -> list[str]:
    """The arguments of the GROMACS `cmake -S ... -B ...` call, as the shell sees them."""
    joined = dockerfile.replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if "cmake -S /src/gromacs" in x)
    words = shlex.split(line)
    start = words.index("-B") + 2
    return [w for w in words[start : words.index("&&", start)] if not LAUNCHER.match(w)]


def test_every_template_has_a_golden() -> None:
    assert {template for template, _ in CASES.values()} == set(templates())
    if not UPDATE:
        on_disk = {p.name.removesuffix(".Dockerfile") for p in GOLDEN.glob("*.Dockerfile")}
        assert on_disk == set(CASES), "stale or missing goldens: run tests/update_golden.py"


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden(name: str) -> None:
    text = rendered(name)
    path = GOLDEN / f"{name}.Dockerfile"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"golden/{path.name}",
                tofile="rendered",
            )
        )
        pytest.fail(
            f"{name} differs from its golden (tests/update_golden.py if deliberate):\n{diff}"
        )


@pytest.mark.usefixtures("isolated")
def test_rocm_stable_has_the_stable_recipe_and_no_dev_flags() -> None:
    args = cmake_args(rendered("gromacs-stable-rocm"))
    assert sorted(args) == sorted(STABLE_ROCM)
    assert args[:2] == ["-G", "Ninja"]
    assert not [a for a in args if a.startswith("-DCMAKE_HIP_FLAGS")]
    assert not set(args) & set(DEV_ONLY)


@pytest.mark.usefixtures("isolated")
def test_rocm_dev_has_every_dev_flag() -> None:
    args = cmake_args(rendered("gromacs-dev-rocm"))
    hip = [a for a in args if a.startswith("-DCMAKE_HIP_FLAGS=")]
    assert len(hip) == 1
    assert sorted(a for a in args if a not in hip) == sorted(DEV_ROCM)
    tokens = hip[0].removeprefix("-DCMAKE_HIP_FLAGS=").split()
    assert tokens[: len(HIP_FLAGS)] == HIP_FLAGS
    assert tokens[len(HIP_FLAGS) :] == [
        f"--rocm-device-lib-path={ROCM}/lib/llvm/amdgcn/bitcode",
        "-mcode-object-version=6",  # the stable compiler's default (the setting unset)
        *PREFIX_MAP.split(),
    ]


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("stack", ["amd", "debian"])
def test_dev_code_object_version_follows_stable_unless_set(stack: str) -> None:
    """Dev builds get the stable compiler's code-object version (6: Debian's clang 21,
    measured; AMD's assumed the same), or the setting's; stable builds keep their default."""
    values = {**CASES[f"gromacs-dev-rocm{'@debian' if stack == 'debian' else ''}"][1]}
    for setting, flag in ((None, "-mcode-object-version=6"), (5, "-mcode-object-version=5")):
        chosen = settings(**values, code_object_version=setting)
        assert code_object_flag(chosen) == flag
        dev = cmake_args(render("gromacs-dev-rocm", example_context("gromacs-dev-rocm", chosen)))
        hip = next(a for a in dev if a.startswith("-DCMAKE_HIP_FLAGS="))
        assert [t for t in hip.split() if "code-object" in t] == [flag]
        stable = render("gromacs-stable-rocm", example_context("gromacs-stable-rocm", chosen))
        assert "code-object" not in stable


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize(
    ("platform", "values", "keys"),
    [
        ("cpu", {"platform": "cpu"}, ("build_name", "compiler_image", "cxx", "cc")),
        ("rocm", DEBIAN, ("build_name", "compiler_image", "hip_compiler")),
    ],
)
def test_stable_and_dev_differ_only_in_the_compiler(
    platform: str, values: dict[str, Any], keys: tuple[str, ...]
) -> None:
    """Substituting the compiler, toolchain image and build name turns stable into dev
    (on the Debian ROCm stack too: stable is Debian's clang driven with hipcc's flags)."""
    chosen = settings(**values)
    stable_ctx = example_context(f"gromacs-stable-{platform}", chosen)
    dev_ctx = example_context(f"gromacs-dev-{platform}", chosen)
    stable = [
        x for x in render(f"gromacs-stable-{platform}", stable_ctx).splitlines() if x[:1] != "#"
    ]
    dev = [x for x in render(f"gromacs-dev-{platform}", dev_ctx).splitlines() if x[:1] != "#"]
    assert len(stable) == len(dev)
    swaps = {stable_ctx[k]: dev_ctx[k] for k in keys}
    assert all(old != new for old, new in swaps.items())
    if platform == "rocm":  # and the dev compiler told the stable one's code-object version
        flag = f" {code_object_flag(chosen)}"
        assert sum(line.count(flag) for line in dev) == 1
        dev = [line.replace(flag, "") for line in dev]
    differing = [(s, d) for s, d in zip(stable, dev, strict=True) if s != d]
    assert differing, "stable and dev renders are identical"
    for old_line, new_line in differing:
        swapped = old_line
        for old, new in swaps.items():
            swapped = re.sub(rf"(?<![\w.+-]){re.escape(old)}(?![\w.+-])", new, swapped)
        assert swapped == new_line, f"not a compiler/toolchain/build difference: {old_line!r}"
    # The source stage is shared text, so both builds reuse one cached source layer.
    second_from = next(i for i, x in enumerate(stable) if x.startswith("FROM") and i > 0)
    assert stable[:second_from] == dev[:second_from]


@pytest.mark.usefixtures("isolated")
def test_missing_variable_is_a_usage_error() -> None:
    context = example_context("gromacs-stable-rocm", settings("rocm"))
    del context["prefix"]
    with pytest.raises(UsageError, match="prefix"):
        render("gromacs-stable-rocm", context)
    llvm = example_context("toolchain-llvm", settings("rocm"))
    del llvm["components"]
    with pytest.raises(UsageError, match="components"):
        render_script("toolchain-llvm", llvm)


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("name", ["toolchain-llvm", "toolchain-llvm@cpu"])
def test_llvm_build_script_matches_golden(name: str) -> None:
    """The script the environment image carries: its golden, and bash accepts it."""
    template, values = CASES[name]
    text = render_script(template, example_context(template, settings(**values)))
    path = GOLDEN / f"{name}.sh"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name}.sh differs from its golden"
    assert text.startswith("#!/bin/bash\n")
    checked = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.usefixtures("isolated")
def test_llvm_toolchain_line_scales_to_a_real_llvm_project() -> None:
    """Issue 27's line: a stripped distribution, the dylib, clang alone names the commit,
    nothing per commit in the image or the build tree's configuration but the revision."""
    for name in ("toolchain-llvm", "toolchain-llvm@cpu"):
        template, values = CASES[name]
        context = example_context(template, settings(**values))
        dockerfile, script = render(template, context), render_script(template, context)
        assert not uses_buildkit(dockerfile)  # the build runs in a container, not a layer
        assert "COPY build-llvm.sh /usr/local/bin/gmxbench-build-llvm" in dockerfile
        line = configure_line(script)
        for flag in (
            "-DLLVM_APPEND_VC_REV=OFF",
            '"-DCLANG_VC_REPOSITORY=$REPOSITORY"',
            '"-DCLANG_VC_REVISION=$REVISION"',
            "-DLLVM_LINK_LLVM_DYLIB=ON",
            f"'-DLLVM_DISTRIBUTION_COMPONENTS={';'.join(COMPONENTS)}'",
            "-DCMAKE_INSTALL_PREFIX=/opt/llvm",
            "-DLLVM_USE_LINKER=lld",
            "-DLLVM_CCACHE_BUILD=ON",
            "-DLLVM_INCLUDE_DOCS=OFF",
            "-DCLANG_INCLUDE_DOCS=OFF",
        ):
            assert line.count(flag) == 1, (name, flag)
        assert "LLVM_FORCE_VC_REVISION" not in script  # it would relink every tool
        assert 'ninja -C "$BUILD" -j"$(nproc)" distribution' in script
        assert 'DESTDIR=/tmp/stage ninja -C "$BUILD" install-distribution-stripped' in script
        assert " install\n" not in script
    rocm = render_script("toolchain-llvm", example_context("toolchain-llvm", settings("rocm")))
    smoke = rocm[rocm.index("smoke() {") :]
    for part in ("--offload-arch=gfx1201", f"--rocm-path={ROCM}", "-mcode-object-version=6",
                 f"--rocm-device-lib-path={ROCM}/lib/llvm/amdgcn/bitcode", "exit 76"):  # fmt: skip
        assert part in smoke, part
    cpu = render_script("toolchain-llvm", example_context("toolchain-llvm", settings("cpu")))
    assert "smoke" not in cpu


@pytest.mark.usefixtures("isolated")
def test_rocm_base_environment_and_checks() -> None:
    digest = "ubuntu:24.04@sha256:" + "a" * 64
    text = render("rocm-base", example_context("rocm-base", settings("rocm", base_image=digest)))
    assert f"FROM {digest}" in text.splitlines()
    env = text[text.index("ENV ROCM_PATH") :].split("\n# ", 1)[0]
    assert env.split() == [
        "ENV",
        f"ROCM_PATH={ROCM}",
        "\\",
        f"HIP_PATH={ROCM}",
        "\\",
        f"PATH={ROCM}/bin:$PATH",
        "\\",
        f"LD_LIBRARY_PATH={ROCM}/lib",
    ]
    for needed in ("bin/rocprofv3", "bin/amdclang++", "lib/cmake/rocprim/rocprim-config.cmake"):
        assert re.search(rf"test -[xf] {ROCM}/{re.escape(needed)} \|\| missing=", text)
    assert "ln -s" not in text, "another ROCm must be refused, never relabelled"
    assert "--no-install-recommends" in text
    assert 'SHELL ["/bin/bash", "-o", "pipefail", "-c"]' in text


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("stack", ["amd", "debian"])
def test_rocm_stacks_build_the_checksummed_gromacs_2026_release(stack: str) -> None:
    """Both stacks default to upstream's 2026 release tarball, verified where it is
    downloaded: a branch is no reproducible input, and a tarball without its sha256
    would build whatever the server sends."""
    source = STACKS[stack].default_gromacs
    assert re.fullmatch(r"https://ftp\.gromacs\.org/gromacs/gromacs-2026\.\d+\.tar\.gz", source.url)
    assert source.sha256 is not None and re.fullmatch(r"[0-9a-f]{64}", source.sha256)
    assert source == GROMACS_2026_RELEASE
    text = render(
        "gromacs-stable-rocm",
        example_context("gromacs-stable-rocm", settings("rocm", rocm_stack=stack)),
    )
    download = f"RUN curl -fsSL -o gromacs.tar.gz {source.url}\n"
    check = f'RUN echo "{source.sha256}  gromacs.tar.gz" | sha256sum -c -\n'
    assert download + check in text
    assert "git clone" not in text


@pytest.mark.usefixtures("isolated")
def test_git_source_without_a_resolved_commit_checks_out_the_ref() -> None:
    branch = {
        "url": "git+https://gitlab.com/gromacs/gromacs.git",
        "ref": "4947-hip-feature-enablement",
    }
    context = example_context("gromacs-stable-rocm", settings("rocm", gromacs=branch))
    context["source"] = {**context["source"], "commit": None}
    text = render("gromacs-stable-rocm", context)
    assert "checkout --quiet 4947-hip-feature-enablement" in text
    assert "None" not in text


@pytest.mark.usefixtures("isolated")
def test_other_platforms_template_renders_for_its_own_platform() -> None:
    """Rendering a ROCm template with CPU settings (and back) switches the platform."""
    assert "-DGMX_GPU=HIP" in render(
        "gromacs-stable-rocm", example_context("gromacs-stable-rocm", settings("cpu"))
    )
    assert render("rocm-base", example_context("rocm-base", settings("cpu"))) == rendered(
        "rocm-base"
    )
    assert render("cpu-base", example_context("cpu-base", settings("rocm"))) == rendered("cpu-base")


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("name", [n for n in sorted(CASES) if n.startswith("gromacs-")])
def test_gromacs_builds_share_one_content_keyed_compile_cache(name: str) -> None:
    """Every GROMACS build compiles through ccache (compiler_check=content) in a BuildKit
    cache mount named by platform, builder and source only, so stable and dev share it;
    `rebuild`'s build argument turns it off."""
    text = rendered(name)
    template, values = CASES[name]
    other = template.replace("stable", "@").replace("dev", "stable").replace("@", "dev")
    cache = r"--mount=type=cache,id=(gmxbench-ccache-[a-z]+-[0-9a-f]{12}-[0-9a-f]{12}),"
    mount = re.findall(cache, text)
    other_mount = re.findall(cache, render(other, example_context(other, settings(**values))))
    assert len(mount) == 1 and mount == other_mount
    assert "CCACHE_COMPILERCHECK=content" in text and "ARG GMXBENCH_NO_COMPILE_CACHE=" in text
    gpu = {"rocm": ["HIP"], "cuda": ["CUDA"]}.get(template.rsplit("-", 1)[-1], [])
    langs = ["C", "CXX", *gpu]
    assert [f"-DCMAKE_{lang}_COMPILER_LAUNCHER=ccache" for lang in langs] == re.findall(
        r"-DCMAKE_[A-Z]+_COMPILER_LAUNCHER=ccache", text
    )
    assert uses_buildkit(text)


#: The CUDA stable recipe as measured on the lent H100 (nvcc, sm_90, fftpack, no hwloc).
STABLE_CUDA = [
    "-G",
    "Ninja",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DCMAKE_C_COMPILER=gcc-13",
    "-DCMAKE_CXX_COMPILER=g++-13",
    "-DGMX_GPU=CUDA",
    "-DCMAKE_CUDA_COMPILER=/usr/bin/nvcc",
    "-DCMAKE_CUDA_FLAGS=-Xcompiler=-ffile-prefix-map=/src/gromacs=.,"
    "-ffile-prefix-map=/build/gromacs=build",
    "-DCMAKE_CUDA_ARCHITECTURES=90",
    f"-DCMAKE_C_FLAGS={PREFIX_MAP}",
    f"-DCMAKE_CXX_FLAGS={PREFIX_MAP}",
    "-DGMX_MPI=OFF",
    "-DGMX_OPENMP=ON",
    "-DGMX_BUILD_OWN_FFTW=OFF",
    "-DCMAKE_INSTALL_PREFIX=/opt/gromacs/stable-nvcc12.4",
    "-DGMX_DOUBLE=OFF",
    "-DGMX_SIMD=AVX2_256",
    "-DGMX_USE_RDTSCP=ON",
    "-DGMX_FFT_LIBRARY=fftpack",
    "-DGMX_HWLOC=OFF",
    "-DBUILD_TESTING=OFF",
    "-DGMXAPI=OFF",
    "-DGMX_INSTALL_NBLIB_API=OFF",
    "-DGMX_USE_COLVARS=NONE",
]


@pytest.mark.usefixtures("isolated")
def test_cuda_stable_recipe_is_nvcc_for_sm_90() -> None:
    text = rendered("gromacs-stable-cuda")
    assert cmake_args(text) == STABLE_CUDA
    assert "ENV PATH=/opt/gromacs/stable-nvcc12.4/bin:$PATH" in text
    # every object with device code is kept for cuobjdump; HIP's unbundling is not there
    assert "grep '[.]nv_fatbin'" in text and "/opt/gmxbench/codeobjects/" in text
    assert "hip_fatbin" not in text and "hip_fatbin" not in rendered("gromacs-dev-cuda")
    assert "nv_fatbin" not in rendered("gromacs-stable-rocm") + rendered("gromacs-stable-cpu")


@pytest.mark.usefixtures("isolated")
def test_cuda_dev_recipe_sends_every_language_through_the_clang_under_test() -> None:
    args = cmake_args(rendered("gromacs-dev-cuda"))
    clang = "/opt/llvm-d7fead0f/bin/clang++"
    assert f"-DCMAKE_CXX_COMPILER={clang}" in args and f"-DCMAKE_CUDA_COMPILER={clang}" in args
    assert "-DCMAKE_C_COMPILER=/opt/llvm-d7fead0f/bin/clang" in args
    assert "-DGMX_CLANG_CUDA=ON" in args and "-DCMAKE_CUDA_ARCHITECTURES=90" in args
    assert f"-DCMAKE_CUDA_FLAGS=--cuda-path=/usr/lib/cuda {PREFIX_MAP}" in args
    assert not [a for a in args if "nvcc" in a]
    shared = {a for a in STABLE_CUDA if "COMPILER" not in a and "CUDA_FLAGS" not in a}
    assert shared - {a for a in args if "INSTALL_PREFIX" not in a} == {
        "-DCMAKE_INSTALL_PREFIX=/opt/gromacs/stable-nvcc12.4"
    }


@pytest.mark.usefixtures("isolated")
def test_cuda_targets_name_the_build_and_cmake_list() -> None:
    text = rendered("gromacs-stable-cuda@sm_90_sm_80")
    assert "-DCMAKE_CUDA_ARCHITECTURES=90;80" in cmake_args(text)
    assert "GMXBENCH_BUILD=stable-nvcc12.4-sm_90_sm_80" in text


@pytest.mark.usefixtures("isolated")
def test_debian_stack_recipe_and_local_source() -> None:
    text = rendered("gromacs-stable-rocm@debian")
    args = cmake_args(text)
    assert "-DCMAKE_HIP_COMPILER=/usr/lib/llvm-21/bin/clang++" in args
    assert not [a for a in args if "ROCM_ROOT" in a or "PREFIX_PATH" in a]  # FHS layout
    hip = next(a for a in args if a.startswith("-DCMAKE_HIP_FLAGS="))
    assert "--rocm-path=/usr" in hip
    assert "--rocm-device-lib-path=/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode" in hip
    assert "-DGMX_USE_COLVARS=NONE" in args and "-DBUILD_TESTING=OFF" in args
    assert "COPY gromacs.tar.gz /src/gromacs.tar.gz" in text
    assert f'echo "{"c" * 64}  gromacs.tar.gz" | sha256sum -c -' in text
    assert "/usr/lib/llvm-21/bin/llvm-objdump --offloading" in text  # code objects kept
    base = rendered("rocm-debian-base")
    assert "Acquire::Check-Valid-Until=false" in base and "hipcc" in base


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("flavor", ["stable", "dev"])
def test_two_targets_render_as_one_build_for_both(flavor: str) -> None:
    """After the shell has split the RUN line: `--offload-arch=` once per target, the
    CMake lists one word each (their `;` quoted), GROMACS's list comma-separated, and the
    install prefix named by the targets, as the tag is."""
    text = rendered(f"gromacs-{flavor}-rocm@debian-gfx1201_gfx942")
    args = cmake_args(text)
    hip = next(a for a in args if a.startswith("-DCMAKE_HIP_FLAGS="))
    assert re.findall(r"--offload-arch=\S+", hip) == [
        "--offload-arch=gfx1201",
        "--offload-arch=gfx942",
    ]
    for arg in ("-DGMX_HIP_TARGET_ARCH=gfx1201,gfx942", "-DCMAKE_HIP_ARCHITECTURES=gfx1201;gfx942",
                "-DGPU_TARGETS=gfx1201;gfx942", "-DHIPCC_HAS_TARGET_ARCH_gfx1201=TRUE",
                "-DHIPCC_HAS_TARGET_ARCH_gfx942=TRUE"):  # fmt: skip
        assert args.count(arg) == 1, arg
    prefix = next(a for a in args if a.startswith("-DCMAKE_INSTALL_PREFIX="))
    assert "-gfx1201_gfx942" in prefix
    assert "for gfx1201,gfx942" in text.split("FROM", 1)[0].replace("\n# ", " ")
    one = cmake_args(rendered(f"gromacs-{flavor}-rocm@debian"))
    assert not [a for a in one if "gfx942" in a]
