"""The CUDA platform without a GPU: its targets, settings, passthrough options, preflight
and nvidia-smi readings (as the lent H100 printed them), and its place in `auto`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator import platforms
from orchestrator.core.errors import UserError
from orchestrator.core.settings import Settings
from orchestrator.engine import EngineKind
from orchestrator.images.gromacs_check import VERIFY_SCRIPT, parse_facts
from orchestrator.platforms.base import KEPT
from orchestrator.platforms.cuda import CudaPlatform
from orchestrator.platforms.cuda.codegen import CODEOBJECTS
from orchestrator.platforms.cuda.targets import cmake_arch, from_compute_cap, gpu_archs
from orchestrator.platforms.rocm.targets import gpu_archs as rocm_archs

#: `nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader` on the lent H100 (idle,
#: clocks not locked), 2026-11-28.
H100 = "NVIDIA H100 80GB HBM3, 580.159.04, 9.0, 345 MHz, 1980 MHz, 0x0000000000000001\n"


def smi_answering(line: str | None) -> platforms.cuda.Smi:
    def smi(args: object) -> tuple[int, str] | None:
        if line is None:
            return None
        return 0, "9.0\n" if "--query-gpu=compute_cap" in args else line  # type: ignore[operator]

    return smi


def gpu_host(tmp_path: Path, smi_line: str | None = H100) -> CudaPlatform:
    (tmp_path / "dev").mkdir(exist_ok=True)
    (tmp_path / "dev" / "nvidiactl").touch()
    return CudaPlatform(dev_root=tmp_path / "dev", sys_root=tmp_path, smi=smi_answering(smi_line))


def test_targets_default_to_sm_90_and_cmake_gets_numbers() -> None:
    assert gpu_archs(Settings(platform="cuda")) == ["sm_90"]
    assert gpu_archs(Settings(platform="cuda", gpu_arch="sm_90a,sm_80")) == ["sm_90a", "sm_80"]
    assert [cmake_arch(t) for t in ("sm_90", "sm_90a", "sm_100a")] == ["90", "90a", "100a"]
    assert from_compute_cap("9.0") == "sm_90" and from_compute_cap("N/A") is None


def test_gpu_arch_is_checked_against_the_named_platform() -> None:
    with pytest.raises(ValidationError, match="sm_90 is not a target of the rocm platform"):
        Settings(platform="rocm", gpu_arch="sm_90")
    with pytest.raises(ValidationError, match="gfx1201 is not a target of the cuda platform"):
        Settings(platform="cuda", gpu_arch="gfx1201")
    with pytest.raises(ValidationError, match=r"mixes AMD \(gfx\) and NVIDIA \(sm_\) targets"):
        Settings(gpu_arch="gfx1201,sm_90")
    with pytest.raises(ValidationError, match="'sm_9' is not a GPU target"):
        Settings(gpu_arch="sm_9")
    # with `auto`, each platform's targets module refuses the other vendor's names
    with pytest.raises(UserError, match="names NVIDIA targets, but this build is for the ROCm"):
        rocm_archs(Settings(gpu_arch="sm_90"))
    with pytest.raises(UserError, match="not an NVIDIA target, but this build is for the CUDA"):
        gpu_archs(Settings(gpu_arch="gfx942"))


def test_auto_tries_cuda_after_rocm_and_before_cpu() -> None:
    assert platforms.names() == ["rocm", "cuda", "cpu"]
    assert platforms.host_cpu().name == "cpu"


def test_presence_is_the_driver_control_node(tmp_path: Path) -> None:
    assert not CudaPlatform(dev_root=tmp_path).run.present()
    assert gpu_host(tmp_path).run.present()


def test_docker_gets_a_device_request_for_the_one_gpu(tmp_path: Path) -> None:
    opts = gpu_host(tmp_path).run.container_options(1)
    kwargs = opts.engine_kwargs()
    (request,) = kwargs["device_requests"]
    assert request["Driver"] == "nvidia" and request["DeviceIDs"] == ["1"]
    assert request["Capabilities"] == [["gpu"]]
    assert "devices" not in kwargs and "CUDA_VISIBLE_DEVICES" not in opts.environment
    assert kwargs["cap_drop"] == ["ALL"] and kwargs["security_opt"] == ["no-new-privileges"]


def test_podman_gets_the_cdi_device_and_is_told_when_no_spec_exists(tmp_path: Path) -> None:
    podman = EngineKind(name="podman", version="5.4", rootless=True)
    cuda = gpu_host(tmp_path)
    opts = cuda.run.container_options(0, engine=podman)
    assert opts.devices == ["nvidia.com/gpu=0"] and not opts.device_requests
    assert any("nvidia-ctk cdi generate" in p for p in opts.problems)
    (tmp_path / "etc/cdi").mkdir(parents=True)
    (tmp_path / "etc/cdi/nvidia.yaml").write_text("cdiVersion: 0.5.0\n")
    assert not [p for p in cuda.run.container_options(0, engine=podman).problems if "CDI" in p]


def test_no_driver_is_a_problem_that_names_cpu_only(tmp_path: Path) -> None:
    opts = CudaPlatform(dev_root=tmp_path, smi=smi_answering(None)).run.container_options(0)
    assert any("nvidiactl does not exist" in p and "--cpu-only" in p for p in opts.problems)


def test_preflight_refuses_an_image_without_the_hosts_target(tmp_path: Path) -> None:
    cuda = gpu_host(tmp_path)
    opts = cuda.run.container_options(0)
    problems = cuda.run.preflight(None, "sm_80", opts, image="gromacs:stable-nvcc12.4-sm_80")
    assert any("holds GPU code for sm_80 only" in p and "sm_80,sm_90" in p for p in problems)
    for held in ("sm_90", "sm_90a", "sm_80,sm_90"):
        assert not [p for p in cuda.run.preflight(None, held, opts) if "holds GPU code" in p]
    no_smi = gpu_host(tmp_path, None)
    assert not [p for p in no_smi.run.preflight(None, "sm_80", opts) if "holds GPU code" in p]


def test_devices_read_nvidia_smi_and_warn_when_clocks_are_not_locked(tmp_path: Path) -> None:
    info = gpu_host(tmp_path).run.devices(tmp_path)
    assert info.gpu_model == "NVIDIA H100 80GB HBM3" and info.gpu_driver == "580.159.04"
    assert info.gpu_target == "sm_90"
    assert info.gpu_perf_level == "unlocked (SM 345/1980 MHz)"
    assert "nvidia-smi -lgc 1980,1980" in info.warnings[0]
    locked = H100.replace("345 MHz", "1980 MHz")
    info = gpu_host(tmp_path, locked).run.devices(tmp_path)
    assert info.gpu_perf_level == "locked (SM 1980/1980 MHz)" and not info.warnings
    assert gpu_host(tmp_path, None).run.devices(tmp_path).gpu_model is None


def test_codegen_probe_reads_the_kept_objects_with_cuobjdump() -> None:
    argv = CudaPlatform().codegen.codegen_probe("codegen", "/opt/gromacs/x", None)
    assert argv[:2] == ["python3", "-c"]
    assert argv[3:] == ["sass", "--cuobjdump", "cuobjdump", "--cxxfilt", "c++filt",
                        f"{KEPT}/{CODEOBJECTS}"]  # fmt: skip
    native = CudaPlatform().codegen.codegen_probe("codegen", "/p", None, kept="/p/gmxbench")
    assert native[-1] == "/p/gmxbench/codeobjects"
    with pytest.raises(UserError, match="not yet built for the CUDA platform"):
        CudaPlatform().codegen.microbench_compiler(Settings(platform="cuda"), {})


def test_stable_compiler_is_named_by_nvccs_release() -> None:
    build = CudaPlatform().build
    answer = (
        "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"
    )
    compiler = build.stable_compiler(Settings(platform="cuda"), lambda _: (0, answer))
    assert compiler.name == "nvcc12.4" and compiler.cxx == "g++-13"
    assert build.stable_build_name(Settings(platform="cuda"), compiler) == "stable-nvcc12.4"
    assert build.compiler_under_test(compiler) == "/usr/bin/nvcc"
    with pytest.raises(UserError, match="no working nvcc"):
        build.stable_compiler(Settings(platform="cuda"), lambda _: (127, "nvcc: not found"))


def test_nvccs_version_is_its_release_line(tmp_path: Path) -> None:
    """nvcc's first line names only the driver; the record keeps the release line. The
    stand-in prints what nvcc 13.0 printed on the lent H100 (no nvcc runs here)."""
    said = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
            "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
            "Cuda compilation tools, release 13.0, V13.0.88\n"
            "Build cuda_13.0.r13.0/compiler.36424714_0\n")  # fmt: skip
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(f"#!/bin/sh\ncat <<'EOF'\n{said}EOF\n")
    nvcc.chmod(0o755)
    script = VERIFY_SCRIPT.format(
        compiler=nvcc, prefix=tmp_path, kept=tmp_path, sha_file="/dev/null"
    )
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False).stdout
    assert parse_facts(out).compiler_version == "Cuda compilation tools, release 13.0, V13.0.88"
    gcc = subprocess.run(["sh", "-c", VERIFY_SCRIPT.format(compiler="gcc", prefix=tmp_path,
                          kept=tmp_path, sha_file="/dev/null")], capture_output=True, text=True,
                         check=False).stdout  # fmt: skip
    assert parse_facts(gcc).compiler_version.startswith("gcc (")  # a first line, as before
