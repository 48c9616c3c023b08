"""What the command modules share: the handler signature, the options of a request and
of a verdict, JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Collection
from typing import Any, TypeAlias, TypeVar

from pydantic_core import to_jsonable_python

from orchestrator import engine
from orchestrator.cli.console import Console
from orchestrator.core.exits import EPILOG
from orchestrator.core.settings import Settings
from orchestrator.runs import executors
from orchestrator.workflows.options import (
    ALPHA,
    THRESHOLD,
    VERDICT_FIELDS,
    OneOf,
    Option,
    option_of,
)

Handler = Callable[[argparse.Namespace, Settings, Console], int]
#: `parser.add_subparsers()`'s return value, to which each module adds its commands.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Request = TypeVar("Request")


def add_option(p: argparse.ArgumentParser, option: Option, dest: str | None = None) -> None:
    """One declared option (`workflows.options`) as argparse's; `dest`: its field."""
    kwargs: dict[str, Any] = {"help": option.help}
    if option.default is False:
        kwargs["action"] = "store_true"
    for name in ("metavar", "type"):
        if getattr(option, name) is not None:
            kwargs[name] = getattr(option, name)
    if option.choices is not None:
        kwargs["choices"] = list(option.choices)
    if option.flag and option.flag.startswith("-"):
        kwargs.update(default=option.default, dest=dest or option.dest)
        if option.required:
            kwargs["required"] = True
    p.add_argument(option.flag or "", **kwargs)


def add_options(
    p: argparse.ArgumentParser, request: type[Any], skip: Collection[str] = VERDICT_FIELDS
) -> None:
    """The options a request's fields declare, in their order; the verdict's options are
    left to `verdict_options`, which every verdict command lists last."""
    for field in dataclasses.fields(request):
        found = option_of(field)
        if field.name in skip or found is None:
            continue
        if isinstance(found, OneOf):
            for one in found.options.values():
                add_option(p, one)
        else:
            add_option(p, found, field.name)


def request_of(request: type[Request], args: argparse.Namespace) -> Request:
    """The request the parsed arguments give; a field several flags set says here when
    more than one is given."""
    given = vars(args)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(request):  # type: ignore[arg-type]
        found = option_of(field)
        if isinstance(found, OneOf):
            values[field.name] = found.value(given)
        elif field.name in given:
            values[field.name] = given[field.name]
    return request(**values)


def executor_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor", choices=executors.names(), default=None,
        help="where runs run: here, as SLURM batch jobs, or natively without a container "
        "engine (default: ORCH_EXECUTOR, else local)",
    )  # fmt: skip


def with_executor(settings: Settings, args: argparse.Namespace) -> Settings:
    """The settings with the executor a command's `--executor` names."""
    if getattr(args, "executor", None) is None:
        return settings
    return settings.model_copy(update={"executor": args.executor})


def engine_for(settings: Settings) -> engine.Client | None:
    """The container engine, or None for an executor that needs none (native)."""
    return engine.connect() if executors.EXECUTORS[settings.executor].needs_engine else None


def verdict_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["simple", "markdown"], default="simple")
    add_option(p, THRESHOLD, "threshold_pct")
    add_option(p, ALPHA)


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
