"""Every path under the results folder, named here and nowhere else (asv's `get_filename`).

    results/
        <build>__<system>__<tag>/          one run (`run_id`), mounted at /run in its container
            result.json                    its record (`store.records.RunResult`)
            kernel_result.json             the per-category breakdown of a finished run
            codegen.json                   the codegen fingerprint of the image it ran
            run.sh, inputs/                the script the container ran, and its inputs
            stdout.log, stderr.log         the container's output
            topol.* (md.log by hand)       mdrun's files (`-deffnm topol`)
            .gmxbench-times                the container's clock at setup and at mdrun
            .gmxbench-heartbeat            touched by the runner while the run is on
            scheduler.json, .log, .sh      a batch job's end as its scheduler saw it
            counters.json, systrace.json   what rocprof-compute and rocprof-sys found
            instructions.json              executed instructions per kernel (ncu)
            rocprof/, rocprof-compute/, rocprof-sys/   the profilers' own output
            ncu/ncu.csv, ncu/app/          Nsight Compute's CSV, its replay's mdrun files
            kernel.json, bandwidth.json, tune_*.json   a microbenchmark's output
        .scheduler/<run id>.sh|.out        a batch job's script and output until it ends
        .asm/<candidate group>.json        a bench's changed kernels' code diffs
        images/<tag>.lock.json             an image's lockfile; `.codegen.json`, `.rebuild.json`
        logs/<tag>.<what>.log              the whole log of an image's last build
        runs.sqlite                        the results database (SQLite's, by default)

Repeats of one measurement are a group: the runs `<group>-r1`, `<group>-r2`, … of the
group `<build>__<system>__<tag>`; a bench re-measures its baseline in the group tagged
`kernel-baseline-<candidate tag>`. Records say their group, repeat and role as fields
(`RunResult`); the names here are how they lie on disk and how records from before those
fields are read. This module imports nothing of the project's: the images (below the
store) ask it too.
"""

from __future__ import annotations

import re
from pathlib import Path

#: A run's record, and the per-category breakdown of a finished run.
RESULT_FILE, BREAKDOWN_FILE = "result.json", "kernel_result.json"
#: The codegen of the image the run ran (`codegen.collect`), for provenance.
CODEGEN_FILE = "codegen.json"
SCRIPT_FILE = "run.sh"
INPUTS_DIR = "inputs"
STDOUT_FILE, STDERR_FILE = "stdout.log", "stderr.log"
#: run.sh writes the start of input preparation and of mdrun here (container clock).
TIMES_FILE = ".gmxbench-times"
#: Touched every few seconds while the run's process lives (`liveness.heartbeat`).
HEARTBEAT_FILE = ".gmxbench-heartbeat"
#: mdrun's `-deffnm`: md.log is `topol.log`, the run input `topol.tpr`.
DEFFNM = "topol"
#: The md.log of a run directory: ours, or mdrun's default name in a run made by hand.
LOG_NAMES = (f"{DEFFNM}.log", "md.log")
#: A batch job's end as its scheduler saw it, the job's own output and its script.
SCHEDULER_FILE, SCHEDULER_LOG, SCHEDULER_SCRIPT = "scheduler.json", "scheduler.log", "scheduler.sh"
#: rocprof-compute's counters per kernel, and rocprof-sys's files and top functions.
COUNTERS_FILE, SYSTRACE_FILE = "counters.json", "systrace.json"
#: Where rocprofv3 (`--profile=trace`), rocprof-compute and rocprof-sys write in a run.
TRACE_DIR, COUNTERS_DIR, SYSTRACE_DIR = "rocprof", "rocprof-compute", "rocprof-sys"
#: Executed instructions per kernel (`parsers.instructions.InstructionCounts`).
INSTRUCTIONS_FILE = "instructions.json"
#: Nsight Compute's folder in a run (CUDA `--profile=trace`), and its CSV (`--log-file`).
NCU_DIR, NCU_CSV = "ncu", "ncu.csv"
#: What a microbenchmark writes in its run directory (`runs.microbench_runs`, in the image).
BANDWIDTH_FILE, USER_KERNEL_FILE = "bandwidth.json", "kernel.json"
TUNE_CACHE_FILE, TUNE_META_FILE = "tune_cache.json", "tune_meta.json"
#: Kernel Tuner's cache summed up by the host once the run ends.
TUNE_SUMMARY_FILE = "tune_summary.json"
#: Job scripts and outputs of runs handed to a batch system, beside the run directories.
SCHEDULER_DIR = ".scheduler"
#: Code diffs of a bench's changed kernels, kept for the report after the images go.
ASM_DIR = ".asm"
#: Lockfiles, codegens and rebuild reports of images; their build logs.
IMAGES_DIR, LOGS_DIR = "images", "logs"
LOCK_SUFFIX = ".lock.json"
#: The results database when no server is named (`ORCH_DATABASE_URL`).
SQLITE_FILE = "runs.sqlite"
#: Where a run directory is mounted in its container.
CONTAINER_DIR = "/run"
#: The tag that marks the baseline runs of a build and system.
BASELINE_TAG = "kernel-baseline"

_REPEAT = re.compile(r"-r(\d+)$")


def run_id(build: str, system: str, tag: str) -> str:
    """The name of a run's directory, and of the group whose runs are its repeats."""
    safe_system = system.replace(":", "-").replace("/", "-")
    return f"{build}__{safe_system}__{tag}"


def repeat_tag(tag: str, repeat: int, repeats: int) -> str:
    """The tag of repeat `repeat` (1-based) of `repeats`: the tag itself for a single run."""
    return tag if repeats == 1 else f"{tag}-r{repeat}"


def split_repeat(name: str) -> tuple[str, int | None]:
    """A run id or tag as its group's and its repeat number (None for a single run)."""
    match = _REPEAT.search(name)
    return (name[: match.start()], int(match[1])) if match else (name, None)


def group_tag(tag: str, repeat: int | None) -> str:
    """The tag of the group whose repeat `repeat` is tagged `tag`."""
    return tag.removesuffix(f"-r{repeat}") if repeat is not None else tag


def group_of(run: str) -> str:
    """The group of a run directory's name (a record says it: `RunResult.group`)."""
    return split_repeat(run)[0]


def group_pattern(group: str) -> re.Pattern[str]:
    """The names of a group's run directories: the group's own, and `<group>-r<N>`."""
    return re.compile(re.escape(group) + r"(?:-r(\d+))?")


def baseline_tag(tag: str) -> str:
    """The tag of the group in which a bench tagged `tag` re-measures its baseline."""
    return f"{BASELINE_TAG}-{tag}"


def bench_of_baseline(group_tag: str) -> str | None:
    """The bench tag a baseline group's tag names; None for any other group's tag."""
    prefix = f"{BASELINE_TAG}-"
    return group_tag.removeprefix(prefix) if group_tag.startswith(prefix) else None


def is_run_dir(path: Path) -> bool:
    """Whether a folder of the results folder is a run directory (by its name)."""
    return path.is_dir() and "__" in path.name


def job_files(root: Path, run: str) -> tuple[Path, Path]:
    """Where a batch job's script and output go before its run directory exists."""
    folder = root / SCHEDULER_DIR
    return folder / f"{run}.sh", folder / f"{run}.out"


def asm_diffs_path(root: Path, candidate_group: str) -> Path:
    return root / ASM_DIR / f"{candidate_group}.json"


def image_file(results_dir: Path, tag: str, suffix: str) -> Path:
    """`results/images/<tag>.<suffix>`: where an image's lockfile and reports live."""
    return results_dir / IMAGES_DIR / (tag.replace("/", "_").replace(":", "__") + suffix)


def lockfile_path(results_dir: Path, tag: str) -> Path:
    return image_file(results_dir, tag, LOCK_SUFFIX)


def lockfiles(results_dir: Path) -> list[Path]:
    """Every image lockfile in the results folder, by name."""
    return sorted((results_dir / IMAGES_DIR).glob(f"*{LOCK_SUFFIX}"))


def codegen_path(results_dir: Path, tag: str) -> Path:
    """The codegen fingerprint an image's build took (`codegen.collect`)."""
    return image_file(results_dir, tag, ".codegen.json")


def rebuild_report_path(results_dir: Path, tag: str) -> Path:
    """What the last `rebuild` of an image found, next to its lockfile."""
    return image_file(results_dir, tag, ".rebuild.json")


def build_log_path(results_dir: Path, tag: str, what: str = "build") -> Path:
    """`results/logs/<tag>.build.log`: the whole log of the last build of `tag` (`what`
    names other logs of an image: `rebuild`, `debootstrap`). Not beside the lockfiles:
    a build that fails or is stopped leaves its log, and `results/images/` only what
    was made."""
    return results_dir / LOGS_DIR / image_file(results_dir, tag, f".{what}.log").name


def sqlite_path(results_dir: Path) -> Path:
    return results_dir / SQLITE_FILE
