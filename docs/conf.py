"""Sphinx configuration of the manual: Markdown pages (MyST-Parser), built by `nox -s docs`.

The build is offline and strict: `sphinx-build -W --keep-going -n` turns every warning
into an error, and MyST reports a link to a missing page or heading as a warning.
The front page is the repository's README.md (included by index.md), so its links into
`docs/` are checked too: keep the README's links to pages of this manual.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

_pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())

project = "gmxbench"
release = version = _pyproject["project"]["version"]

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# a slug for every heading down to ###, so `page.md#heading` links are checked
myst_heading_anchors = 3
nitpicky = True
# code blocks without a language stay plain text (no lexer guessing, no lexer warnings)
highlight_language = "none"

html_theme = "furo"  # its assets ship in the wheel: nothing is fetched at build time
html_title = f"gmxbench {release}"
html_last_updated_fmt = None
html_copy_source = False
