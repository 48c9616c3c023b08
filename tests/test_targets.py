"""Several AMD GPU targets in one build: the flags, tags and preflight that carry them."""

from __future__ import annotations

from orchestrator.core.settings import load_settings
from orchestrator.platforms.rocm import RocmPlatform


def test_kernel_benchmarks_compile_for_every_target_of_the_image() -> None:
    """A kernel image compiles `bandwidth` for each target its GROMACS image holds (its
    `gpu_arch` label), one `--offload-arch=` per target, primary first."""
    settings = load_settings(platform="rocm", rocm_stack="debian", gpu_arch="gfx1100")
    labels = {"rocm_stack": "debian", "gpu_arch": "gfx1201,gfx942,gfx90a"}
    flags = RocmPlatform().kernel_compiler(settings, labels).flags
    assert [f for f in flags if f.startswith("--offload-arch")] == [
        "--offload-arch=gfx1201", "--offload-arch=gfx942", "--offload-arch=gfx90a",
    ]  # fmt: skip
    unlabelled = RocmPlatform().kernel_compiler(settings, {"rocm_stack": "debian"}).flags
    assert [f for f in unlabelled if f.startswith("--offload-arch")] == ["--offload-arch=gfx1100"]
