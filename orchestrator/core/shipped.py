"""The folders a user edits, `images/` (Dockerfile templates) and `recipes/` (systems).

They sit at the top of the checkout, where people look for them. A wheel carries them as
package data under `orchestrator/_shipped/` (pyproject's `package-dir` maps them there),
so an installed tool reads exactly the files a checkout holds: one source, no copies.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Literal

Folder = Literal["images", "recipes"]

_CHECKOUT = Path(__file__).resolve().parents[2]


def shipped(folder: Folder) -> Path:
    """The shipped `images/` or `recipes/`: the wheel's copy when installed, else the checkout's."""
    installed = Path(str(files("orchestrator"))) / "_shipped" / folder
    return installed if installed.is_dir() else _CHECKOUT / folder
