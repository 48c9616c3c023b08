"""A request's fields declare their command-line options: one declaration, two uses.

As nox declares each option once (its `_option_set.Option` makes both the argparse
option and the value), a workflow request's field carries its flag, help, metavar,
choices and default (`option(…)`); `cli.common.add_options` makes the argparse options
from the request's fields, in their order, and `cli.common.request_of` the request from
the parsed arguments. Options several commands take (`--steps`, `--repeats`,
`--threshold`, …) are declared here once; a command that says more about one gives its
own help (`option(STEPS, help=…)`). A field that several flags set, at most one of them
(a side's compiler: `--llvm`, `--toolchain`, `--package`), is a `OneOf`: a conflict is
said where the flags become the field's value, and the field holds only one."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.core.errors import UsageError
from orchestrator.verdict import defaults

#: The key of a field's declaration in its `dataclasses.field` metadata.
OPTION = "option"


@dataclass(frozen=True)
class Option:
    """One command-line option of a request's field (a flag without dashes: positional).

    `flag` None: the field's name with dashes (`dry_run` is `--dry-run`). A default of
    False makes a switch (`store_true`)."""

    flag: str | None = None
    help: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] | None = None
    default: Any = None
    required: bool = False

    def but(self, **changes: Any) -> Option:
        """This option with a command's own words (its help, its default)."""
        return dataclasses.replace(self, **changes)

    def named(self, field: str) -> Option:
        """This option with its flag settled for the field `field`."""
        return self if self.flag else self.but(flag="--" + field.replace("_", "-"))

    @property
    def dest(self) -> str:
        """Where argparse keeps the value (`--against-llvm`: `against_llvm`)."""
        return (self.flag or "").lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class OneOf:
    """A field that one of several flags sets, so that two choices cannot be given: each
    flag's kind (`llvm`, `package`, …) and option, in `--help` order, and `make`, which
    turns a kind and the flag's value into the field's value."""

    options: dict[str, Option]
    make: Callable[[str, str], Any]
    #: Said when more than one is given; `{given}` is the flags given, joined by `and`.
    conflict: str
    #: The kinds in the order the conflict names their flags (default: `options`' order).
    order: tuple[str, ...] = ()

    def flag(self, kind: str) -> str:
        return self.options[kind].flag or ""

    def value(self, given: Mapping[str, Any]) -> Any:
        """The field's value from the parsed flags (`given`: argparse's dests), or None;
        a `UsageError` when more than one flag is given."""
        named = [k for k in self.order or tuple(self.options) if given.get(self.options[k].dest)]
        if len(named) > 1:
            raise UsageError(self.conflict.format(given=" and ".join(map(self.flag, named))))
        return self.make(named[0], given[self.options[named[0]].dest]) if named else None


def option(declared: Option | OneOf | None = None, **changes: Any) -> Any:
    """A request field with its command-line option, `changes` its own words (its default
    the option's; a required option's field has none, a `OneOf`'s is None)."""
    declared = declared or Option()
    if isinstance(declared, Option) and changes:
        declared = declared.but(**changes)
    metadata = {OPTION: declared}
    if isinstance(declared, OneOf):
        return dataclasses.field(default=None, metadata=metadata)
    if declared.required:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=declared.default, metadata=metadata)


def option_of(field: dataclasses.Field[Any]) -> Option | OneOf | None:
    """A request field's option (its flag settled), or None: no option sets it."""
    found = field.metadata.get(OPTION)
    return found.named(field.name) if isinstance(found, Option) else found


def as_pairs(text: str) -> int | str:
    """`--repeats` as bisect takes it: a number of pairs as a number, `auto…` as written."""
    return int(text) if text.isdigit() else text


#: The options of the commands that run benchmarks; each command adds its own help.
STEPS = Option("--steps", type=int)
REPEATS = Option("--repeats")
SYSTEM = Option("--system")
TAG = Option("--tag")
CPU_ONLY = Option("--cpu-only", default=False)
DRY_RUN = Option("--dry-run", default=False)
#: The options of every command that ends in a verdict (`cli.common.verdict_options`).
THRESHOLD = Option(
    "--threshold", type=float, default=defaults.THRESHOLD_PCT, help="marker threshold, percent"
)
ALPHA = Option("--alpha", type=float, default=defaults.ALPHA, help="significance level")
#: The fields those two set: a verdict command lists them last, after the settings'.
VERDICT_FIELDS = ("threshold_pct", "alpha")
