"""The microbenchmark half of a run: what the container runs, and what the run found.

The runner (`runs.runner`) owns everything a run is (record, container, signals,
liveness); this module answers the two questions that differ for a microbenchmark
recipe: the command run.sh executes in the build's microbenchmark image
(`images.microbench`), and which numbers of the files it left become the run's metrics.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.core.files import write_atomic
from orchestrator.images.microbench_image import MICROBENCH_DIR, MicrobenchImage
from orchestrator.images.user_kernels import BINARY, UserProgram
from orchestrator.parsers.microbench import (
    MetricValue,
    bandwidth_values,
    kernel_values,
    parse_bandwidth,
    parse_kernel,
    summarize,
    tune_values,
)
from orchestrator.runs.microbench_recipe import ResolvedMicrobench
from orchestrator.store.layout import (
    BANDWIDTH_FILE,
    TUNE_CACHE_FILE,
    TUNE_META_FILE,
    TUNE_SUMMARY_FILE,
    USER_KERNEL_FILE,
)
from orchestrator.store.records import MICROBENCH_KIND, RunResult


def command(
    system: ResolvedMicrobench, image: MicrobenchImage, workdir: str
) -> tuple[list[str], str]:
    """(argv, the output redirection run.sh adds) of the microbenchmark program."""
    if isinstance(system.program, UserProgram):
        argv = [BINARY, "--size", str(system.bytes), "--variant", system.variant]
        return argv, f" > {USER_KERNEL_FILE}"
    if system.program == "bandwidth":
        binary = "bandwidth-nt" if system.variant == "nt" else "bandwidth"
        argv = [f"{MICROBENCH_DIR}/bin/{binary}"]
        if system.bytes is not None:
            argv += ["--size", str(system.bytes)]
        return argv, f" > {BANDWIDTH_FILE}"
    compiler = image.compiler
    argv = [
        "python3", f"{MICROBENCH_DIR}/tune.py", "--backend", "c", "--space", system.variant,
        "--size", str(system.bytes), "--compiler", compiler.compiler,
        "--flags", " ".join(compiler.flags), "--vec", ",".join(map(str, compiler.vector_widths)),
        "--out", workdir,
    ]  # fmt: skip
    return argv, ""


def script(argv: list[str], redirect: str, times_file: str, workdir: str) -> str:
    return (
        "#!/bin/sh\n# written by gmxbench: run the kernel benchmark\n"
        f"cd {workdir}\n"
        f"date +%s.%N > {times_file}\n"
        f"date +%s.%N >> {times_file}\n"
        f"exec {shlex.join(argv)}{redirect}\n"
    )


def fill(result: RunResult, system: ResolvedMicrobench, run_dir: Path) -> None:
    """The metrics of a run whose container exited, or why there are none."""
    result.kind, result.headline = MICROBENCH_KIND, system.headline
    if result.return_code != 0:
        result.failure = result.failure or f"{system.program} exited with code {result.return_code}"
        return
    try:
        values = _values(result, system, run_dir)
    except UserError as exc:
        result.failure = result.failure or exc.message
        return
    if isinstance(system.program, UserProgram):  # the recipe picks what it judges
        missing = sorted(m.name for m in system.metrics if m.name not in values)
        if missing:
            result.failure = (
                f"{system.program} reported no {', '.join(missing)}; it reported "
                f"{', '.join(sorted(values))}. Time the kernels those metrics name "
                f'(`bench.time("<name>", bytes, ...)` gives <name>_ms, and <name>_gbs when '
                f"bytes is not 0), or fix the metrics in {system.source or 'the recipe'}."
            )
            return
        values = {name: value for name, value in values.items() if system.spec(name)}
    undeclared = sorted(name for name in values if system.spec(name) is None)
    if undeclared:
        result.failure = (
            f"{system.program} reported metrics its recipe does not declare: "
            f"{', '.join(undeclared)}. Declare them in {system.source or 'the recipe'}."
        )
        return
    result.metrics = {}
    for name, value in values.items():
        spec = system.spec(name)
        assert spec is not None
        result.metrics[name] = MetricValue(value=value, unit=spec.unit, better=spec.better)
    result.finished = True


def _values(result: RunResult, system: ResolvedMicrobench, run_dir: Path) -> dict[str, float]:
    if isinstance(system.program, UserProgram):
        user = parse_kernel(run_dir / USER_KERNEL_FILE)
        result.facts = {
            "api": user.api,
            "device": user.device.name,
            "compute units": str(user.device.compute_units),
            "kernels": ", ".join(k.name for k in user.kernels),
        }
        return kernel_values(user)
    if system.program == "bandwidth":
        out = parse_bandwidth(run_dir / BANDWIDTH_FILE)
        ro, rw = out.peak("ro"), out.peak("rw")
        result.facts = {
            "api": out.api,
            "device": out.device.name,
            "compute units": str(out.device.compute_units),
            "sizes": str(len(out.rows)),
            "ro peak at": f"{ro.bytes} B",
            "rw peak at": f"{rw.bytes} B",
        }
        return bandwidth_values(out)
    if not (run_dir / TUNE_META_FILE).is_file():
        raise UserError(f"tune.py wrote no {TUNE_META_FILE}: it stopped early (see stderr.log).")
    summary = summarize(run_dir / TUNE_CACHE_FILE)
    write_atomic(run_dir / TUNE_SUMMARY_FILE, summary.model_dump_json(indent=2) + "\n")
    result.facts = {
        "best configuration": summary.best.label,
        "configurations": f"{summary.valid} of {summary.configurations} ran",
        "cache file": TUNE_CACHE_FILE,
    }
    return tune_values(summary)
