"""GROMACS builds: how long each took, what the compile cache did, what fingerprinting costs.

A build is a quarter of an hour, so this benchmark does not build: every GROMACS image
records, in the lockfile it carries, how long its build took and the compile cache's own
counters (ccache hits and misses). This lists them for every project image in the engine
(stable builds compile everything; a dev build of a new HIP compiler should miss only the
HIP units; a rebuild bypasses the cache), then measures the codegen fingerprint of the
newest image of each platform now.

GPU targets: a ROCm build for several targets (`ORCH_GPU_ARCH=gfx1201,gfx942`) compiles
each HIP unit's device code once per target; nothing else depends on the list. The
per-target table groups the ROCm builds by how many targets they hold and how they were
built (every unit compiled, or the HIP units only with the rest from the compile cache:
the dev loop, and a stable build for a new target list), and gives the time each added
target costs: the slope between the one-target and the several-target medians (against
the other flavor's one-target builds compiled alike when the flavor has none: a stable
and a dev build from the cache compile the same HIP units with the same flags). The
two-target builds come from `tests/test_multi_target.py` (`-m multi_target`).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator import engine
from orchestrator.codegen.collect import run_probe
from orchestrator.images.catalog import list_images
from orchestrator.images.gromacs import lockfile_of
from orchestrator.images.provenance import Lockfile

Row = dict[str, str | int | float | None]
#: A build whose cache misses are at most this many is one of the HIP units only (51 HIP
#: units and up to 5 host units that embed the build's name, for GROMACS 2026.3).
HIP_ONLY_MISSES = 60


def how_built(lock: Lockfile) -> str:
    """`every unit` (no cache, or a cold one) or `HIP units` (the rest from the cache)."""
    cache = lock.compile_cache
    if cache is None or cache.disabled or cache.misses > HIP_ONLY_MISSES:
        return "every unit compiled"
    return "HIP units (rest from cache)"


def per_target(locks: list[Lockfile]) -> list[Row]:
    """Median build and fingerprint seconds per (flavor, how built, target count), and
    the seconds each target beyond the first adds (against one target, built alike)."""
    groups: dict[tuple[str, str, int], list[Lockfile]] = {}
    for lock in locks:
        targets = len(lock.record.gpu_archs)
        if lock.record.platform != "rocm" or not targets or lock.build_seconds is None:
            continue
        flavor = "dev" if (lock.record.build or "").startswith("dev-") else "stable"
        groups.setdefault((flavor, how_built(lock), targets), []).append(lock)
    rows: list[Row] = []
    for (flavor, how, targets), found in sorted(groups.items()):
        seconds = statistics.median(lock.build_seconds or 0.0 for lock in found)
        probes = [lock.codegen_seconds for lock in found if lock.codegen_seconds]
        other = "stable" if flavor == "dev" else "dev"  # compiled alike, same units
        one = groups.get((flavor, how, 1)) or groups.get((other, how, 1))
        added: str | None = None
        if one and targets > 1:
            base = statistics.median(lock.build_seconds or 0.0 for lock in one)
            versus = "" if groups.get((flavor, how, 1)) else f" (vs {other}'s one)"
            added = f"{(seconds - base) / (targets - 1):.0f}{versus}"
        rows.append({
            "flavor": flavor,
            "compiled": how,
            "targets": targets,
            "builds": len(found),
            "build s (median)": round(seconds),
            "s per added target": added,
            "fingerprint s": round(statistics.median(probes), 1) if probes else None,
            "kernels": max((lock.codegen_functions or 0) for lock in found) or None,
        })  # fmt: skip
    return rows


def main() -> tuple[list[Row], list[Row], list[Row]]:
    client = engine.connect()
    builds: list[Row] = []
    locks: list[Lockfile] = []
    newest: dict[str, tuple[str, str]] = {}
    for record in list_images(client):
        image = engine.image(client, record.tag)
        lock = lockfile_of(image) if image is not None else None
        if lock is None or record.tag.endswith(":dev-current"):
            continue
        locks.append(lock)
        cache = lock.compile_cache
        stack = f" ({record.rocm_stack})" if record.rocm_stack else ""
        builds.append({
            "image": record.tag,
            "platform": f"{record.platform}{stack}",
            "targets": record.gpu_arch,
            "compiler": (record.compiler_version or record.compiler or "")[:40],
            "build s": lock.build_seconds,
            "cache hits": None if cache is None else ("off" if cache.disabled else cache.hits),
            "cache misses": None if cache is None or cache.disabled else cache.misses,
            "functions": lock.codegen_functions,
        })  # fmt: skip
        kind = f"{record.platform} {record.gpu_arch}" if record.gpu_arch else record.platform
        newest.setdefault(kind or "?", (record.tag, record.id))
    probes: list[Row] = []
    for platform, (tag, image_id) in sorted(newest.items()):
        record = next(r for r in list_images(client) if r.tag == tag)
        started = time.monotonic()
        codegen = run_probe(client, image_id, record)
        probes.append({
            "image": tag,
            "platform": platform,
            "functions": len(codegen.kernels),
            "code objects": len(codegen.code_objects),
            "probe s (in container)": round(codegen.probe_seconds, 2),
            "whole s (container start included)": round(time.monotonic() - started, 2),
        })  # fmt: skip
    return builds, per_target(locks), probes
