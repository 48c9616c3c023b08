"""Run commands: `run`, `parse`, `recipes`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tabulate import tabulate

from orchestrator.cli.common import Commands
from orchestrator.cli.console import Console
from orchestrator.core import engine
from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings
from orchestrator.runs import runner, store
from orchestrator.runs.recipe import find_recipes

PROFILES = ("none", "trace", "counters")


def register(sub: Commands) -> None:
    p = sub.add_parser(
        "run", help="one mdrun of a build on a system: results/<build>__<system>__<tag>"
    )
    p.add_argument("build", help="build name (stable-cpu-gcc12, dev-current) or image tag")
    p.add_argument("system", nargs="?", default=None, help="recipe system (default: water)")
    p.add_argument("tag", nargs="?", default=None, help="run tag (default: run-<UTC time>)")
    p.add_argument("--profile", default="none", choices=PROFILES)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--device", type=int, default=0, help="GPU index (rocm)")
    p.add_argument("--timeout", type=float, default=3600.0, help="wall-clock limit, seconds")
    p.add_argument("--inputs-dir", type=Path, default=None, help="pre-downloaded archives")
    p.add_argument("--dry-run", action="store_true", help="print the container configuration")
    p.set_defaults(handler=run, mdrun_args=[])

    p = sub.add_parser("parse", help="parse an md.log, rocprof CSV(s) or a run directory to JSON")
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
        raise UsageError(f"--profile={profile} is not a profile mode: use trace or counters.")
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
    )
    client = engine.connect()
    plan = runner.plan_run(client, settings, request)
    if args.dry_run:
        print(runner.dry_run_text(plan))
        return 0
    recorded = plan.run_dir / store.RESULT_FILE
    try:
        result = runner.execute(client, settings, plan, console)
    except KeyboardInterrupt:
        console.error(f"interrupted; the run is recorded as unfinished in {recorded}")
        return 130
    print(plan.run_dir)
    if not result.finished:
        console.error(
            f"run {result.run_id} did not finish: {result.failure}; "
            f"recorded as unfinished in {recorded}"
        )
        return 1
    console.note(f"{result.run_id}: {result.ns_per_day} ns/day")
    return 0


def parse(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    print(json.dumps(store.inspect(args.path), indent=2))
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
