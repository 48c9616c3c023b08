"""`settings`: the effective settings, secrets hidden."""

from __future__ import annotations

import argparse

from tabulate import tabulate

from orchestrator.cli.common import Commands
from orchestrator.cli.console import Console
from orchestrator.core.settings import Settings
from orchestrator.platforms import active


def register(sub: Commands) -> None:
    p = sub.add_parser("settings", help="show the effective settings (secrets hidden)")
    p.set_defaults(handler=show)


def show(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    values = {**settings.public_dump(), "active_platform": active(settings).name}
    print(tabulate(sorted(values.items()), headers=["setting", "value"]))
    return 0
