"""Identifiers read from labels and records, checked before any command sees them.

An LLVM commit in an image label or an imported `result.json` is someone else's text:
`--output=/tmp/x` there would be an option of `git show`. Records hold only what a
commit looks like: hex, `-dirty` for a working tree's build.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

#: An LLVM commit as images and results record it: a hash, `-dirty` for a working tree.
COMMIT_ID = re.compile(r"^[0-9a-fA-F]{4,64}(-dirty)?$")


def is_commit_id(value: str) -> bool:
    return bool(COMMIT_ID.match(value))


def _commit(value: str) -> str:
    if not is_commit_id(value):
        raise ValueError(
            f"{value[:80]!r} is not an LLVM commit hash (hex digits, '-dirty' for a "
            "working tree's build): the label or record was not written by gmxbench, or "
            "was altered"
        )
    return value


#: A record's LLVM commit: refused unless it looks like one.
LlvmCommit = Annotated[str, AfterValidator(_commit)]
