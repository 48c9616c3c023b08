"""The tool as a user installs it: a wheel in a fresh venv, run outside the checkout.

The top-level `images/` (templates) and `recipes/` are package data of the wheel, so the
installed `gmxbench` renders, lists recipes and finds a user's own recipe folder
(`ORCH_RECIPES_DIRS`) with no checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"

MY_RECIPE = """
name = "mywater"
description = "a site's own generated system"
default_steps = 100
[tpr]
method = "generate"
script = "echo generated"
"""


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return proc  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`bin/` of a fresh venv with only the wheel built from this repository (and its deps)."""
    work = tmp_path_factory.mktemp("wheel")
    uv = shutil.which("uv")
    if uv:
        _run([uv, "build", "--out-dir", str(work / "dist"), str(ROOT)])  # the wheel from the sdist
        _run([uv, "venv", "-q", "-p", sys.executable, str(work / "venv")])
    else:
        _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"),
              str(ROOT)])  # fmt: skip
        _run([sys.executable, "-m", "venv", str(work / "venv")])
    wheel = next((work / "dist").glob("gmxbench-*.whl"))
    python = work / "venv" / "bin" / "python"
    if uv:
        _run([uv, "pip", "install", "-q", "--python", str(python), str(wheel)])
    else:
        _run([str(python), "-m", "pip", "install", "-q", str(wheel)])
    yield work / "venv" / "bin"


def _gmxbench(bin_dir: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "PYTHON"))}
    return _run([str(bin_dir / "gmxbench"), *args], cwd=cwd, env={**clean, **env})


def test_every_package_is_listed_for_the_wheel() -> None:
    """pyproject lists packages by hand (to map images/ and recipes/ into the wheel)."""
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "orchestrator").rglob("__init__.py")
    }
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages"


def test_installed_package_is_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    where = _run(
        [str(installed / "python"), "-c", "import orchestrator; print(orchestrator.__file__)"],
        cwd=tmp_path,
    ).stdout.strip()
    assert Path(where).is_relative_to(installed.parent) and not Path(where).is_relative_to(ROOT)


def test_installed_renders_templates(installed: Path, tmp_path: Path) -> None:
    rendered = _gmxbench(installed, "render", "cpu-base", cwd=tmp_path, ORCH_PLATFORM="cpu")
    assert rendered.stdout == (GOLDEN / "cpu-base.Dockerfile").read_text()
    dev = _gmxbench(installed, "render", "gromacs-dev-rocm", cwd=tmp_path, ORCH_GPU_ARCH="gfx1201")
    assert "-DGMX_GPU=HIP" in dev.stdout and "FROM gmxbench-builder:rocm-example AS source" in (
        dev.stdout
    )
    code = [str(installed / "python"), "-c", "from orchestrator.images.microbench import SOURCES, "
            "pins; print(sorted(p.name for p in SOURCES.iterdir()), len(pins()))"]  # fmt: skip
    shipped = _run(code, cwd=tmp_path).stdout  # the microbenchmark sources are package data too
    assert "bandwidth_gpu.cu" in shipped and "tune.py" in shipped and "] 11" in shipped


def test_installed_lists_shipped_and_own_recipes(installed: Path, tmp_path: Path) -> None:
    shipped = json.loads(_gmxbench(installed, "recipes", "--json", cwd=tmp_path).stdout)
    names = {row["name"] for row in shipped}
    assert {"water", "water_GMX50", "benchMEM", "benchRIB", "bandwidth", "tune"} <= names
    assert all(Path(row["source"]).is_relative_to(installed.parent) for row in shipped)
    assert not any(Path(row["source"]).is_relative_to(ROOT) for row in shipped)

    mine = tmp_path / "my-recipes"
    mine.mkdir()
    (mine / "mywater.toml").write_text(MY_RECIPE)
    empty = tmp_path / "empty"
    empty.mkdir()
    listed = _gmxbench(
        installed, "recipes", "--json", cwd=tmp_path, ORCH_RECIPES_DIRS=f"{empty}:{mine}"
    )
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["mywater"]["source"] == str(mine / "mywater.toml")
    assert names <= set(rows)


def test_installed_bench_help(installed: Path, tmp_path: Path) -> None:
    out = _gmxbench(installed, "bench", "--help", cwd=tmp_path).stdout
    assert "--llvm" in out and "--repeats" in out


def test_installed_creates_and_migrates_the_results_database(
    installed: Path, tmp_path: Path
) -> None:
    """Alembic's scripts are package data: a fresh install makes the database at the head
    of the source tree's migrations (read here with alembic, not the product's code)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(ROOT / "orchestrator/store/migrations"))
    head = ScriptDirectory.from_config(config).get_current_head()
    out = _gmxbench(installed, "db", "info", cwd=tmp_path, ORCH_RESULTS_DIR=str(tmp_path)).stdout
    assert f"schema {head}, 0 runs" in out and (tmp_path / "runs.sqlite").is_file()
