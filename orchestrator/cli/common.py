"""What the command modules share: the handler signature, the verdict options, JSON."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TypeAlias

from pydantic_core import to_jsonable_python

from orchestrator.cli.console import Console
from orchestrator.core.exits import EPILOG
from orchestrator.core.settings import Settings
from orchestrator.runs import executors
from orchestrator.verdict.defaults import ALPHA, THRESHOLD_PCT

Handler = Callable[[argparse.Namespace, Settings, Console], int]
#: `parser.add_subparsers()`'s return value, to which each module adds its commands.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def executor_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor", choices=executors.names(), default=None,
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
        "--threshold", dest="threshold_pct", type=float, default=THRESHOLD_PCT,
        help="marker threshold, percent",
    )  # fmt: skip
    p.add_argument("--alpha", type=float, default=ALPHA, help="significance level")


def json_option(p: argparse.ArgumentParser, what: str) -> None:
    """`--json`: `what` as JSON on stdout, alone (the console stays on stderr)."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")


def verdict_command(p: argparse.ArgumentParser) -> None:
    """A command that ends in a verdict (`bench`, `compare`): `--json`, and its exit codes
    in `--help`."""
    json_option(p, "the verdict (numbers and words, no emoji needed)")
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter


def print_json(data: Any) -> None:
    """`data` (models, lists and dicts of them) as JSON on stdout; anything not ASCII is
    escaped, so every output encoding carries it unchanged."""
    print(json.dumps(to_jsonable_python(data), indent=2))
