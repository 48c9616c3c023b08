"""`gmxbench` / `python -m orchestrator`: the front door, and the only code that prints.

Each command lives in the module of its layer (`images`, `runs`, `results`,
`workflows`, `settings`), its arguments next to its handler. A handler turns arguments
into one call of the library and prints what comes back; errors the user can fix arrive
as `UserError` and are printed as one paragraph, never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import NoReturn

import orchestrator
from orchestrator.cli import images, results, runs, settings, workflows
from orchestrator.cli.common import Handler
from orchestrator.cli.console import Console
from orchestrator.cli.encoding import plain_where_needed
from orchestrator.core import interrupts
from orchestrator.core.errors import UserError, is_no_space, no_space
from orchestrator.core.exits import SIGNALLED, ExitCode
from orchestrator.core.settings import load_settings


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake said in one paragraph (not the whole usage above it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message}. `{self.prog} --help` lists the options.\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gmxbench",
        description="Containerized, reproducible GROMACS benchmarks for compiler developers.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    for module in (images, runs, results, workflows, settings):
        module.register(sub)
    _verbose_everywhere(parser)
    return parser


VERBOSE_HELP = (
    "stream every line of every build and run as it comes (default: a bar per build, "
    "a line per run; the whole logs go to files whose paths are printed)"
)


def version() -> str:
    """`gmxbench 0.1.0 from <folder> (Python 3.11.9)`: the installed distribution's version,
    and which code answers (an editable install, a wheel, a checkout on PYTHONPATH)."""
    try:
        number = metadata.version("gmxbench")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        number = f"{orchestrator.__version__} (not installed)"
    where = Path(orchestrator.__file__).parent
    return f"gmxbench {number} from {where} (Python {platform.python_version()})"


class _Version(argparse.Action):
    """`--version`, looked up only when asked (reading the metadata takes tens of ms)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version())  # on stdout, as argparse's own version action prints
        parser.exit()


def _verbose_everywhere(parser: argparse.ArgumentParser) -> None:
    """`--verbose` after any command too (`bench --verbose`), not only before it."""
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        for command in getattr(action, "choices", {}).values():
            if isinstance(command, argparse.ArgumentParser):
                command.add_argument(
                    "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                    help=VERBOSE_HELP,
                )  # fmt: skip
                _verbose_everywhere(command)


def main(argv: Sequence[str] | None = None) -> int:
    plain_where_needed(sys.stdout, sys.stderr)
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:  # everything after `--` goes to mdrun untouched
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    if passthrough:
        args.mdrun_args = passthrough
    handler: Handler = args.handler
    try:
        with interrupts.handled():
            config = load_settings()
            with Console(config, verbose=args.verbose) as console:
                code = handler(args, config, console)
            sys.stdout.flush()  # a reader that went away (`| head`) shows here, caught below
            return code
    except UserError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `gmxbench … | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return SIGNALLED + signal.SIGPIPE
    except OSError as exc:  # a full disk where no code above expected one
        if not is_no_space(exc):
            raise
        print(f"error: {_no_space_said(exc)}", file=sys.stderr)
        return ExitCode.ERROR
    except KeyboardInterrupt as exc:  # SIGINT, SIGTERM, SIGHUP: cleanup has run
        stop = interrupts.of(exc)
        print(f"{stop.reason}; stopped cleanly", file=sys.stderr)
        return stop.exit_code


def _no_space_said(exc: OSError) -> str:
    """A full disk's paragraph when only the system's error is known (a file, or not)."""
    if exc.filename:
        return no_space(Path(exc.filename), "a file").message
    return (
        "No space left on device: a file could not be written, and the system did not say "
        "which. Free space on the filesystems of the results folder (ORCH_RESULTS_DIR), the "
        "inputs cache (ORCH_CACHE_DIR) and TMPDIR (`df -h` shows them), then run the command "
        "again."
    )
