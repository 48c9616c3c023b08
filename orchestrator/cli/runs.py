"""Run commands: `run`, `runs list|clean`, `parse`, `recipes`."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from tabulate import tabulate

from orchestrator import engine
from orchestrator.cli.common import (
    Commands,
    add_option,
    engine_for,
    executor_option,
    json_option,
    print_json,
    with_executor,
)
from orchestrator.cli.console import Console
from orchestrator.core import interrupts
from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings
from orchestrator.platforms.base import ProfilerOptions
from orchestrator.report.text import microbench_run_text, top_functions_text
from orchestrator.runs import runner
from orchestrator.runs.clean import clean_runs
from orchestrator.runs.executors import Job, LocalExecutor, executor_for
from orchestrator.runs.recipe import find_recipes
from orchestrator.store import layout, records, runstore
from orchestrator.workflows.options import CPU_ONLY, DRY_RUN, STEPS

PROFILES = ("none", "trace", "counters", "systrace")


def register(sub: Commands) -> None:
    p = sub.add_parser(
        "run", help="one mdrun (or kernel benchmark) of a build: results/<build>__<system>__<tag>"
    )
    p.add_argument(
        "build",
        help="build name (stable-cpu-gcc12, dev-current) or image tag "
        "(a toolchain image for kernel benchmarks)",
    )
    p.add_argument("system", nargs="?", default=None, help="recipe system (default: water)")
    p.add_argument("tag", nargs="?", default=None, help="run tag (default: run-<UTC time>)")
    p.add_argument(
        "--profile", default="none", choices=PROFILES,
        help="trace: kernel trace (rocprofv3); counters: hardware counters per kernel "
        "(rocprof-compute); systrace: the whole application for Perfetto (rocprof-sys)",
    )  # fmt: skip
    p.add_argument(
        "--profiler-env", action="append", default=[], metavar="ROCPROFSYS_NAME=VALUE",
        help="a rocprof-sys setting for --profile=systrace (repeatable; over the recipe's)",
    )  # fmt: skip
    p.add_argument(
        "--systrace-mode", choices=["sample", "instrument"], default=None,
        help="rocprof-sys call-stack sampling (default) or runtime instrumentation",
    )  # fmt: skip
    p.add_argument(
        "--counters-args", default=None, metavar="ARGS",
        help="rocprof-compute profile arguments that narrow its passes, e.g. \"-k nbnxm\"",
    )  # fmt: skip
    add_option(p, STEPS)
    p.add_argument("--device", type=int, default=0, help="GPU index (rocm)")
    add_option(p, CPU_ONLY.but(
        help="run a GPU build on the host CPU only (-nb cpu -pme cpu, no devices)"
    ))  # fmt: skip
    p.add_argument("--timeout", type=float, default=3600.0, help="wall-clock limit, seconds")
    p.add_argument("--inputs-dir", type=Path, default=None, help="pre-downloaded archives")
    add_option(p, DRY_RUN.but(help="print the container configuration"))
    executor_option(p)
    p.add_argument(
        "--no-database", dest="record", action="store_false",
        help="leave indexing the run to the host that submitted it (what SLURM jobs run)",
    )  # fmt: skip
    p.set_defaults(handler=run, mdrun_args=[])

    p = sub.add_parser("runs", help="list the runs in results/ with their state; clean up")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="verb")
    v = verbs.add_parser("list", help="every run (or a group): finished, failed, running, …")
    v.add_argument("spec", nargs="?", default=None, help="a run id or group to list")
    json_option(v, "every run's state, headline value and why")
    v.set_defaults(handler=list_runs)
    v = verbs.add_parser("clean", help="remove containers of dead runs, close their records")
    add_option(v, DRY_RUN.but(help="say what would be done"))
    v.set_defaults(handler=clean)

    p = sub.add_parser(
        "parse", help="parse an md.log, rocprof CSV(s), rocpd databases or a run directory to JSON"
    )
    p.add_argument("path", type=Path)
    p.set_defaults(handler=parse)

    p = sub.add_parser("recipes", help="the systems runs can use, and where each is defined")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=recipes)


def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    mdrun_args, profile = [], args.profile
    for arg in args.mdrun_args:
        if arg.startswith("--profile="):  # intercepted before mdrun, as gmxrun did
            profile = arg.split("=", 1)[1]
        else:
            mdrun_args.append(arg)
    if profile not in PROFILES:
        raise UsageError(
            f"--profile={profile} is not a profile mode: use trace, counters or systrace."
        )
    settings = with_executor(settings, args)
    request = runner.RunRequest(
        build=args.build,
        system=args.system,
        tag=args.tag,
        profile=profile,
        mdrun_args=mdrun_args,
        steps=args.steps,
        device=args.device,
        timeout=args.timeout,
        inputs_dir=args.inputs_dir,
        cpu_only=args.cpu_only,
        record=args.record,
        profiler=_profiler(args),
    )
    client = engine_for(settings)
    if settings.executor != LocalExecutor.name or client is None:
        return _run_as_job(client, settings, request, args.dry_run, console)
    plan = runner.plan_run(client, settings, request, allow_missing=args.dry_run)
    if args.dry_run:
        print(runner.dry_run_text(plan))
        return 0
    recorded = plan.run_dir / layout.RESULT_FILE
    try:
        result = runner.execute(client, settings, plan, console)
    except KeyboardInterrupt as exc:
        stop = interrupts.of(exc)
        console.error(f"{stop.reason}; the run is recorded as unfinished in {recorded}")
        return stop.exit_code
    print(plan.run_dir)
    return _ended(result, recorded, console)


def _profiler(args: argparse.Namespace) -> ProfilerOptions | None:
    """The profiler options the command line gives (None: the recipe's alone)."""
    given: dict[str, Any] = {}
    if args.profiler_env:
        pairs = [item.partition("=") for item in args.profiler_env]
        bad = [name for name, eq, _ in pairs if not eq]
        if bad:
            raise UsageError(f"--profiler-env {bad[0]}: write it as NAME=VALUE.")
        given["systrace_env"] = {name: value for name, _, value in pairs}
    if args.systrace_mode:
        given["systrace_mode"] = args.systrace_mode
    if args.counters_args:
        given["counters_args"] = shlex.split(args.counters_args)
    if not given:
        return None
    try:
        return ProfilerOptions(**given)
    except ValidationError as exc:
        why = str(exc.errors(include_url=False)[0]["msg"]).removeprefix("Value error, ")
        raise UsageError(f"--profiler-env: {why}.") from None


def _run_as_job(
    client: engine.Client | None, settings: Settings, request: runner.RunRequest, dry_run: bool,
    console: Console,
) -> int:  # fmt: skip
    """One run through the configured executor: one batch job, waited for."""
    request.tag = request.tag or runner.default_tag()
    job = Job(f"{request.build} on {request.system or 'the default system'}", request)
    executor = executor_for(client, settings)
    if dry_run:
        print(json.dumps(executor.preview(job), indent=2))
        return 0
    (ran,) = executor.run([[job]], console)
    result = ran[0]
    recorded = settings.results_dir / result.run_id / layout.RESULT_FILE
    print(recorded.parent)
    return _ended(result, recorded, console)


def _ended(result: records.RunResult, recorded: Path, console: Console) -> int:
    if not result.finished:
        console.error(
            f"run {result.run_id} did not finish: {result.failure}; "
            f"recorded as unfinished in {recorded}"
        )
        return 1
    if result.kind == records.MICROBENCH_KIND:
        print(microbench_run_text(result), end="")
    else:
        console.note(f"{result.run_id}: {result.ns_per_day} ns/day")
    if result.profile is not None:
        said = f": {result.profile.message}" if result.profile.message else ""
        console.note(f"{result.profile.mode} profile {result.profile.status}{said}")
        trace = runstore.RunStore.system_trace(recorded.parent)
        if trace is not None and trace.functions:
            print(top_functions_text(trace), end="")
    return 0


class RunRow(BaseModel):
    """`runs list --json`: one run as a script reads it (`value` in `unit`, of `metric`)."""

    run: str
    path: str
    state: records.RunState
    build: str | None
    system: str | None
    tag: str | None
    started: str | None
    metric: str | None
    value: float | None
    unit: str | None
    why: str

    @classmethod
    def of(cls, status: runstore.Status) -> RunRow:
        result, metric, unit = status.result, None, None
        value = result.headline_value() if result is not None else None
        if result is not None and value is not None:
            metric, unit = "ns/day", "ns/day"
            if result.kind == records.MICROBENCH_KIND and result.metrics:
                metric = result.headline
                unit = result.metrics[result.headline or ""].unit
        return cls(
            run=status.path.name, path=str(status.path), state=status.state,
            build=result.build if result else None, system=result.system if result else None,
            tag=result.tag if result else None, started=result.timestamp if result else None,
            metric=metric, value=value, unit=unit, why=status.why,
        )  # fmt: skip


def list_runs(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    runs = runstore.RunStore(settings.results_dir)
    paths = runs.resolve(args.spec) if args.spec else runs.runs()
    if args.json:
        print_json([RunRow.of(runs.status(path)) for path in paths])
        return 0
    rows = []
    for status in map(runs.status, paths):
        result = status.result
        rows.append(
            [status.path.name, status.state, _headline(result),
             result.timestamp if result else None, _short(status.why)]
        )  # fmt: skip
    print(tabulate(rows, headers=["run", "state", "result", "started", "why"]))
    return 0


def _headline(result: records.RunResult | None) -> str | None:
    """ns/day, or a microbenchmark run's headline metric with its name and unit."""
    if result is None or (value := result.headline_value()) is None:
        return None
    if result.kind == records.MICROBENCH_KIND and result.metrics:
        return f"{result.headline} {value:.4g} {result.metrics[result.headline or ''].unit}"
    return f"{value:g} ns/day"


def _short(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def clean(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    done = clean_runs(engine.connect(), settings, dry_run=args.dry_run)
    would = "would " if args.dry_run else ""
    lines = [f"{would}remove the container of {name}: its process is gone" for name in done.removed]
    lines += [f"kept the container of {name}: {why}" for name, why in done.kept]
    lines += [f"{would}close {name} as abandoned" for name in done.closed]
    print("\n".join(lines or ["nothing to clean: no container or record of a dead run"]))
    return 0


def parse(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    print(json.dumps(runstore.inspect(args.path), indent=2))
    return 0


def recipes(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    found = find_recipes(settings.recipes_dirs)
    if args.json:
        rows = [
            {"name": name, "usage": r.usage(), "source": source, "description": r.description}
            for name, (r, source) in found.items()
        ]
        print(json.dumps(rows, indent=2))
        return 0
    table = [[r.usage(), r.description, source] for r, source in found.values()]
    print(tabulate(table, headers=["system", "description", "recipe file"]))
    return 0
