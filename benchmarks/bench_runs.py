"""Orchestration overhead and containerization fidelity of a CPU run.

(a) overhead per run = whole `runner.execute` wall time − mdrun's own `Wall t`
    (target ≤ 1.5 s); reported with and without the input preparation inside the
    container (gmx solvate + grompp), which the run script timestamps.
(b) fidelity = median containerized ns/day ÷ median ns/day of the same binary and
    input run outside the container (a `chroot` into the image's exported filesystem:
    same files, no namespaces, cgroups or overlayfs), interleaved (target 1.00 ± 0.02).
Run with `nox -s perf` (needs a Docker Engine; builds the stable image when missing).
"""

from __future__ import annotations

import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator import engine
from orchestrator.core.settings import load_settings
from orchestrator.images.gromacs import build_gromacs
from orchestrator.parsers.mdlog import parse_mdlog
from orchestrator.runs.runner import RunRequest, execute, plan_run

REPEATS = 5
SYSTEM = "water:3k"
STEPS = 2000
#: No counter reset: mdrun's Wall t then covers every step of the run.
MDRUN_ARGS = ["-resetstep", "-1"]


def _export_rootfs(client: object, image: str, into: Path) -> None:
    container = client.containers.create(image, ["true"])  # type: ignore[attr-defined]
    try:
        stream = io.BytesIO(b"".join(container.export()))
        with tarfile.open(fileobj=stream) as tar:
            tar.extractall(into, filter="fully_trusted")
    finally:
        container.remove(force=True)


def _native_run(root: Path, tpr: Path, ntomp: int, n: int) -> float:
    work = root / "run" / f"native{n}"
    work.mkdir(parents=True)
    shutil.copy(tpr, work / "topol.tpr")
    gmx_cmd = (
        f"cd /run/native{n} && gmx mdrun -deffnm topol -ntmpi 1 -ntomp {ntomp} -pin on "
        f"-nsteps {STEPS} -noconfout {' '.join(MDRUN_ARGS)}"
    )
    env_path = "/opt/gromacs/bin:/usr/local/bin:/usr/bin:/bin"
    build_bin = next((root / "opt" / "gromacs").glob("*/bin"))
    env_path = f"/{build_bin.relative_to(root)}:{env_path}"
    # No /proc in the chroot, so the loader cannot expand $ORIGIN in gmx's RUNPATH.
    lib = f"/{build_bin.parent.relative_to(root)}/lib"
    subprocess.run(
        ["chroot", str(root), "env", "-i", f"PATH={env_path}", f"LD_LIBRARY_PATH={lib}",
         f"OMP_NUM_THREADS={ntomp}",
         "sh", "-c", gmx_cmd],
        check=True, capture_output=True,
    )  # fmt: skip
    ns = parse_mdlog(work / "topol.log").ns_per_day
    assert ns is not None
    return ns


def main() -> list[dict[str, float | int | str]]:
    client = engine.connect()
    with tempfile.TemporaryDirectory(prefix="gmxbench-perf-") as tmp:
        settings = load_settings(platform="cpu", results_dir=Path(tmp) / "results")
        stable = build_gromacs(client, settings, "stable")
        root = Path(tmp) / "rootfs"
        _export_rootfs(client, stable.tag, root)
        overhead, overhead_run_only, contained, native = [], [], [], []
        for i in range(REPEATS):
            req = RunRequest(build=stable.build or "", system=SYSTEM, tag=f"perf{i}",
                             steps=STEPS, mdrun_args=MDRUN_ARGS)  # fmt: skip
            started = time.monotonic()
            result = execute(client, settings, plan_run(client, settings, req))
            whole = time.monotonic() - started
            if not result.finished or result.mdrun_wall_seconds is None:
                raise SystemExit(f"perf run failed: {result.failure}")
            overhead.append(whole - result.mdrun_wall_seconds)
            overhead_run_only.append(
                whole - result.mdrun_wall_seconds - (result.setup_seconds or 0)
            )
            contained.append(result.ns_per_day or 0.0)
            run_dir = settings.results_dir / result.run_id
            native.append(_native_run(root, run_dir / "topol.tpr", settings.jobs, i))
    fidelity = statistics.median(contained) / statistics.median(native)
    return [
        {"benchmark": "overhead per run (s)", "median": round(statistics.median(overhead), 3),
         "min": round(min(overhead), 3), "max": round(max(overhead), 3), "target": "≤ 1.5"},
        {"benchmark": "overhead w/o input prep (s)",
         "median": round(statistics.median(overhead_run_only), 3),
         "min": round(min(overhead_run_only), 3), "max": round(max(overhead_run_only), 3),
         "target": "≤ 1.5"},
        {"benchmark": "ns/day in container", "median": round(statistics.median(contained), 2),
         "min": round(min(contained), 2), "max": round(max(contained), 2), "target": ""},
        {"benchmark": "ns/day native (chroot)", "median": round(statistics.median(native), 2),
         "min": round(min(native), 2), "max": round(max(native), 2), "target": ""},
        {"benchmark": "fidelity (container/native)", "median": round(fidelity, 3),
         "min": "", "max": "", "target": "1.00 ± 0.02"},
    ]  # fmt: skip


if __name__ == "__main__":
    from tabulate import tabulate

    print(tabulate(main(), headers="keys"))
