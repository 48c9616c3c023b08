"""GROMACS builds: how long each took, what the compile cache did, what fingerprinting costs.

A build is a quarter of an hour, so this benchmark does not build: every GROMACS image
records, in the lockfile it carries, how long its build took and the compile cache's own
counters (ccache hits and misses). This lists them for every project image in the engine
(stable builds compile everything; a dev build of a new HIP compiler should miss only the
HIP units; a rebuild bypasses the cache), then measures the codegen fingerprint of the
newest image of each platform now.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.core import engine
from orchestrator.images.catalog import list_images
from orchestrator.images.fingerprint import fingerprint
from orchestrator.images.gromacs import lockfile_of

Row = dict[str, str | int | float | None]


def main() -> tuple[list[Row], list[Row]]:
    client = engine.connect()
    builds: list[Row] = []
    newest: dict[str, tuple[str, str]] = {}
    for record in list_images(client):
        image = engine.image(client, record.tag)
        lock = lockfile_of(image) if image is not None else None
        if lock is None or record.tag.endswith(":dev-current"):
            continue
        cache = lock.compile_cache
        stack = f" ({record.rocm_stack})" if record.rocm_stack else ""
        builds.append({
            "image": record.tag,
            "platform": f"{record.platform}{stack}",
            "compiler": (record.compiler_version or record.compiler or "")[:40],
            "build s": lock.build_seconds,
            "cache hits": None if cache is None else ("off" if cache.disabled else cache.hits),
            "cache misses": None if cache is None or cache.disabled else cache.misses,
            "functions": lock.codegen_functions,
        })  # fmt: skip
        newest.setdefault(record.platform or "?", (record.tag, record.id))
    probes: list[Row] = []
    for platform, (tag, image_id) in sorted(newest.items()):
        record = next(r for r in list_images(client) if r.tag == tag)
        started = time.monotonic()
        codegen = fingerprint(client, image_id, record)
        probes.append({
            "image": tag,
            "platform": platform,
            "functions": len(codegen.kernels),
            "code objects": len(codegen.code_objects),
            "probe s (in container)": round(codegen.probe_seconds, 2),
            "whole s (container start included)": round(time.monotonic() - started, 2),
        })  # fmt: skip
    return builds, probes
