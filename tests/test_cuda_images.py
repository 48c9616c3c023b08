"""The CUDA platform's images for real, without a GPU: the builder (Debian sid's CUDA
12.4 toolkit and clang 21) compiles real kernels to sm_90 SASS with nvcc and with clang
as the CUDA compiler, and a run's dry run passes the GPU as NVIDIA's toolkit wants it.

The full GROMACS CUDA builds are `cuda_build` (run with -m cuda_build): CI's cold run
already takes 48 of its 60 minutes, and the stable build alone compiles ~1,200 units
with nvcc (measured here: see docs/platforms.md, "cuda")."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator import engine as engine_mod

pytestmark = [pytest.mark.engine]

REPO = Path(__file__).resolve().parent.parent
KERNELS = Path(__file__).parent / "data" / "cuda" / "kernels.cu"
CLANG = "/usr/lib/llvm-21/bin/clang++"


@pytest.fixture(scope="module")
def cuda_settings(session_results: Path) -> Any:
    from conftest import gromacs_2026_source

    from orchestrator.core.settings import load_settings

    return load_settings(
        platform="cuda", gpu_arch="sm_90", gromacs=gromacs_2026_source(),
        results_dir=session_results,
    )  # fmt: skip


@pytest.fixture(scope="module")
def cuda_builder(engine: Any, cuda_settings: Any) -> Any:
    """The CUDA builder base, made by the tool's own block (~2 min cold: 1 GB of packages)."""
    from orchestrator.images.builder import ensure_builder

    return ensure_builder(engine, cuda_settings)


def compiled(engine: Any, image: str, compile_command: str) -> str:
    """`cuobjdump -sass` of tests/data/cuda/kernels.cu compiled in `image` to /tmp/k.o."""
    source = base64.b64encode(KERNELS.read_bytes()).decode()
    script = (
        f"echo {source} | base64 -d > /tmp/k.cu && {compile_command} -c /tmp/k.cu -o /tmp/k.o "
        "&& cuobjdump -sass /tmp/k.o"
    )
    code, out = engine_mod.run_capture(engine, image, ["bash", "-c", script], timeout=300)
    assert code == 0, out
    return out


def test_builder_compiles_real_kernels_to_sm_90_sass_with_nvcc(
    engine: Any, cuda_builder: Any
) -> None:
    sass = compiled(engine, cuda_builder.tag, "nvcc -ccbin g++-13 -O3 -arch=sm_90")
    assert "code for sm_90" in sass
    assert "Function : saxpy" in sass and "Function : block_sum" in sass
    assert "SHFL.DOWN" in sass  # the warp shuffle is in the machine code


def test_builder_compiles_real_kernels_to_sm_90_sass_with_clang_as_cuda_compiler(
    engine: Any, cuda_builder: Any
) -> None:
    """Debian's clang stands in for a dev build's clang: NVPTX, then the toolkit's ptxas."""
    sass = compiled(
        engine, cuda_builder.tag,
        f"{CLANG} -x cuda --cuda-path=/usr/lib/cuda --cuda-gpu-arch=sm_90 -O3 "
        "-Wno-unknown-cuda-version",
    )  # fmt: skip
    assert "code for sm_90" in sass
    assert "Function : saxpy" in sass and "Function : block_sum" in sass
    assert "SHFL.DOWN" in sass


def test_dry_run_passes_the_gpu_by_device_request(engine: Any, tmp_path: Path) -> None:
    """The run configuration of a CUDA build, checked here without a GPU: GPU 1 by a
    device request for NVIDIA's toolkit, and what is missing named before any container."""
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "stable-nvcc12.4-not-built", "water:3k",
         "--dry-run", "--device", "1"],
        capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "ORCH_PLATFORM": "cuda", "ORCH_RESULTS_DIR": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    (request,) = shown["device_requests"]
    assert request == {
        "Driver": "nvidia", "Count": 0, "DeviceIDs": ["1"], "Capabilities": [["gpu"]],
        "Options": {},
    }  # fmt: skip
    assert "devices" not in shown and "CUDA_VISIBLE_DEVICES" not in shown["environment"]
    problems = shown["preflight_problems"]
    assert problems[0].startswith("image gromacs:stable-nvcc12.4-not-built is not in the engine")
    if not Path("/dev/nvidiactl").exists():
        assert any("nvidiactl does not exist" in p for p in problems)
    assert not list(tmp_path.iterdir())


@pytest.mark.cuda_build
@pytest.mark.slow
def test_stable_cuda_gromacs_is_nvcc_for_sm_90(engine: Any, cuda_settings: Any) -> None:
    """GROMACS 2026.3 with CUDA for sm_90 by nvcc 12.4, every kept object holding sm_90 SASS."""
    from conftest import build_ours

    from orchestrator.images.gromacs import build_gromacs

    record = build_ours(engine, build_gromacs, cuda_settings, "stable")
    assert record.tag == "gromacs:stable-nvcc12.4" and record.gpu_arch == "sm_90"
    assert record.compiler == "/usr/bin/nvcc" and record.platform == "cuda"
    code, out = engine_mod.run_capture(engine, record.tag, ["gmx", "--version"])
    assert code == 0 and "GPU support:        CUDA" in out, out
    script = (
        "ls /opt/gmxbench/codeobjects/src/gromacs/CMakeFiles/libgromacs.dir/nbnxm/cuda/ "
        "&& find /opt/gmxbench/codeobjects -name '*.o' | head -n 1 | xargs cuobjdump -sass"
    )
    code, out = engine_mod.run_capture(engine, record.tag, ["sh", "-c", script])
    assert code == 0 and "code for sm_90" in out, out
