"""Nsight Compute, as a CUDA run drives it: per kernel its launches, time and executed
instructions (`--profile=trace`).

ncu replays every kernel launch to read its counters, serialised and at locked clocks, so
mdrun under ncu runs hundreds of times slower than it does alone (GROMACS 2026.3 on an
H100, 88k atoms: 452 ns/day alone, under 1 ns/day under ncu). Its md.log cannot be the
run's ns/day. rocprofv3's kernel trace (ROCm's `trace`) only timestamps launches, and a
ROCm trace run's own ns/day is what its record keeps; here instead, as ROCm's `counters`
mode does, the timing run is mdrun as it is (its md.log the run's numbers) and ncu then
replays mdrun in a folder of its own (`NCU_DIR`), for `REPLAY_STEPS` steps: counts are
compared per launch, so the replay need not be as long as the timing run. The breakdown's
kernel times come from that replay, and its notes say so.

The replay never fails the run: ncu's exit status is kept in `ncu.status`, and a replay
that broke leaves a timing run that still counts, with a `failed` profile outcome.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from orchestrator.core.errors import UserError
from orchestrator.parsers.breakdown import Breakdown, build_breakdown
from orchestrator.parsers.categories import classify
from orchestrator.parsers.mdlog import MdLog
from orchestrator.parsers.ncu import INSTRUCTIONS, TIME, instruction_counts, parse_ncu_csv
from orchestrator.platforms.base import ProfileMode, ProfileOutcome, ProfilerOptions
from orchestrator.platforms.roles import ProfilerRole
from orchestrator.store.layout import NCU_CSV, NCU_DIR

#: Below NCU_DIR: the replay's own mdrun files, ncu's output and exit status.
APP, LOG, STATUS = "app", "ncu.log", "ncu.status"
#: ncu as the CUDA toolkit installs it; run.sh finds it through $CUDA_HOME.
NCU = '"${CUDA_HOME:-/usr/local/cuda}/bin/ncu"'
#: Steps of the replay: each per-step kernel is launched about 50 times. ncu's replay costs
#: about 12 ms a launch on an H100 (200 steps of the 88k-atom water box, about 4,000
#: launches, took 52 s a run), and the verdict compares counts and times per launch, whose
#: spread across runs 50 launches already show: 50 steps keep a profiled pair near half a
#: minute.
REPLAY_STEPS = 50
#: What the breakdown of a replay says about its times and the run's ns/day.
REPLAY_NOTE = (
    "kernel times from Nsight Compute's replay (each launch serialised, clocks locked to "
    "base); the run's ns/day is from the unprofiled timing run before it"
)


def replay_argv(mdrun: list[str], workdir: str) -> list[str]:
    """mdrun for the replay: the timing run's input, `REPLAY_STEPS` steps, its own files."""
    argv = list(mdrun)
    if "-nsteps" in argv and argv.index("-nsteps") + 1 < len(argv):
        argv[argv.index("-nsteps") + 1] = str(REPLAY_STEPS)
    else:
        argv += ["-nsteps", str(REPLAY_STEPS)]
    return argv if "-s" in argv else [*argv, "-s", f"{workdir}/topol.tpr"]


def trace_script(mdrun: list[str], workdir: str) -> str:
    """The timing run, then ncu's replay writing its CSV (never failing the run)."""
    out = f"{workdir}/{NCU_DIR}"
    # mangled names: the codegen fingerprint's keys. ncu's demangler spells template
    # arguments its own way (`<4, 1, 1>` where c++filt writes `<4, true, true>`) and
    # drops cub's inline namespaces, so its demangled names match no fingerprint.
    ncu = ["--csv", "--print-units", "base", "--print-kernel-base", "mangled",
           "--metrics", f"{TIME},{INSTRUCTIONS}",
           "--log-file", f"{out}/{NCU_CSV}", *replay_argv(mdrun, workdir)]  # fmt: skip
    return (
        "set +e\n"
        "# the timing run: mdrun as it is, its md.log the run's numbers\n"
        f"{shlex.join(mdrun)} || exit $?\n"
        "# ncu replays every kernel: its own mdrun, in a folder of its own\n"
        f"mkdir -p {out}/{APP} && cd {out}/{APP} || exit 1\n"
        f"{NCU} {shlex.join(ncu)} > {out}/{LOG} 2>&1\n"
        f"echo $? > {out}/{STATUS}\n"
        "exit 0\n"
    )


def _last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return lines[-1][:300] if lines else "no output"


def _replay_problem(out: Path) -> str | None:
    """Why the replay left nothing to read; None when it finished."""
    try:
        status = int((out / STATUS).read_text().strip())
    except (OSError, ValueError):
        return "Nsight Compute did not run (no ncu.status)"
    if status != 0:
        return f"ncu exited {status}: {_last_line(out / LOG)}"
    if not (out / NCU_CSV).is_file():
        return f"ncu left no {NCU_CSV} below {out.name}/"
    return None


def ncu_breakdown(csv: Path) -> Breakdown:
    """Time per category from ncu's CSV, with each kernel's per-launch deciles."""
    profile = parse_ncu_csv(csv.read_text(errors="replace"), str(csv))
    rows, stats = [], {}
    for kernel in profile.kernels.values():
        category, known = classify(kernel.name)
        rows.append((kernel.name, category, kernel.launches, round(kernel.time_ns), known))
        if kernel.median_ns is not None and kernel.p10_ns is not None and kernel.p90_ns:
            stats[kernel.name] = (kernel.median_ns / 1e3, kernel.p10_ns / 1e3, kernel.p90_ns / 1e3)
    return build_breakdown("ncu gpu__time_duration.sum", [str(csv)], rows, call_stats=stats,
                           notes=[REPLAY_NOTE])  # fmt: skip


def ncu_outcome(out: Path) -> ProfileOutcome:
    """What ncu's replay did, with the executed instructions per kernel it counted."""
    why = _replay_problem(out)
    files = [str(p.relative_to(out.parent)) for p in (out / NCU_CSV, out / LOG) if p.is_file()]
    if why is not None:
        return ProfileOutcome(mode="trace", status="failed", message=why, files=files)
    try:
        profile = parse_ncu_csv((out / NCU_CSV).read_text(errors="replace"), str(out / NCU_CSV))
    except UserError as exc:
        return ProfileOutcome(mode="trace", status="failed", message=exc.message, files=files)
    return ProfileOutcome(mode="trace", status="ok", files=files,
                          instructions=instruction_counts(profile))  # fmt: skip


class CudaProfiler(ProfilerRole):
    """Nsight Compute of the image's CUDA toolkit ($CUDA_HOME/bin/ncu)."""

    def launch(
        self, mdrun: list[str], profile: ProfileMode, workdir: str,
        options: ProfilerOptions | None = None,
    ) -> str:  # fmt: skip
        """mdrun, then (`trace`) its replay under ncu; AMD's other modes are refused."""
        if profile == "trace":
            return trace_script(mdrun, workdir)
        if profile in ("counters", "systrace"):
            raise UserError(
                f"--profile={profile} needs AMD's profilers (ORCH_PLATFORM=rocm); on CUDA, "
                "--profile=trace runs Nsight Compute (per-kernel time and executed instructions)."
            )
        return "exec " + shlex.join(mdrun) + "\n"

    def profile_outcome(self, run_dir: Path, profile: ProfileMode) -> ProfileOutcome | None:
        return ncu_outcome(run_dir / NCU_DIR) if profile == "trace" else None

    def breakdown(self, md: MdLog, run_dir: Path, profile: ProfileMode) -> Breakdown | None:
        """GPU kernels are only known from ncu's replay; a failed replay tells nothing (its
        outcome says why) and the timing run still counts."""
        if profile != "trace" or _replay_problem(run_dir / NCU_DIR) is not None:
            return None
        return ncu_breakdown(run_dir / NCU_DIR / NCU_CSV)

    def profile_breakdown(self, run_dir: Path) -> Breakdown | None:
        csv = run_dir / NCU_DIR / NCU_CSV
        return ncu_breakdown(csv) if csv.is_file() else None
