"""Settings: sources, precedence, derived values, and the errors users see."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import (
    GROMACS_2026_RELEASE,
    environment_of,
    load_settings,
    with_gpu_arch,
)
from orchestrator.platforms import active
from orchestrator.platforms.cpu import CpuBuild
from orchestrator.platforms.rocm.build import RocmBuild
from orchestrator.platforms.rocm.stacks import rocm_path
from orchestrator.platforms.rocm.targets import gpu_arch, gpu_archs

DEFAULT_CPU_BASE, DEFAULT_ROCM_BASE = CpuBuild.default_base, RocmBuild.default_base

REPO = Path(__file__).resolve().parent.parent


def test_defaults_for_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_PLATFORM", "cpu")
    s = load_settings()
    platform = active(s)
    assert platform.name == "cpu"
    assert platform.build.base_image(s) == DEFAULT_CPU_BASE
    assert platform.build.gromacs_source(s).url == "deb-src:gromacs"
    assert s.results_dir == Path("results")
    assert s.simd == "AVX2_256"


def test_defaults_for_rocm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_PLATFORM", "rocm")
    s = load_settings()
    platform = active(s)
    assert platform.build.base_image(s) == DEFAULT_ROCM_BASE
    assert rocm_path(s) == "/opt/rocm/core-7.12"
    assert platform.build.gromacs_source(s) == GROMACS_2026_RELEASE
    assert gpu_arch(s).startswith("gfx")


def test_a_downloaded_tarball_without_its_sha256_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ORCH_GROMACS__URL", "https://example.org/gromacs-2026.3.tar.gz")
    monkeypatch.setenv("ORCH_GROMACS__REF", "v2026.3")
    with pytest.raises(UsageError) as err:
        load_settings()
    message = err.value.message
    assert "https://example.org/gromacs-2026.3.tar.gz" in message and "\n" not in message
    assert "ORCH_GROMACS__SHA256" in message
    monkeypatch.setenv("ORCH_GROMACS__SHA256", "1" * 64)
    assert load_settings().gromacs is not None


def test_the_hip_feature_branch_stays_an_explicit_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_PLATFORM", "rocm")
    monkeypatch.setenv("ORCH_GROMACS__URL", "git+https://gitlab.com/gromacs/gromacs.git")
    monkeypatch.setenv("ORCH_GROMACS__REF", "4947-hip-feature-enablement")
    source = active(load_settings()).build.gromacs_source(load_settings())
    assert (source.url, source.ref, source.sha256) == (
        "git+https://gitlab.com/gromacs/gromacs.git",
        "4947-hip-feature-enablement",
        None,
    )


def test_env_beats_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orchestrator.toml").write_text(
        'platform = "cpu"\nsimd = "AVX_512"\n[gromacs]\nurl = "deb-src:gromacs"\nref = "2023.1"\n'
    )
    monkeypatch.setenv("ORCH_SIMD", "AVX2_256")
    s = load_settings()
    assert s.simd == "AVX2_256"
    assert active(s).build.gromacs_source(s).ref == "2023.1"


def test_nested_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_GROMACS__URL", "git+https://example.org/gromacs.git")
    monkeypatch.setenv("ORCH_GROMACS__REF", "v2025.3")
    s = load_settings()
    assert active(s).build.gromacs_source(s).ref == "v2025.3"


def test_pyproject_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.orchestrator]\ngpu_arch = "gfx90a"\n')
    assert gpu_arch(load_settings()) == "gfx90a"


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        (
            "ORCH_PLATFORM",
            "opencl",
            "ORCH_PLATFORM (got 'opencl'): Input should be 'auto', 'rocm', 'cuda' or 'cpu'",
        ),
        ("ORCH_SIMD", "AVX3", "ORCH_SIMD (got 'AVX3'): must be one of None, SSE2"),
        ("ORCH_GPU_ARCH", "rdna4", "ORCH_GPU_ARCH (got 'rdna4'): 'rdna4' is not a GPU target"),
        (
            "ORCH_GPU_ARCH",
            "gfx1201,gfx94x",
            "ORCH_GPU_ARCH (got 'gfx1201,gfx94x'): 'gfx94x' is not a GPU target: each entry "
            "must look like gfx1201 or gfx90a",
        ),
        ("ORCH_BASE_IMAGE", "Bad Image!", "ORCH_BASE_IMAGE (got 'Bad Image!'): must be an image"),
        ("ORCH_JOBS", "zero", "ORCH_JOBS (got 'zero')"),
    ],
)
def test_invalid_values_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(UsageError) as err:
        load_settings()
    assert expected in err.value.message
    assert err.value.exit_code == 2


def test_digest_pinned_base_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    ref = "rocm/dev-ubuntu-24.04:7.12-complete@sha256:" + "a" * 64
    monkeypatch.setenv("ORCH_BASE_IMAGE", ref)
    settings = load_settings()
    assert active(settings).build.base_image(settings) == ref


def test_malformed_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orchestrator.toml").write_text("platform = \n")
    with pytest.raises(UsageError, match=r"orchestrator\.toml .* is not valid TOML"):
        load_settings()


def test_webhook_is_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "https://hooks.example.invalid/webhooks/123/sekrit-token"
    monkeypatch.setenv("ORCH_WEBHOOK_URL", secret)
    s = load_settings()
    assert secret not in repr(s)
    assert secret not in str(s.public_dump())
    assert s.public_dump()["webhook_url"] == "<set>"


def _cli(*args: str, env: dict[str, str], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **env},
        cwd=cwd,
    )


def test_cli_bad_setting_exit_2_no_traceback() -> None:
    proc = _cli("settings", env={"ORCH_PLATFORM": "opencl"})
    assert proc.returncode == 2
    assert "ORCH_PLATFORM" in proc.stderr and "'rocm'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_malformed_toml_exit_2(tmp_path: Path) -> None:
    (tmp_path / "orchestrator.toml").write_text("[broken\n")
    proc = _cli("settings", env={}, cwd=tmp_path)
    assert proc.returncode == 2
    assert "not valid TOML" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_missing_engine() -> None:
    proc = _cli("images", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert proc.returncode == 1
    assert "No Docker Engine answers at unix:///nonexistent/docker.sock" in proc.stderr
    assert "dockerd" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_settings_hides_webhook() -> None:
    proc = _cli("settings", env={"ORCH_WEBHOOK_URL": "https://hooks.example/sekrit"})
    assert proc.returncode == 0, proc.stderr
    assert "sekrit" not in proc.stdout + proc.stderr
    assert "<set>" in proc.stdout


def test_a_tarball_is_its_content_wherever_it_lies(tmp_path: Path) -> None:
    """Two checkouts with the same tarball at other paths share one compile cache (and
    so one image key); another content does not."""
    from orchestrator.core.settings import GromacsSource
    from orchestrator.images.gromacs import SourceSpec, compile_cache_id

    def spec(path: Path, digest: str) -> SourceSpec:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not a real tarball")
        return SourceSpec.from_setting(GromacsSource(url=str(path), ref="v1", sha256=digest))

    here = spec(tmp_path / "a" / "gromacs.tar.gz", "1" * 64)
    there = spec(tmp_path / "b" / "gromacs.tar.gz", "1" * 64)
    other = spec(tmp_path / "c" / "gromacs.tar.gz", "2" * 64)
    assert here.url != there.url and here.scheme == "file"
    assert compile_cache_id("rocm", "sha256:ab", here) == compile_cache_id(
        "rocm", "sha256:ab", there
    )
    assert compile_cache_id("rocm", "sha256:ab", here) != compile_cache_id(
        "rocm", "sha256:ab", other
    )


def test_gpu_targets_are_a_list_in_order_without_duplicates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`ORCH_GPU_ARCH=gfx1201,gfx942` (or a TOML list): one field, the primary target
    first; the same list from the environment, a file, and `--gpu-arch`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ORCH_GPU_ARCH", " gfx1201, gfx942,gfx90a,gfx1201,gfx1100")
    s = load_settings()
    assert s.gpu_arch == "gfx1201,gfx942,gfx90a,gfx1100"
    assert gpu_archs(s) == ["gfx1201", "gfx942", "gfx90a", "gfx1100"] and gpu_arch(s) == "gfx1201"
    monkeypatch.delenv("ORCH_GPU_ARCH")
    (tmp_path / "orchestrator.toml").write_text('gpu_arch = ["gfx942", "gfx90a", "gfx942"]\n')
    assert gpu_archs(load_settings()) == ["gfx942", "gfx90a"]
    assert environment_of(load_settings())["ORCH_GPU_ARCH"] == "gfx942,gfx90a"
    over = with_gpu_arch(load_settings(), "gfx90a,gfx1201")
    assert gpu_archs(over) == ["gfx90a", "gfx1201"]
    assert with_gpu_arch(over, None) is over
    with pytest.raises(UsageError, match=r"--gpu-arch 'gfx90a,sm90': 'sm90' is not a GPU"):
        with_gpu_arch(over, "gfx90a,sm90")
    with pytest.raises(UsageError, match=r"--gpu-arch 'gfx90a,sm_90': gfx90a,sm_90 mixes AMD"):
        with_gpu_arch(over, "gfx90a,sm_90")


def test_gpu_arch_option_reaches_the_build_and_names_a_bad_entry(tmp_path: Path) -> None:
    """`build --gpu-arch` is parsed before anything is built: a bad entry is one line
    naming it, exit 2, no traceback."""
    proc = _cli("build", "stable", "--gpu-arch", "gfx1201,navi48", env={"ORCH_PLATFORM": "rocm"},
                cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "'navi48' is not a GPU target" in proc.stderr and "Traceback" not in proc.stderr
