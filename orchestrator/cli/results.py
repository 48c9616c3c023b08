"""Result commands: `compare`."""

from __future__ import annotations

import argparse

from orchestrator.cli.common import Commands, verdict_options
from orchestrator.cli.console import Console
from orchestrator.core.settings import Settings
from orchestrator.results.compare import compare_runs
from orchestrator.results.report import render, webhook_text
from orchestrator.runs.store import RunStore


def register(sub: Commands) -> None:
    p = sub.add_parser("compare", help="compare two runs or groups of repeated runs")
    p.add_argument("baseline", help="run directory, run id, or group <build>__<system>__<tag>")
    p.add_argument("candidate", help="run directory, run id, or group")
    verdict_options(p)
    p.add_argument("--notify", action="store_true", help="also post the table to the webhook")
    p.set_defaults(handler=compare)


def compare(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    runs = RunStore(settings.results_dir)
    cmp = compare_runs(
        runs.finished(args.baseline),
        runs.finished(args.candidate),
        threshold_pct=args.threshold_pct,
        alpha=args.alpha,
    )
    print(render(cmp, args.format), end="")
    if args.notify:
        console.notifier.post(webhook_text(cmp), {"headline": cmp.headline})
    return 0
