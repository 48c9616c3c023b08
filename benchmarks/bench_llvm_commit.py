"""What an LLVM commit costs outside the compiler, on the real llvm-project (2.4 GB).

Drives the product's LLVM path (`plan_toolchain_llvm`: the bundle of what the workspace's
clone lacks, the fetch, the checkout, the configure, ninja's plan) on Debian's
llvm-toolchain-22 source (`tests/real_llvm.py`) in a new workspace volume: the release
(a new clone), the one-file AMDGPU commit, and a working tree with a new file. The volume
is measured after each. Compiling LLVM is left out (hours on 2 cores; its figures come
from the lent 16-core host, tests/data/real_llvm/host-build/), and so is what only a
built tree has: the distribution's install and the image commit. The commit of a layer
the size of the host's stripped distribution is measured here on its own (random bytes:
the engine stores layers uncompressed, so their content does not change the time).
Targets: ≤ 60 s outside the compiler and ≤ 300 MB of new disk per commit after the first.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import docker.errors
from real_llvm import real_llvm

from orchestrator import engine
from orchestrator.core.events import Event, Message
from orchestrator.core.settings import load_settings
from orchestrator.images import llvm_workspace
from orchestrator.images.toolchain_llvm import (
    ensure_environment,
    plan_toolchain_llvm,
    workspace_volume,
)

#: `du -sb` of the stripped distribution the lent host installed (host-build/prefix1.txt).
DISTRIBUTION_BYTES = 202_369_814
UNTRACKED = "llvm/lib/Target/AMDGPU/GmxbenchPerf.md"  # an unlisted .cpp fails LLVM's CMake


def _volume_bytes(client: engine.Client, image: str, volume: str) -> int:
    _code, out = engine.run_capture(
        client, image, ["du", "-sb", llvm_workspace.MOUNT], stderr=False,
        volumes={volume: {"bind": llvm_workspace.MOUNT, "mode": "ro"}},
    )  # fmt: skip
    return int(out.split()[0])


def _commit_seconds(client: engine.Client, image: str) -> tuple[float, int]:
    """Seconds to commit a container holding a distribution-sized prefix; the layer size."""
    container = client.containers.create(
        image, ["bash", "-c", f"mkdir -p /opt/llvm-perf && head -c {DISTRIBUTION_BYTES} "
                "/dev/urandom > /opt/llvm-perf/blob"], network_disabled=True,
    )  # fmt: skip
    try:
        container.start()
        container.wait()
        started = time.monotonic()
        made = container.commit()
        seconds = time.monotonic() - started
        size = int(client.api.inspect_image(made.id)["Size"]) - int(
            client.api.inspect_image(image)["Size"]
        )
        client.images.remove(made.id)
        return seconds, size
    finally:
        container.remove(force=True)


def main() -> list[dict[str, str | float]]:
    client = engine.connect()
    repo = real_llvm()
    rows: list[dict[str, str | float]] = []
    with tempfile.TemporaryDirectory(prefix="gmxbench-perf-") as tmp:
        settings = load_settings(
            platform="rocm", rocm_stack="debian", gpu_arch="gfx1201",
            results_dir=Path(tmp) / "results", llvm_source=str(repo.path),
        )  # fmt: skip
        environment = ensure_environment(client, settings)
        volume = workspace_volume(settings, environment, str(repo.path))
        with contextlib.suppress(docker.errors.NotFound):
            client.volumes.get(volume).remove()
        before = 0
        untracked = repo.path / UNTRACKED
        cases = (
            ("release (a new clone)", repo.release),
            ("one-file AMDGPU commit", repo.edited),
            ("working tree with a new file", str(repo.path)),
        )
        try:
            for what, rev in cases:
                if what.startswith("working tree"):
                    untracked.write_text("// new, untracked\n")
                said: list[Event] = []
                started = time.monotonic()
                plan_toolchain_llvm(client, settings, rev, emit=said.append)
                seconds = time.monotonic() - started
                texts = [e.text for e in said if isinstance(e, Message)]
                bundle = next((t for t in texts if t.startswith("bundle: ")), "bundle: none")
                size = _volume_bytes(client, environment.tag, volume)
                rows.append({
                    "case": what, "fetch+checkout+configure+plan s": round(seconds, 1),
                    "bundle": bundle.removeprefix("bundle: "),
                    "volume growth MB": round((size - before) / 1e6, 1),
                })  # fmt: skip
                before = size
        finally:
            untracked.unlink(missing_ok=True)
        commit_s, layer = _commit_seconds(client, environment.tag)
        rows.append({
            "case": f"image commit of a {DISTRIBUTION_BYTES / 1e6:.0f} MB distribution layer",
            "fetch+checkout+configure+plan s": round(commit_s, 1), "bundle": "",
            "volume growth MB": round(layer / 1e6, 1),
        })  # fmt: skip
    return rows


if __name__ == "__main__":
    from tabulate import tabulate

    print(tabulate(main(), headers="keys"))
