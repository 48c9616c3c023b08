"""Workflow commands: `bench`, `bisect`, `matrix`, `rebuild`, `share`."""

from __future__ import annotations

import argparse
from pathlib import Path

from tabulate import tabulate

from orchestrator import engine
from orchestrator.cli.common import (
    Commands,
    add_option,
    add_options,
    engine_for,
    executor_option,
    print_json,
    request_of,
    verdict_command,
    verdict_options,
    with_executor,
)
from orchestrator.cli.console import Console
from orchestrator.cli.images import gpu_arch_option
from orchestrator.core.events import Message, Step
from orchestrator.core.settings import Settings, with_gpu_arch
from orchestrator.report import words
from orchestrator.report.as_json import judgement_json
from orchestrator.report.text import bisect_text, render, webhook_text
from orchestrator.store.records import MICROBENCH_KIND
from orchestrator.verdict.judgement import judgement_of
from orchestrator.workflows import share as sharing
from orchestrator.workflows.bench import bench
from orchestrator.workflows.bench_plan import BenchRequest, plan, plan_text, settle
from orchestrator.workflows.bisect import BisectRequest, bisect, check, plan_lines
from orchestrator.workflows.matrix import Cell, load_matrix, matrix
from orchestrator.workflows.options import TAG
from orchestrator.workflows.rebuild import rebuild, summary


def register(sub: Commands) -> None:
    p = sub.add_parser("bench", help="the compiler loop: build, run both sides, diff")
    add_options(p, BenchRequest)
    gpu_arch_option(p)
    executor_option(p)
    verdict_options(p)
    verdict_command(p)
    p.set_defaults(handler=run_bench, mdrun_args=[])

    p = sub.add_parser("bisect", help="find the LLVM commit that made a metric slower")
    add_options(p, BisectRequest)
    gpu_arch_option(p)
    executor_option(p)
    verdict_options(p)
    p.set_defaults(handler=run_bisect)

    p = sub.add_parser(
        "matrix", help="systems × builds × repeats (× GPU types) from a TOML file, summarised"
    )
    p.add_argument("file", type=Path, help="the matrix (see docs/platforms.md, `matrix`)")
    add_option(p, TAG.but(help="the runs' tag (default: <name>-<UTC time>)"))
    executor_option(p)
    verdict_options(p)
    p.set_defaults(handler=run_matrix)

    p = sub.add_parser(
        "rebuild", help="rebuild an image from its lockfile; compare its files with the original"
    )
    p.add_argument("target", help="image tag (gromacs:<build> or <build>) or a lockfile path")
    p.set_defaults(handler=run_rebuild)

    p = sub.add_parser("share", help="move images without a shared registry: save, load, push")
    actions = p.add_subparsers(dest="action", required=True, metavar="action")
    a = actions.add_parser("save", help="write <build>.gmxbench.tar.gz (image, lockfile, sha256)")
    a.add_argument("tag", help="gromacs:<build> or a bare build name")
    a.add_argument("file", type=Path, nargs="?", default=None, help="archive path or directory")
    a = actions.add_parser("load", help="verify an archive, then load and tag its image")
    a.add_argument("file", type=Path)
    a.add_argument(
        "--trust",
        action="store_true",
        help="load an archive that no key in ORCH_SHARE__ALLOWED_SIGNERS signed (said on the "
        "console); every other check still applies",
    )
    a = actions.add_parser("push", help="push to a registry; record the digest in the lockfile")
    a.add_argument("tag")
    a.add_argument("destination", help="registry/repo[:tag] (default tag: the build name)")
    p.set_defaults(handler=run_share)


def run_bench(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    settings = with_gpu_arch(with_executor(settings, args), args.gpu_arch)
    request = request_of(BenchRequest, args)  # two compilers for one side are said here
    settled = settle(settings, request)  # every mistake said here, before the engine is asked
    if request.dry_run:
        for note in settled.notes:
            console(Message(note))
        print(plan_text(plan(engine_for(settings), settings, settled)))
        return 0
    outcome = bench(engine_for(settings), settings, settled, console)
    cmp = outcome.comparison
    judged = judgement_of(cmp).model_copy(update={
        "system": outcome.system, "base": outcome.base, "elapsed_seconds": outcome.elapsed,
        "container_seconds": outcome.container_seconds,
        "changed_kernels": len(outcome.codegen.changed) if outcome.codegen else None,
    })  # fmt: skip
    if cmp is None:
        codegen = outcome.codegen
        base = f" ({outcome.base})" if outcome.base else ""
        said = f"{codegen.candidate} vs {codegen.baseline}{base}: " if codegen is not None else ""
        if not args.json:
            print(f"{said}{outcome.nothing_measured}")
        data = {"verdict": outcome.verdict, "system": outcome.system}
        console.notifier.verdict(f"{said}{outcome.nothing_measured}", data)
    else:
        if not args.json:
            print(render(cmp, args.format))
        console.notifier.verdict(
            words.headline_text(cmp), {"verdict": outcome.verdict}, webhook_text(cmp)
        )
    if args.json:
        print_json(judgement_json(judged, cmp, outcome.nothing_measured))
    console(Step(f"done: {outcome.timing()}"))
    return judged.exit_code


def run_bisect(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    request = request_of(BisectRequest, args)
    settings = with_gpu_arch(with_executor(settings, args), args.gpu_arch)
    checked = check(settings, request)  # every mistake said here, before the engine is asked
    if request.dry_run:
        for note in checked.notes:
            console(Message(note))
        print(plan_text(plan_lines(settings, checked)))
        return 0
    outcome = bisect(engine.connect(), settings, checked, console)
    found = outcome.record
    print(bisect_text(found, args.format), end="")
    if outcome.first_bad is not None:
        print(
            f"\nits verdict against {found.good[:12]}:\n" + render(outcome.first_bad, args.format)
        )
    return 0 if found.first_bad or not found.steps or found.steps[0].verdict != "bad" else 1


def run_matrix(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    spec = load_matrix(args.file)
    outcome = matrix(
        engine.connect(), with_executor(settings, args), spec, args.tag, console,
        threshold_pct=args.threshold_pct, alpha=args.alpha,
    )  # fmt: skip
    fmt = "github" if args.format == "markdown" else "simple"
    print(tabulate([_matrix_row(c) for c in outcome.cells], headers=MATRIX_COLUMNS, tablefmt=fmt))
    runs = [r for c in outcome.cells for r in c.results]
    failed = [r for r in runs if not r.finished]
    for result in failed:
        console.error(f"{result.run_id} did not finish: {result.failure}")
    how = f"the {outcome.executor} executor in {outcome.elapsed:.1f} s, tag {outcome.tag}"
    console(Step(f"done: {len(runs)} runs ({len(failed)} unfinished) through {how}"))
    return 1 if failed else 0


MATRIX_COLUMNS = ["system", "GPU", "build", "runs", "median", "range", "vs first build"]


def _matrix_row(cell: Cell) -> list[str]:
    done = cell.finished
    unit = "ns/day"
    if done and done[0].kind == MICROBENCH_KIND and done[0].metrics:
        unit = f"{done[0].headline} {done[0].metrics[done[0].headline or ''].unit}"
    median = cell.median()
    values = [r.headline_value() or 0.0 for r in done]
    versus = cell.note or ""
    if cell.comparison is not None:
        v = cell.comparison.headline
        versus = f"{words.marker(v)} {v.delta_pct:+.1f}% ({words.note(v)})"
    return [
        cell.system, cell.gpu or "", cell.build, f"{len(done)}/{len(cell.results)}",
        f"{median:.4g} {unit}" if median is not None else "no finished run",
        f"{min(values):.4g}–{max(values):.4g}" if values else "", versus,
    ]  # fmt: skip


def run_rebuild(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    report = rebuild(engine.connect(), settings, args.target, console)
    print(summary(report))
    return 1 if report.identical is False else 0


def run_share(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    client = engine.connect()
    if args.action == "save":
        print(sharing.save(client, settings, args.tag, args.file, console))
    elif args.action == "load":
        print(sharing.load(client, settings, args.file, console, trust=args.trust).tag)
    else:
        print(sharing.push(client, settings, args.tag, args.destination, console))
    return 0
