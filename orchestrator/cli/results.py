"""Result commands: `compare`, `codegen diff`."""

from __future__ import annotations

import argparse
import re

from orchestrator.cli.common import Commands, verdict_options
from orchestrator.cli.console import Console
from orchestrator.core import engine
from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings
from orchestrator.results.codegen_diff import render as codegen_report
from orchestrator.results.judge import compare_groups
from orchestrator.results.report import render, webhook_text
from orchestrator.runs.store import RunStore
from orchestrator.workflows import codegen


def register(sub: Commands) -> None:
    p = sub.add_parser("compare", help="compare two runs or groups of repeated runs")
    p.add_argument("baseline", help="run directory, run id, or group <build>__<system>__<tag>")
    p.add_argument("candidate", help="run directory, run id, or group")
    verdict_options(p)
    p.add_argument("--notify", action="store_true", help="also post the table to the webhook")
    p.set_defaults(handler=compare)

    p = sub.add_parser(
        "codegen", help="which GPU kernels (CPU: hot functions) two builds compiled differently"
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="verb")
    v = verbs.add_parser("diff", help="per category, then per changed kernel, A against B")
    v.add_argument("a", help="GROMACS image (tag or build name), or a run (directory or id)")
    v.add_argument("b", help="the same, for the other build")
    v.add_argument("--kernel", help="regular expression on kernel names: only these")
    v.add_argument("--asm", action="store_true", help="print their code's unified diff")
    v.add_argument("--limit", type=int, default=40, help="changed kernels listed at most")
    v.add_argument("--format", choices=["simple", "markdown"], default="simple")
    v.set_defaults(handler=codegen_diff)


def compare(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    runs = RunStore(settings.results_dir)
    baseline = runs.finished(args.baseline, console)
    candidate = runs.finished(args.candidate, console)
    cmp = compare_groups(
        baseline, candidate, threshold_pct=args.threshold_pct, alpha=args.alpha, store=runs
    )
    cmp.codegen = codegen.runs_codegen(baseline[0].path, candidate[0].path)
    print(render(cmp, args.format), end="")
    if args.notify:
        console.notifier.post(webhook_text(cmp), {"headline": cmp.headline})
    return 0


def codegen_diff(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    client = engine.connect()
    a, b, result = codegen.codegen_diff(client, settings, args.a, args.b, console)
    if args.kernel and not args.asm:
        wanted = re.compile(args.kernel)
        result = result.model_copy(
            update={"changed": [k for k in result.changed if wanted.search(k.demangled or k.name)]}
        )
    print(f"A: {a.label}\nB: {b.label}")
    print(codegen_report(result, args.format, args.limit), end="")
    if args.asm:
        if not args.kernel:
            raise UsageError("--asm prints one kernel's code: say which with --kernel REGEX.")
        for text in codegen.kernel_asm_diffs(client, settings, a, b, result, args.kernel):
            print(text, end="")
    return 0
