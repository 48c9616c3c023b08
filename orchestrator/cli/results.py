"""Result commands: `compare`, `codegen diff`, `db`, `history`, `report --html`."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from orchestrator import engine
from orchestrator.cli.common import (
    Commands,
    json_option,
    print_json,
    verdict_command,
    verdict_options,
)
from orchestrator.cli.console import Console
from orchestrator.codegen import workflow
from orchestrator.codegen.asm import load_asm_diffs
from orchestrator.codegen.html import BenchCodegen
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Caution
from orchestrator.core.files import write_atomic
from orchestrator.core.settings import Settings
from orchestrator.parsers.categories import CATEGORIES
from orchestrator.report.as_json import judgement_json, series_json
from orchestrator.report.text import history_text, render, webhook_text
from orchestrator.report.words import headline_text
from orchestrator.store.database import Database, import_runs, shown
from orchestrator.store.runstore import RunStore
from orchestrator.verdict import history as hist
from orchestrator.verdict.compare import Comparison
from orchestrator.verdict.groups import compare_groups
from orchestrator.verdict.judgement import judgement_of


def register(sub: Commands) -> None:
    p = sub.add_parser("compare", help="compare two runs or groups of repeated runs")
    p.add_argument("baseline", help="run directory, run id, or group <build>__<system>__<tag>")
    p.add_argument("candidate", help="run directory, run id, or group")
    verdict_options(p)
    p.add_argument("--notify", action="store_true", help="also post the table to the webhook")
    verdict_command(p)
    p.set_defaults(handler=compare)

    p = sub.add_parser(
        "codegen", help="which GPU kernels (CPU: hot functions) two builds compiled differently"
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="verb")
    v = verbs.add_parser(
        "diff", help="per category, then per changed kernel, the candidate against the baseline"
    )
    v.add_argument("baseline", help="GROMACS image (tag or build name), or a run (directory or id)")
    v.add_argument("candidate", help="the same, for the other build")
    v.add_argument("--kernel", help="regular expression on kernel names: only these")
    v.add_argument("--asm", action="store_true", help="print their code's unified diff")
    v.add_argument("--limit", type=int, default=40, help="changed kernels listed at most")
    v.add_argument("--format", choices=["simple", "markdown"], default="simple")
    v.add_argument(
        "--arch", help="GPU target whose kernels to list (default: this host's, else the "
        "primary one); every target's summary is printed first"
    )  # fmt: skip
    json_option(v, "the diff of that target (not with --asm)")
    v.set_defaults(handler=codegen_diff)

    p = sub.add_parser("db", help="the results database: import run directories, show where")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="verb")
    verbs.add_parser("import", help="index every ended run directory (idempotent)")
    verbs.add_parser("info", help="which database, its schema revision and its runs")
    p.set_defaults(handler=database)

    p = sub.add_parser("history", help="a metric over LLVM commits, with the change points")
    p.add_argument("--system", required=True, help="recipe system, as the runs name it")
    p.add_argument("--category", dest="metric", help="ns/day (default), a category or a metric")
    p.add_argument("--kernel", help="one kernel's (or cycle row's) time instead")
    p.add_argument("--last", type=int, help="only the newest N builds")
    verdict_options(p)
    json_option(p, "the series (every build's values, the change points' verdicts)")
    p.set_defaults(handler=show_history)

    p = sub.add_parser("report", help="one self-contained HTML page: trends, verdict, bisects")
    p.add_argument("--html", type=Path, required=True, help="file to write")
    p.add_argument("--system", action="append", help="only these systems (repeatable)")
    p.add_argument("--last", type=int, help="only the newest N builds per chart")
    p.set_defaults(handler=html_report)


def compare(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    runs = RunStore(settings.results_dir)
    baseline = runs.finished(args.baseline, console)
    candidate = runs.finished(args.candidate, console)
    cmp = compare_groups(
        baseline, candidate, threshold_pct=args.threshold_pct, alpha=args.alpha, store=runs,
        codegen=workflow.runs_codegen(baseline[0].path, candidate[0].path),
    )  # fmt: skip
    judged = judgement_of(cmp)
    if args.json:
        print_json(judgement_json(judged, cmp))
    else:
        print(render(cmp, args.format), end="")
    if args.notify:
        console.notifier.post(webhook_text(cmp), {"headline": headline_text(cmp)})
    return judged.exit_code


def codegen_diff(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    if args.asm and args.json:
        raise UsageError("--asm prints unified diffs, not JSON: give one of --asm and --json.")
    client = engine.connect()
    baseline, candidate, targets = workflow.codegen_diff(
        client, settings, args.baseline, args.candidate, console
    )
    result, text = workflow.diff_report(
        baseline, candidate, targets, arch=args.arch, host=workflow.host_target(), fmt=args.format,
        limit=args.limit, kernel=None if args.asm else args.kernel,
    )  # fmt: skip
    if args.json:
        print_json(result)
        return 0
    print(text, end="")
    if args.asm:
        if not args.kernel:
            raise UsageError("--asm prints one kernel's code: say which with --kernel REGEX.")
        for text in workflow.kernel_asm_diffs(
            client, settings, baseline, candidate, result, args.kernel
        ):
            print(text, end="")
    return 0


def database(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    db = Database.of(settings)
    if args.verb == "import":
        done = import_runs(db, RunStore(settings.results_dir))
        print(f"{done.written} runs indexed in {shown(db.url)}")
        for line in done.left_out:
            print(f"left out {line}")
    else:
        db.migrate()
        print(f"{shown(db.url)}: schema {db.revision()}, {db.count()} runs")
    return 0


def show_history(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    series = hist.load_series(
        Database.of(settings), args.system, args.metric, kernel=args.kernel, last=args.last,
        llvm_source=settings.llvm_source, threshold_pct=args.threshold_pct, alpha=args.alpha,
    )  # fmt: skip
    if args.json:
        print_json(series_json(series))
    else:
        print(history_text(series, args.format), end="")
    return 0


def html_report(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    db = Database.of(settings)
    series = []
    for system in args.system or hist.systems(db):
        first = hist.load_series(db, system, last=args.last, llvm_source=settings.llvm_source)
        series.append(first)
        for category in CATEGORIES if first.metric == hist.NS_PER_DAY else ():
            try:
                series.append(hist.load_series(
                    db, system, category, last=args.last, llvm_source=settings.llvm_source
                ))  # fmt: skip
            except UsageError:  # no run of this system measured the category
                continue
    views = [_bench_codegen(db, settings, console, s) for s in args.system or hist.systems(db)]
    # plotly is imported only for this page: every other command starts without it, and
    # a host that only runs (the native executor's) needs no plotly installed
    from orchestrator.report.html import render_html

    page = render_html(
        series, verdict=_latest_verdict(db, settings, console), bisects=hist.load_bisects(db),
        codegen=[v for v in views if v is not None],
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )  # fmt: skip
    write_atomic(args.html, page)
    print(f"wrote {args.html} ({len(series)} charts)")
    return 0


def _latest_verdict(
    db: Database, settings: Settings, console: Console, system: str | None = None
) -> Comparison | None:
    """The newest bench's verdict (of `system`), judged again from its run directories
    (when here), with the codegen diff of the images its runs ran."""
    groups = hist.latest_bench(db, system)
    if groups is None:
        return None
    runs = RunStore(settings.results_dir)
    try:
        base, cand = runs.finished(groups[0], console), runs.finished(groups[1], console)
        found = workflow.runs_codegen(base[0].path, cand[0].path)
        return compare_groups(base, cand, paired=True, store=runs, codegen=found)
    except UserError as exc:
        console(Caution(f"the latest bench's verdict is left out: {exc.message}"))
        return None


def _bench_codegen(
    db: Database, settings: Settings, console: Console, system: str
) -> BenchCodegen | None:
    """The codegen view of `system`'s newest bench, with the code diffs it kept."""
    cmp = _latest_verdict(db, settings, console, system)
    groups = hist.latest_bench(db, system)
    if cmp is None or cmp.codegen is None or groups is None:
        return None
    try:
        asm = load_asm_diffs(settings.results_dir, groups[1])
    except UserError as exc:
        console(Caution(f"{system}: the kept code diffs are left out: {exc.message}"))
        asm = None
    return BenchCodegen(cmp, asm)
