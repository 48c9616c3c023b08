"""The two set-ups: `.ci/setup-host` for the main job, `.ci/setup-tests` for the tests.

The README's first command runs the main job on the user's own workstation after
`.ci/setup-host`, so that script installs nothing only the tests use (a browser, a
database server, SLURM, Podman) and starts none of their services (issue 37). The README's
test command, what CI runs, is `.ci/setup-tests`: the main job's set-up, then the rest.
Read from the scripts' text: running them would install packages and start dockerd.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci"

#: what the main job's set-up may install: nox and uv come from PyPI, through pip
MAIN = {"docker.io", "debootstrap", "git", "python3-pip"}
#: what only the tests use
TEST_ONLY = {
    "chromium", "chromium-driver", "postgresql", "slurm-wlm", "munge",
    "podman", "crun", "uidmap", "iproute2", "openssh-client",
}  # fmt: skip
#: a test-only program or service named anywhere in a script's code
TEST_ONLY_WORD = re.compile(r"chrom|postgres|initdb|slurm|munge|podman|crun|uidmap")
#: another set-up a script runs: `bash .ci/NAME` or `bash "$(dirname "$0")/NAME"`
RUNS = re.compile(r'\bbash\s+(?:\.ci/|"\$\(dirname "\$0"\)/)([\w-]+)')
ARRAY_ADD = re.compile(r"\b(\w+)\+=\(([^)]*)\)")


def code(script: Path) -> str:
    """The script without its comments (a `#` at a line's start or after a blank)."""
    lines = (re.sub(r"(^|\s)#.*$", "", line) for line in script.read_text().splitlines())
    return "\n".join(lines)


def installs(script: Path) -> set[str]:
    """The apt packages `script` may install: every name it adds to an array, its
    `apt-get install` taking arrays only (checked here, so that no name is missed)."""
    text = code(script)
    for line in text.splitlines():
        if "apt-get install" in line:
            other = [word for word in line.split() if not (
                word in ("apt-get", "install") or word.startswith(("-", ">"))
                or "=" in word or re.fullmatch(r'"\$\{\w+\[@\]\}"', word)
            )]  # fmt: skip
            assert not other, f"{script.name} installs {other} outside an array: {line}"
    return {
        word.strip('"') for _, words in ARRAY_ADD.findall(text)
        for word in words.split() if not word.startswith('"$')
    }  # fmt: skip


def set_ups(command: str) -> list[Path]:
    """The set-up scripts `command` runs, and those they run in turn."""
    found: list[Path] = []
    todo = RUNS.findall(command)
    while todo:
        script = CI / todo.pop(0)
        if script not in found:
            found.append(script)
            todo.extend(RUNS.findall(code(script)))
    return found


def two_commands(page: Path) -> list[str]:
    """The commands of the "Two commands" section's shell block."""
    section = page.read_text().split("## Two commands", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("page", ["README.md", "docs/usage.md"])
def test_first_command_installs_no_test_only_package(page: str) -> None:
    main_job, tests = two_commands(ROOT / page)
    assert main_job.endswith("nox -s bench"), main_job
    assert tests.endswith("nox -s lint docs tests"), tests
    scripts = set_ups(main_job)
    assert scripts == [CI / "setup-host"], scripts
    for script in scripts:
        extra = installs(script) - MAIN
        test_only = sorted(extra & TEST_ONLY)
        assert not test_only, f"{script.name} installs test-only {test_only}"
        assert not extra, f"{script.name} installs {sorted(extra)}: not the main job's"
        named = sorted(set(TEST_ONLY_WORD.findall(code(script))))
        assert not named, f"{script.name} names test-only programs or services: {named}"


@pytest.mark.parametrize("page", ["README.md", "docs/usage.md"])
def test_test_command_installs_all_the_tests_use(page: str) -> None:
    _, tests = two_commands(ROOT / page)
    scripts = set_ups(tests)
    assert scripts == [CI / "setup-tests", CI / "setup-host"], scripts
    assert installs(CI / "setup-tests") >= TEST_ONLY, TEST_ONLY - installs(CI / "setup-tests")


def test_ci_runs_the_readme_test_command() -> None:
    _, tests = two_commands(ROOT / "README.md")
    text = code(CI / "run")
    for part in tests.split(" && "):
        assert part in text, f".ci/run does not run {part!r}"


@pytest.mark.parametrize("script", ["setup-host", "setup-tests", "run"])
def test_scripts_parse(script: str) -> None:
    subprocess.run(["bash", "-n", str(CI / script)], check=True)


@pytest.mark.parametrize(
    ("policy", "deb"),
    [
        # Debian 12: a real package
        ("chromium-driver:\n  Installed: (none)\n  Candidate: 156.0.8078.108-1~deb12u1\n", True),
        # Ubuntu 24.04: a transitional package that installs the Chromium snap
        ("chromium-chromedriver:\n  Installed: (none)\n  Candidate: 2:1snap1-0ubuntu2\n", False),
        # a name only other packages provide
        ("chromium-driver:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n", False),
        ("", False),  # a name apt does not know
    ],
    ids=["debian", "ubuntu-snap", "virtual", "unknown"],
)
def test_browser_taken_only_as_a_deb(tmp_path: Path, policy: str, deb: bool) -> None:
    """setup-tests' `is_deb` on `apt-cache policy` as Debian and Ubuntu answer it."""
    is_deb = re.search(r"^is_deb\(\) \{\n.*?^\}\n", (CI / "setup-tests").read_text(), re.M | re.S)
    assert is_deb is not None
    (tmp_path / "policy").write_text(policy)
    fake = tmp_path / "apt-cache"
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'policy'}\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", is_deb.group(0) + "is_deb chromium-driver"], env=env)
    assert (proc.returncode == 0) is deb
