"""What the command modules share: the handler signature and the verdict options."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeAlias

from orchestrator.cli.console import Console
from orchestrator.core.settings import Settings

Handler = Callable[[argparse.Namespace, Settings, Console], int]
#: `parser.add_subparsers()`'s return value, to which each module adds its commands.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def executor_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor", choices=["local", "slurm"], default=None,
        help="where runs run: here, or as SLURM batch jobs (default: ORCH_EXECUTOR, else local)",
    )  # fmt: skip


def with_executor(settings: Settings, args: argparse.Namespace) -> Settings:
    """The settings with the executor a command's `--executor` names."""
    if getattr(args, "executor", None) is None:
        return settings
    return settings.model_copy(update={"executor": args.executor})


def verdict_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["simple", "markdown"], default="simple")
    p.add_argument(
        "--threshold", dest="threshold_pct", type=float, default=2.0,
        help="marker threshold, percent",
    )  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.05, help="significance level")
