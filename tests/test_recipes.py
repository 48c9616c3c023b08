"""Recipes: the shipped TOML files, system-name parsing, validation and setup scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.core.errors import UsageError
from orchestrator.runs.recipe import (
    DEFAULT_SYSTEM,
    CopyTpr,
    GenerateTpr,
    GromppTpr,
    list_recipes,
    load_recipe,
    parse_atoms,
    parse_system_name,
)


def test_shipped_recipes_load() -> None:
    names = [r.name for r in list_recipes()]
    assert {"benchMEM", "benchRIB", "water", "water_GMX50"} <= set(names)


def test_default_system_is_generated_water() -> None:
    system = load_recipe(None)
    assert DEFAULT_SYSTEM == "water"
    assert system.name == "water:6k:pme"
    assert system.generated and system.inputs == []
    assert load_recipe("").name == system.name


def test_mpinat_checksums_and_copy() -> None:
    mem = load_recipe("benchMEM")
    assert mem.name == "benchMEM" and mem.size is None and mem.variant is None
    assert mem.default_steps == 30000 and not mem.gpu_update
    (spec,) = mem.inputs
    assert spec.url == "https://www.mpinat.mpg.de/benchMEM.zip"
    assert spec.sha256 == "3c1c8cd4f274d532f48c4668e1490d389486850d6b3b258dfad4581aa11380a4"
    assert spec.filename == "benchMEM.zip" and spec.kind == "zip"
    assert spec.cache_name == "3c1c8cd4f274-benchMEM.zip"
    assert isinstance(mem.tpr, CopyTpr) and mem.required_files() == ["benchMEM.tpr"]
    assert mem.setup_script("/in") == "set -eu\ncp /in/benchMEM.tpr topol.tpr\n"

    rib = load_recipe("benchRIB")
    assert rib.inputs[0].sha256.startswith("39acb014a79e") and rib.default_steps == 10000


@pytest.mark.parametrize(
    ("given", "name", "key"),
    [
        ("water_GMX50", "water_GMX50:0096:pme", "water_GMX50/0096"),
        ("water_GMX50:0003:rf", "water_GMX50:0003:rf", "water_GMX50/0003"),
        ("water_GMX50:3k", "water_GMX50:0003:pme", "water_GMX50/0003"),
        ("water_GMX50:3", "water_GMX50:0003:pme", "water_GMX50/0003"),
        ("water_GMX50:0.65k:rf", "water_GMX50:0000.65:rf", "water_GMX50/0000.65"),
        ("water_GMX50::rf", "water_GMX50:0096:rf", "water_GMX50/0096"),
        ("water_GMX50:rf", "water_GMX50:0096:rf", "water_GMX50/0096"),
        ("WATER_gmx50:1536", "water_GMX50:1536:pme", "water_GMX50/1536"),
    ],
)
def test_water_gmx50_names(given: str, name: str, key: str) -> None:
    system = load_recipe(given)
    assert system.name == name
    assert system.input_key == key
    (spec,) = system.inputs
    assert spec.member == f"water-cut1.0_GMX50_bare/{system.size}"
    assert spec.sha256.startswith("2219c10acb97") and spec.gunzip
    assert isinstance(system.tpr, GromppTpr)
    assert system.tpr.mdp == f"{system.variant}.mdp"
    script = system.setup_script("/inputs")
    assert f"grompp -f /inputs/{system.variant}.mdp -c /inputs/conf.gro" in script
    assert "-o topol.tpr" in script


@pytest.mark.parametrize(
    ("given", "name", "atoms"),
    [
        ("water", "water:6k:pme", 6000),
        ("water:3k", "water:3k:pme", 3000),
        ("water:24k", "water:24k:pme", 24000),
        ("water:24000:rf", "water:24k:rf", 24000),
        ("water:rf", "water:6k:rf", 6000),
        ("water:1.5M", "water:1.5M:pme", 1_500_000),
        ("water:6.5k", "water:6.5k:pme", 6500),
    ],
)
def test_water_sizes(given: str, name: str, atoms: int) -> None:
    system = load_recipe(given)
    assert system.name == name and system.atoms == atoms
    assert isinstance(system.tpr, GenerateTpr)
    script = system.setup_script(steps=123)
    expected_box = f"{(atoms / 3 / 33.4) ** (1 / 3):.3f}"  # ≈100 atoms/nm³
    assert f"-box {expected_box} {expected_box} {expected_box}" in script
    assert "nsteps         = 123" in script
    assert '#include "oplsaa.ff/spce.itp"' in script
    assert "gen-seed" in script and "-maxwarn 0" in script
    assert "@" not in script.replace("$@", "")
    assert f'case "{system.variant}" in' in script
    assert f"nsteps         = {system.default_steps}" in system.setup_script()


def test_water_default_steps_and_box() -> None:
    water = load_recipe("water")
    assert water.default_steps == 2000
    assert "-box 3.912 3.912 3.912" in water.setup_script()


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ("nope", "Known systems: bandwidth[:sweep|BYTES[:temporal|nt]], benchMEM, benchRIB"),
        ("water:2k", "between 3k and 12M"),
        ("water:lots", "not an atom count"),
        ("water:6k:xx", "no variant 'xx'"),
        ("water_GMX50:5", "no size '5'"),
        ("benchMEM:3k", "has no sizes"),
        ("benchMEM::pme", "has no variants"),
        ("a:b:c:d", "NAME[:SIZE[:VARIANT]]"),
        (":3k", "NAME[:SIZE[:VARIANT]]"),
    ],
)
def test_bad_names(given: str, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        load_recipe(given)
    assert needle in err.value.message
    assert err.value.exit_code == 2


def test_parse_helpers() -> None:
    assert parse_system_name(None) == ("water", None, None)
    assert parse_system_name(" water_GMX50::rf ") == ("water_GMX50", None, "rf")
    assert parse_atoms("6k") == 6000
    assert parse_atoms("1.5M") == 1_500_000
    assert parse_atoms("6000") == 6000
    assert parse_atoms("k") is None and parse_atoms("-3k") is None


def write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.toml").write_text(text)


GOOD = """
name = "x"
description = "d"
default_steps = 1
[[inputs]]
url = "https://example.org/x.zip"
sha256 = "%s"
kind = "zip"
[tpr]
method = "copy"
path = "x.tpr"
"""


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("name = ", "not valid TOML"),
        (GOOD % ("ab" * 32), ""),
        (GOOD % "abc", "inputs.0.sha256"),
        (GOOD.replace('"zip"', '"rar"') % ("a" * 64), "inputs.0.kind"),
        (GOOD.replace('"x.tpr"', '"../x.tpr"') % ("a" * 64), "relative path"),
        (GOOD.replace('"copy"', '"generate"') % ("a" * 64), "tpr.generate.script"),
        (GOOD.replace('"x.tpr"', '"@size@/x.tpr"') % ("a" * 64), "no sizes"),
        (GOOD.replace('"x.tpr"', '"@foo@"') % ("a" * 64), "unknown placeholders: foo"),
        (GOOD.replace('name = "x"', 'name = "y"') % ("a" * 64), "the file must be y.toml"),
        (GOOD.replace("default_steps = 1", "default_steps = 0") % ("a" * 64), "default_steps"),
        (
            GOOD.replace("default_steps = 1", 'default_steps = 1\nconstraints = ["shake"]')
            % ("a" * 64),
            "constraints.0",
        ),
        (
            GOOD.replace("default_steps = 1", 'default_steps = 1\nexercise = {lincs = "-update"}')
            % ("a" * 64),
            "exercise.lincs",
        ),
    ],
)
def test_invalid_recipe_files(tmp_path: Path, text: str, needle: str) -> None:
    write(tmp_path, "x", text)
    if not needle:
        assert load_recipe("x", [tmp_path]).inputs[0].filename == "x.zip"
        return
    with pytest.raises(UsageError) as err:
        load_recipe("x", [tmp_path])
    assert needle in err.value.message
    assert "x.toml" in err.value.message


def test_generate_recipe_rejects_inputs(tmp_path: Path) -> None:
    write(
        tmp_path,
        "g",
        """
name = "g"
description = "d"
default_steps = 1
[[inputs]]
url = "https://example.org/x.zip"
sha256 = "%s"
kind = "zip"
[tpr]
method = "generate"
script = "true"
"""
        % ("a" * 64),
    )
    with pytest.raises(UsageError, match="take no inputs"):
        load_recipe("g", [tmp_path])


def test_own_recipe_folders_come_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`ORCH_RECIPES_DIRS=a:b` adds systems and can replace a shipped one, a folder at a time."""
    from orchestrator.core.settings import load_settings
    from orchestrator.runs.recipe import find_recipes

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    write(first, "x", GOOD % ("a" * 64))
    write(second, "x", GOOD.replace('description = "d"', 'description = "later"') % ("b" * 64))
    water = GOOD.replace('name = "x"', 'name = "water"') % ("c" * 64)
    write(second, "water", water)
    monkeypatch.setenv("ORCH_RECIPES_DIRS", f"{first}:{second}:")
    dirs = load_settings().recipes_dirs
    assert dirs == [first, second]
    found = find_recipes(dirs)
    assert found["x"][1] == str(first / "x.toml") and found["x"][0].description == "d"
    assert found["water"][1] == str(second / "water.toml")
    assert load_recipe("water", dirs).inputs[0].sha256 == "c" * 64
    assert load_recipe("water", dirs).source == str(second / "water.toml")
    assert "benchMEM" in found and found["benchMEM"][1].endswith("recipes/benchMEM.toml")
    assert load_recipe("water").tpr.method == "generate"  # without the folders: shipped


def test_recipe_folders_expand_the_home(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.core.settings import load_settings

    monkeypatch.setenv("ORCH_RECIPES_DIRS", "~/my-recipes")
    assert load_settings().recipes_dirs == [Path.home() / "my-recipes"]


def test_missing_recipe_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"Recipe folder .*/nope \(ORCH_RECIPES_DIRS\)"):
        list_recipes([tmp_path / "nope"])


def test_shipped_recipes_say_which_constraints_run_and_how_to_run_them_on_a_gpu() -> None:
    """Issue 28: water is SETTLE's, water_lincs LINCS's (run on a GPU with -update gpu);
    the MPI-NAT systems have both, but GPU update refuses their constraints."""
    water, lincs, mem = load_recipe("water"), load_recipe("water_lincs"), load_recipe("benchMEM")
    assert water.constraints == ["settle"] and water.exercise["settle"] == ["-update", "gpu"]
    assert lincs.name == "water_lincs:3k" and lincs.atoms == 3000 and lincs.variant is None
    assert lincs.constraints == ["lincs"] and lincs.exercise["lincs"] == ["-update", "gpu"]
    assert "define         = -DFLEXIBLE" in lincs.setup_script()
    assert "constraint-algorithm = lincs" in lincs.setup_script()
    assert mem.constraints == ["settle", "lincs"] and not mem.gpu_update and not mem.exercise
