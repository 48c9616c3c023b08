"""Regenerate tests/golden/ after a deliberate template change; review `git diff` after.

Runs the golden test with UPDATE_GOLDEN=1, so the goldens are written by exactly the
code that checks them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    cmd = [sys.executable, "-m", "pytest", "-q", "tests/test_templates.py"]
    env = {**os.environ, "UPDATE_GOLDEN": "1"}
    return subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
