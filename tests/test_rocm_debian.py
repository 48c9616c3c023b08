"""The ROCm platform for real, on Debian's ROCm packages: GROMACS 2026.3 with HIP for
gfx1201 built from the shared source tarball, run on the CPU, refused on a GPU that is
not there. Only running on an AMD GPU cannot happen here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator import engine as engine_mod
from orchestrator.images.provenance import load_lockfile
from orchestrator.runs.runner import RunRequest, execute, plan_run
from orchestrator.store.layout import lockfile_path

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent


def test_stable_hip_image_reports_the_hip_build(engine: Any, rocm_stable: Any) -> None:
    code, out = engine_mod.run_capture(engine, rocm_stable.tag, ["gmx", "--version"])
    assert code == 0, out
    info = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    # `git archive` of the v2026.3 tag, not upstream's release tarball: GROMACS says -dev
    assert info["GROMACS version"].strip() in ("2026.3", "2026.3-dev")
    assert info["GPU support"].strip() == "HIP"
    assert info["SIMD instructions"].strip() == "AVX2_256"
    # gmx names hipcc (GROMACS checks HIP flags with it); the compiler CMake compiled the
    # HIP units with is in the build's cache, which the image keeps
    assert "HIP compiler:" in out and "--offload-arch=gfx1201" in out
    cache = f"/opt/gromacs/{rocm_stable.build}/CMakeCache.txt"
    code, line = engine_mod.run_capture(
        engine, rocm_stable.tag, ["grep", "^CMAKE_HIP_COMPILER:", cache]
    )
    assert code == 0 and line.strip().endswith("=/usr/lib/llvm-21/bin/clang++"), line
    assert rocm_stable.tag == "gromacs:stable-rocm-debian-clang21"
    assert rocm_stable.platform == "rocm" and rocm_stable.rocm_stack == "debian"
    assert rocm_stable.gpu_arch == "gfx1201"
    assert rocm_stable.compiler == "/usr/lib/llvm-21/bin/clang++"
    assert rocm_stable.compiler_version and "clang version 21" in rocm_stable.compiler_version


def test_stable_hip_lockfile_pins_source_and_packages(rocm_settings: Any, rocm_stable: Any) -> None:
    lock = load_lockfile(lockfile_path(rocm_settings.results_dir, rocm_stable.tag))
    source = rocm_settings.gromacs
    assert lock.context["source"]["scheme"] == "file"
    assert rocm_stable.gromacs_commit == f"sha256:{source.sha256}"
    # sid's hipcc moves on (7.0.2 when written): what the build needs is a ROCm 7 hipcc
    assert lock.packages["hipcc"].startswith("7.") and "libamdhip64-dev" in lock.packages
    assert lock.compile_cache is not None and lock.build_seconds
    assert lock.gmx_version_info["GPU support"] == "HIP"


def test_hip_gromacs_runs_on_the_cpu_in_its_image(
    engine: Any, rocm_settings: Any, rocm_stable: Any
) -> None:
    """The image is complete: its gmx runs a water box with every task on the CPU."""
    req = RunRequest(
        build=rocm_stable.build, system="water:3k", tag="cpu-only", steps=200, cpu_only=True
    )
    plan = plan_run(engine, rocm_settings, req)
    assert "devices" not in plan.container and not plan.problems
    assert plan.mdrun[-8:] == ["-nb", "cpu", "-pme", "cpu", "-bonded", "cpu", "-update", "cpu"]
    result = execute(engine, rocm_settings, plan)
    assert result.finished, result.failure
    assert result.ns_per_day and result.cpu_only and result.platform == "rocm"
    log = (rocm_settings.results_dir / result.run_id / "topol.log").read_text()
    assert re.search(r"^GPU support:\s+HIP$", log, re.M)


@pytest.mark.skipif(Path("/dev/kfd").exists(), reason="this host has an AMD GPU")
def test_gpu_run_without_a_gpu_is_refused_before_any_container(
    engine: Any, rocm_settings: Any, rocm_stable: Any
) -> None:
    env = {
        **os.environ, "ORCH_PLATFORM": "rocm", "ORCH_ROCM_STACK": "debian",
        "ORCH_RESULTS_DIR": str(rocm_settings.results_dir),
    }  # fmt: skip
    before = {c.id for c in engine.containers.list(all=True)}
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", rocm_stable.build, "water:3k", "refused"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    message = proc.stderr.strip()
    assert message.startswith("error: Preflight failed, no container was started:")
    assert "/dev/kfd does not exist" in message and "--cpu-only" in message
    assert "Traceback" not in message and len(message.splitlines()) == 1
    assert {c.id for c in engine.containers.list(all=True)} == before
    assert not (rocm_settings.results_dir / f"{rocm_stable.build}__water-3k-pme__refused").exists()


def test_stable_fingerprint_lists_every_hip_kernel_with_its_resources(
    engine: Any, rocm_settings: Any, rocm_stable: Any
) -> None:
    """codegen.json, taken when the image was built, lists every gfx1201 kernel of GROMACS
    2026.3 (566 here; counted again below from the code objects' metadata notes, not by
    the probe), each with its register, spill, LDS and scratch counts and LLVM's occupancy."""
    from orchestrator.codegen.model import load_codegen
    from orchestrator.store.layout import codegen_path

    codegen = load_codegen(codegen_path(rocm_settings.results_dir, rocm_stable.tag))
    kernels = [k for k in codegen.kernels.values() if k.kind == "kernel"]
    count = (
        "n=0; for f in $(find /opt/gmxbench/codeobjects -type f); do "
        "n=$((n + $(/usr/lib/llvm-21/bin/llvm-readelf --notes $f | grep -c '^    .name:'))); "
        "done; echo $n"
    )
    code, out = engine_mod.run_capture(engine, rocm_stable.tag, ["bash", "-c", count])
    assert code == 0 and len(kernels) == int(out.strip()) > 500, out
    assert codegen.archs == ["gfx1201"] and len(codegen.code_objects) == 20
    assert all(k.vgprs is not None and k.sgprs is not None and k.occupancy for k in kernels)
    assert all(k.lds_bytes is not None and k.scratch_bytes is not None for k in kernels)
    nbnxm = [k for k in kernels if k.category == "nbnxm"]
    assert len(nbnxm) >= 448  # 112 per nbnxm kernel-body unit, 4 units
    units = {k.unit for k in kernels}
    assert "src/gromacs/nbnxm/hip/nbnxm_hip_kernel_body_f_prune.cpp" in units


def test_debian_base_is_made_again_identically_from_its_lockfile(
    engine: Any, tmp_path: Path
) -> None:
    """The sid base records its Release date and every package version; bootstrapping
    again from that lockfile gives the same packages, and a lockfile that does not match
    what the mirror serves is refused with the snapshot to use, tagging nothing."""
    from orchestrator.core.errors import UserError
    from orchestrator.core.settings import load_settings
    from orchestrator.images.base import load_base_lock, make_base, refuse_other_packages
    from orchestrator.store.layout import lockfile_path

    settings = load_settings(platform="rocm", rocm_stack="debian", results_dir=tmp_path)
    first, again = "gmxbench-scratch/base:sid-first", "gmxbench-scratch/base:sid-again"
    try:
        # Made now, not the session's base: on a cold engine that one was bootstrapped an
        # hour before, and sid's Release (its date, its packages) moves several times a day.
        make_base(engine, settings, suite="sid", tag=first)
        lock = load_base_lock(lockfile_path(tmp_path, first))
        assert lock.suite == "sid" and "apt" in lock.packages and len(lock.packages) > 50
        assert lock.snapshot_mirror.startswith("https://snapshot.debian.org/archive/debian/20")
        image = make_base(engine, settings, tag=again, lock=lock)
        assert load_base_lock(lockfile_path(tmp_path, again)).packages == lock.packages
        assert image.labels["gmxbench.suite_date"] == lock.release_date
    finally:
        for tag in (first, again):
            if engine_mod.image(engine, tag) is not None:
                engine_mod.remove_image(engine, tag, force=True)
    older = lock.model_copy(update={"packages": {**lock.packages, "apt": "1.0"}})
    with pytest.raises(UserError, match=r"apt 1\.0 → .* Nothing was tagged.*snapshot\.debian\.org"):
        refuse_other_packages(older, lock.release_date, lock.packages, lock.mirror)
