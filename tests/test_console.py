"""The console: how library events look on a terminal that is not a TTY (CI, a log file)."""

from __future__ import annotations

import io

from orchestrator.cli.console import Console
from orchestrator.core.events import Caution, Message, Output, Step, Transfer
from orchestrator.core.settings import load_settings


def test_events_become_lines() -> None:
    out = io.StringIO()
    console = Console(load_settings(), out)
    console(Message("built gromacs:x"))
    console(Step("GROMACS stable image"))
    console(Caution("CPU governor is 'powersave'"))
    console(Output("step 100\r"))
    console.error("run x did not finish")
    assert out.getvalue() == (
        "built gromacs:x\n[00:00] GROMACS stable image\nwarning: CPU governor is 'powersave'\n"
        "step 100\rerror: run x did not finish\n"
    )


def test_transfers_print_every_ten_percent_off_a_terminal() -> None:
    out = io.StringIO()
    console = Console(load_settings(), out)
    total = 100 * 2**20
    for done in range(0, total + 1, total // 40):
        console(Transfer("benchMEM.zip", done, total))
    console(Transfer("benchMEM.zip", total, total, finished=True))
    lines = out.getvalue().splitlines()
    assert [line.split()[3] for line in lines] == [f"{p}%" for p in range(10, 101, 10)]
    assert all(line.startswith("  benchMEM.zip: ") for line in lines)
    console(Transfer("unknown.tgz", 5 * 2**20, None, finished=True))
    assert out.getvalue().splitlines()[-1].startswith("  unknown.tgz: 5.0 MiB ")
