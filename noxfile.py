"""The front door: `nox -s <session> -- <args>`. Each session is one orchestrator command.

Sessions share one virtualenv (`.nox/orchestrator`) with the project installed in
editable mode, so `nox -s bench` after `nox -s build` installs nothing twice. A
command's session exits with the command's own code (docs/usage.md, "Exit codes"), so
`nox -s compare -- A B` tells a slowdown (4) from a failure (1) as the CLI does.
"""

from __future__ import annotations

import nox
import nox.command

nox.needs_version = ">=2024.4"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "docs", "tests"]

PYTHON = "3.11"


def _install(session: nox.Session, extra: str = "") -> None:
    session.install("-e", f".{extra}")


def _orchestrator(session: nox.Session, *args: str) -> None:
    _install(session)
    try:
        # stderr stays the command's own (nox would merge it into stdout): `--json` output
        # through nox is JSON alone, and the console sees the terminal it writes to
        session.run("python", "-m", "orchestrator", *args, *session.posargs, external=False,
                    stderr=None)  # fmt: skip
    except nox.command.CommandFailed as exc:
        # nox ends every failed session with 1; a SystemExit is no Exception, so nox lets
        # it through and the process ends with the command's code.
        raise SystemExit(getattr(exc, "return_code", None) or 1) from None


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Unit and engine tests (`-- -k name` to select; engine tests need a Docker Engine)."""
    _install(session, "[dev]")
    session.run("pytest", *(session.posargs or ["-q", "-ra", "--durations=40"]))


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, mypy, and hadolint on every rendered template (`gmxbench lint`)."""
    _install(session, "[dev]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("python", "-m", "orchestrator", "lint")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The manual into docs/_build/html: every warning an error, every internal link checked."""
    _install(session, "[docs]")
    strict = ("-W", "--keep-going", "-n", "-E")  # warnings fail the build; a fresh read each time
    session.run(
        "sphinx-build",
        *strict,
        "--no-color",
        "-b",
        "html",
        "docs",
        "docs/_build/html",
        *session.posargs,
    )


@nox.session(python=PYTHON, default=False)
def build(session: nox.Session) -> None:
    """`nox -s build -- stable | dev --toolchain IMG | toolchain --package clang-16`."""
    _orchestrator(session, "build")


@nox.session(python=PYTHON, default=False)
def images(session: nox.Session) -> None:
    """The project's images with their provenance (`-- --json`, `-- --all`)."""
    _orchestrator(session, "images")


@nox.session(python=PYTHON, default=False)
def prune(session: nox.Session) -> None:
    """Old LLVM toolchain images removed, never the build tree (`-- --keep N --dry-run`)."""
    _orchestrator(session, "prune")


@nox.session(python=PYTHON, default=False)
def render(session: nox.Session) -> None:
    """`nox -s render -- <template> [--set key=value ...]` prints a Dockerfile."""
    _orchestrator(session, "render")


@nox.session(python=PYTHON, default=False)
def base(session: nox.Session) -> None:
    """Make the local Debian base image with debootstrap (no registry needed)."""
    _orchestrator(session, "base")


@nox.session(python=PYTHON, default=False)
def recipes(session: nox.Session) -> None:
    """The systems runs can use (shipped, and from ORCH_RECIPES_DIRS), with their files."""
    _orchestrator(session, "recipes")


@nox.session(python=PYTHON, default=False)
def run(session: nox.Session) -> None:
    """`nox -s run -- <build> <system> [tag] [--profile=trace] [-- mdrun args]`."""
    _orchestrator(session, "run")


@nox.session(python=PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """The compiler loop; with no arguments: stable image, default system, A/A check."""
    _orchestrator(session, "bench")


@nox.session(python=PYTHON, default=False)
def bisect(session: nox.Session) -> None:
    """`nox -s bisect -- --good <commit> --bad <commit> [--system S] [--category C]`."""
    _orchestrator(session, "bisect")


@nox.session(python=PYTHON, default=False)
def matrix(session: nox.Session) -> None:
    """`nox -s matrix -- nightly.toml [--executor slurm]`: systems × builds × repeats."""
    _orchestrator(session, "matrix")


@nox.session(python=PYTHON, default=False)
def history(session: nox.Session) -> None:
    """`nox -s history -- --system S [--category C] [--last N]`: a metric over LLVM commits."""
    _orchestrator(session, "history")


@nox.session(python=PYTHON, default=False)
def report(session: nox.Session) -> None:
    """`nox -s report -- --html report.html`: trends, the latest verdict, bisects; offline."""
    _orchestrator(session, "report")


@nox.session(python=PYTHON, default=False)
def db(session: nox.Session) -> None:
    """`nox -s db -- import | info`: the results database (SQLite, or ORCH_DATABASE_URL)."""
    _orchestrator(session, "db")


@nox.session(python=PYTHON, default=False)
def rebuild(session: nox.Session) -> None:
    """`nox -s rebuild -- <image tag | lockfile>`: build again, compare files (sha256)."""
    _orchestrator(session, "rebuild")


@nox.session(python=PYTHON, default=False)
def share(session: nox.Session) -> None:
    """`nox -s share -- save <tag> [file] | load <file> | push <tag> <registry/repo>`."""
    _orchestrator(session, "share")


@nox.session(python=PYTHON, default=False)
def compare(session: nox.Session) -> None:
    """`nox -s compare -- <baseline run-or-group> <candidate run-or-group> [--format markdown]`."""
    _orchestrator(session, "compare")


@nox.session(python=PYTHON, default=False)
def codegen(session: nox.Session) -> None:
    """`nox -s codegen -- diff <image or run A> <image or run B> [--kernel RE --asm]`."""
    _orchestrator(session, "codegen")


@nox.session(python=PYTHON, default=False)
def parse(session: nox.Session) -> None:
    """`nox -s parse -- <md.log | rocprof csv | directory>` prints JSON."""
    _orchestrator(session, "parse")


@nox.session(python=PYTHON, default=False)
def perf(session: nox.Session) -> None:
    """Benchmarks of the tool itself, printed as tables (not timed tests)."""
    _install(session)
    session.run("python", "-m", "benchmarks")
