"""AMD's profilers, as a ROCm run drives them: the kernel trace (rocprofv3, the
default where the image's stack ships it), hardware counters and system traces.

`trace`: mdrun under `rocprofv3 --kernel-trace`, whose rocpd output is the per-category
breakdown. `counters` (rocprof-compute): the run's timing comes from mdrun as it is; then
rocprof-compute replays mdrun once per counter group in a folder of its own and its
`analyze` writes CSVs beside the workload. A GPU the tool does not support (gfx1201 in
released versions) makes it decline: the run records its words as `skipped` and the
timing run still counts. `systrace` (rocprof-sys): mdrun runs under call-stack sampling
(or runtime instrumentation) and the tool writes a Perfetto trace and a wall-clock
profile below the run. Both tools are found through `$ROCM_PATH`, not a fixed path.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.breakdown import Breakdown
from orchestrator.parsers.mdlog import MdLog
from orchestrator.parsers.rocprof import find_rocprof_files, parse_rocprof
from orchestrator.parsers.rocprof_compute import find_workload, parse_workload, unsupported_arch
from orchestrator.parsers.rocprof_sys import parse_output, perfetto_hint
from orchestrator.platforms.base import ProfileMode, ProfileOutcome, ProfilerOptions
from orchestrator.platforms.rocm.stacks import of_image
from orchestrator.platforms.roles import ProfilerRole
from orchestrator.store.layout import COUNTERS_DIR, SYSTRACE_DIR, TRACE_DIR

#: Below COUNTERS_DIR: the profiled replay's own mdrun files, the workload, the analysis.
APP, WORKLOAD, ANALYSIS = "app", "workload", "analyze"
#: The profilers live in the image's ROCm; run.sh finds them through $ROCM_PATH.
ROCM_BIN = '"${ROCM_PATH:-/opt/rocm}/bin'
#: rocprof-sys needs ptrace (instrumentation) and perf events (CPU sampling, PAPI).
SYSTRACE_CAPS = ["SYS_PTRACE", "PERFMON"]
#: The host-wide perf_event_paranoid above which perf events need CAP_SYS_ADMIN.
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
#: rocprof-sys defaults for a run: its files below the run directory, no timestamped or
#: per-pid names (one process), the Perfetto trace and the wall-clock profile.
SYSTRACE_ENV = {
    "ROCPROFSYS_TRACE": "ON",
    "ROCPROFSYS_PROFILE": "ON",
    "ROCPROFSYS_TIME_OUTPUT": "OFF",
    "ROCPROFSYS_USE_PID": "OFF",
    "ROCPROFSYS_JSON_OUTPUT": "ON",
}


def counters_script(mdrun: list[str], workdir: str, extra: list[str]) -> str:
    """The timing run, then rocprof-compute's counter passes and analysis (never failing
    the run: the profiler's verdict is read from its status files afterwards)."""
    out = f"{workdir}/{COUNTERS_DIR}"
    replay = mdrun if "-s" in mdrun else [*mdrun, "-s", f"{workdir}/topol.tpr"]
    profile = ["profile", "-n", "gmxbench", "--output-directory", f"{out}/{WORKLOAD}", *extra,
               "--", *replay]  # fmt: skip
    analyze = ["analyze", "-p", f"{out}/{WORKLOAD}", "--output-format", "csv",
               "--output-name", f"{out}/{ANALYSIS}"]  # fmt: skip
    tool = f'{ROCM_BIN}/rocprof-compute"'
    return (
        "set +e\n"
        "# the timing run: mdrun as it is, its md.log the run's numbers\n"
        f"{shlex.join(mdrun)} || exit $?\n"
        "# the counter passes replay mdrun in a folder of their own\n"
        f"mkdir -p {out}/{APP} && cd {out}/{APP} || exit 1\n"
        f"{tool} {shlex.join(profile)} > {out}/profile.log 2>&1\n"
        f"echo $? > {out}/profile.status\n"
        f'if [ "$(cat {out}/profile.status)" = 0 ]; then\n'
        f"  {tool} {shlex.join(analyze)} > {out}/analyze.log 2>&1\n"
        f"  echo $? > {out}/analyze.status\n"
        "fi\n"
        "exit 0\n"
    )


def _status(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return lines[-1][:300] if lines else "no output"


def counters_outcome(out: Path) -> ProfileOutcome:
    """What rocprof-compute did in a finished run, with its per-kernel counters."""
    status = _status(out / "profile.status")
    log = out / "profile.log"
    if status is None:
        why = "rocprof-compute did not run (no profile.status)"
        return ProfileOutcome(mode="counters", status="failed", message=why)
    if status != 0:
        declined = unsupported_arch(log.read_text(errors="replace")) if log.exists() else None
        if declined:
            return ProfileOutcome(mode="counters", status="skipped", message=declined,
                                  files=[_rel(out, log)])  # fmt: skip
        return ProfileOutcome(
            mode="counters", status="failed", files=[_rel(out, log)],
            message=f"rocprof-compute profile exited {status}: {_last_line(log)}",
        )  # fmt: skip
    workload = find_workload(out / WORKLOAD)
    if workload is None:
        why = f"rocprof-compute left no pmc_perf.csv below {out.name}/"
        return ProfileOutcome(mode="counters", status="failed", message=why)
    try:
        summary = parse_workload(workload, analysis=out / ANALYSIS)
    except UserError as exc:
        return ProfileOutcome(mode="counters", status="failed", message=exc.message)
    files = sorted(_rel(out, p) for p in workload.iterdir() if p.is_file())
    analyzed = _status(out / "analyze.status")
    note = (
        None if analyzed == 0 else f"analyze exited {analyzed}: {_last_line(out / 'analyze.log')}"
    )
    return ProfileOutcome(mode="counters", status="ok", message=note, files=files, counters=summary)


def systrace_outcome(out: Path) -> ProfileOutcome:
    """What rocprof-sys wrote in a finished run: its files, the top functions, the trace."""
    if not out.is_dir():
        return ProfileOutcome(mode="systrace", status="failed",
                              message=f"rocprof-sys wrote nothing to {out.name}/")  # fmt: skip
    try:
        trace = parse_output(out)
    except UserError as exc:
        return ProfileOutcome(mode="systrace", status="failed", message=exc.message)
    files = [_rel(out, out / f) for f in trace.files]
    return ProfileOutcome(mode="systrace", status="ok", message=perfetto_hint(trace), files=files,
                          trace=trace)  # fmt: skip


def systrace_script(mdrun: list[str], workdir: str, options: ProfilerOptions) -> str:
    """mdrun under rocprof-sys (sampling, or runtime instrumentation), writing below the run;
    the recipe's and the command line's `ROCPROFSYS_*` settings over ours."""
    env = SYSTRACE_ENV | {"ROCPROFSYS_OUTPUT_PATH": f"{workdir}/{SYSTRACE_DIR}"}
    env |= options.systrace_env
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))
    tool = f"rocprof-sys-{options.systrace_mode}"
    return f'{exports}exec {ROCM_BIN}/{tool}" -- {shlex.join(mdrun)}\n'


def systrace_problems(paranoid: Path = PARANOID) -> list[str]:
    """rocprof-sys samples through perf events; the host's paranoia level decides whether a
    container may open them, and a container cannot change it."""
    try:
        level = int(paranoid.read_text().strip())
    except (OSError, ValueError):
        return []
    if level <= 2:
        return []
    return [
        f"kernel.perf_event_paranoid is {level} on this host, and rocprof-sys's CPU sampling and "
        "PAPI counters need 2 or less (above 2, Debian's and Ubuntu's kernels open perf events "
        "only with CAP_SYS_ADMIN; the run gets CAP_PERFMON). The setting is host-wide: `sudo "
        "sysctl kernel.perf_event_paranoid=2` (and a file in /etc/sysctl.d/ to keep it), or run "
        "without --profile=systrace"
    ]


def _rel(out: Path, path: Path) -> str:
    """A path relative to the run directory (the parent of the profiler's folder)."""
    return str(path.relative_to(out.parent))


class RocmProfiler(ProfilerRole):
    """rocprofv3, rocprof-compute and rocprof-sys of the image's ROCm ($ROCM_PATH/bin)."""

    def default_profile(self, variant: str | None) -> ProfileMode:
        """The kernel trace, where the image's stack ships rocprofv3."""
        return "trace" if of_image(variant).has_profilers else "none"

    def launch(
        self, mdrun: list[str], profile: ProfileMode, workdir: str,
        options: ProfilerOptions | None = None,
    ) -> str:  # fmt: skip
        """mdrun, or mdrun under a profiler of the image's ROCm ($ROCM_PATH/bin)."""
        options = options or ProfilerOptions()
        if profile == "trace":  # rocpd: upstream's default and maintained format since 7.0
            trace = ["--kernel-trace", "--output-format", "rocpd",
                     "-d", f"{workdir}/{TRACE_DIR}", "--", *mdrun]  # fmt: skip
            return f'exec {ROCM_BIN}/rocprofv3" {shlex.join(trace)}\n'
        if profile == "counters":
            return counters_script(mdrun, workdir, options.counters_args)
        if profile == "systrace":
            return systrace_script(mdrun, workdir, options)
        return "exec " + shlex.join(mdrun) + "\n"

    def profile_outcome(self, run_dir: Path, profile: ProfileMode) -> ProfileOutcome | None:
        if profile == "counters":
            return counters_outcome(run_dir / COUNTERS_DIR)
        if profile == "systrace":
            return systrace_outcome(run_dir / SYSTRACE_DIR)
        return None

    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> Breakdown | None:
        """GPU kernels are only known from a trace."""
        return parse_rocprof(run_dir / TRACE_DIR) if profile == "trace" else None

    def profile_breakdown(self, run_dir: Path) -> Breakdown | None:
        traces = run_dir / TRACE_DIR
        if traces.is_dir() and find_rocprof_files(traces):
            return parse_rocprof(traces)
        return None
