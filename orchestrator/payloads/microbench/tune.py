"""Tune the copy kernel of `bandwidth` with Kernel Tuner, inside a run container.

Runs one brute-force search over the kernel's space with the backend of the platform
(`c`: the image's C compiler and OpenMP; `cupy`: CUDA; `hip`: hip-python) and leaves
Kernel Tuner's own cache file (`tune_cache.json`: every configuration and its times)
and `tune_meta.json` (what was tuned, with what) in the output folder. The analysis
(best configuration, tuning impact, whether the optimum moved) is the orchestrator's,
on the host, from the cache file alone: `orchestrator.parsers.tuning`.

    python3 tune.py --backend c --compiler CXX --flags "-O3 -mavx2" --size BYTES --out DIR
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from kernel_tuner import __version__ as kt_version
from kernel_tuner import tune_kernel

HERE = Path(__file__).resolve().parent

SPACES = {
    "c": {
        "full": {"VEC": [4, 8], "UNROLL": [1, 2, 4, 8], "NT": [0, 1], "CHUNK": [1, 64, 4096]},
        "quick": {"VEC": [4, 8], "UNROLL": [1, 4], "NT": [0, 1], "CHUNK": [1, 4096]},
    },
    "gpu": {
        "full": {
            "block_size_x": [128, 256, 512, 1024],
            "UNROLL": [1, 2, 4, 8],
            "VEC": [1, 2, 4],
            "NT": [0, 1],
            "WPT": [1, 4, 16],
        },
        "quick": {
            "block_size_x": [256, 1024],
            "UNROLL": [1, 8],
            "VEC": [1, 4],
            "NT": [0, 1],
            "WPT": [1, 16],
        },
    },
}


def main() -> int:
    warnings.filterwarnings("ignore", message="None of the tunable parameters specify thread")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["c", "cupy", "hip"], required=True)
    parser.add_argument("--space", choices=["quick", "full"], default="full")
    parser.add_argument("--size", type=int, default=256 * 2**20, help="bytes per array")
    parser.add_argument("--compiler", default=os.environ.get("CXX", "g++"))
    parser.add_argument("--flags", default="-O3")
    parser.add_argument("--vec", default="", help="CPU vector widths to try, e.g. 4,8")
    parser.add_argument("--iterations", type=int, default=7)
    parser.add_argument(
        "--simulate", help="replay this cache file (Kernel Tuner's simulation mode)"
    )
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()

    gpu = args.backend != "c"
    space = dict(SPACES["gpu" if gpu else "c"][args.space])
    if args.vec and not gpu:
        space["VEC"] = [int(v) for v in args.vec.split(",")]
    n = args.size // 4 // 64 * 64
    rng = np.random.default_rng(1)
    src = rng.random(n, dtype=np.float32)
    dst = np.zeros_like(src)
    kwargs = {
        "iterations": args.iterations,
        "strategy": "brute_force",
        "cache": str(args.out / "tune_cache.json"),
        "verbose": False,
        "quiet": True,
    }
    if args.simulate:
        kwargs |= {"cache": args.simulate, "simulation_mode": True}
    started = time.monotonic()
    if gpu:
        results, env = tune_kernel(
            "copy_kernel",
            str(HERE / "tune_gpu.cu"),
            n,
            [dst, src, np.int32(n)],
            space,
            lang="cupy" if args.backend == "cupy" else "HIP",
            grid_div_x=["block_size_x", "WPT", "VEC", "UNROLL"],
            **kwargs,
        )
    else:
        flags = [*args.flags.split(), "-fopenmp"]
        results, env = tune_kernel(
            "copy_kernel",
            str(HERE / "tune_cpu.c"),
            n,
            [dst, src, np.int32(n)],
            space,
            lang="C",
            compiler=args.compiler,
            compiler_options=flags,
            **kwargs,
        )
    meta = {
        "schema": 1,
        "program": "tune",
        "backend": args.backend,
        "space": args.space,
        "bytes": n * 4,
        "compiler": {"c": args.compiler, "cupy": "nvrtc", "hip": "hiprtc"}[args.backend],
        "compiler_version": _version(args.compiler) if not gpu else None,
        "flags": args.flags if not gpu else None,
        "device": env.get("device_name") or platform.processor() or platform.machine(),
        "kernel_tuner": kt_version,
        "configurations": len(results),
        "seconds": round(time.monotonic() - started, 3),
        "simulated": bool(args.simulate),
    }
    (args.out / "tune_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return 0


def _version(compiler: str) -> str | None:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.splitlines()[0] if out.stdout else None


if __name__ == "__main__":
    sys.exit(main())
