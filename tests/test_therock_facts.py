"""The amd stack's builder asks only for what TheRock 7.12 ships.

tests/data/therock-7.12/facts.json records, with provenance, the package names, paths,
repository line and which package holds which tool, read from AMD's own repository at
the 7.12 tag; the rendered builder Dockerfile may name nothing else.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings
from orchestrator.images import toolchain_llvm
from orchestrator.images.builder import example_context
from orchestrator.images.render import render, render_script
from orchestrator.platforms.rocm import RocmPlatform, therock
from orchestrator.platforms.rocm.stacks import STACKS

FACTS_DIR = Path(__file__).parent / "data" / "therock-7.12"
#: A path below /opt/rocm in a rendered file (a sentence's full stop is not part of it).
ROCM_PATHS = r"/opt/rocm(?:[A-Za-z0-9._/+-]*[A-Za-z0-9_/+-])?"


class Source(BaseModel):
    ref: str
    path: str
    lines: str
    excerpt: str | None = None


class Apt(BaseModel):
    url: str
    key_url: str
    suite: str
    component: str
    line: str


class FileFact(BaseModel):
    package: str
    basis: str
    per_family: bool = False


class Facts(BaseModel):
    """The part of facts.json the checks read (the rest is provenance for people)."""

    sources: dict[str, dict[str, str]]
    release: str
    prefix: str
    families: dict[str, str]
    family_suffix: dict[str, str]
    deb_packages: dict[str, str | dict[str, str]]
    postinst_links: list[str]
    apt: Apt
    files: dict[str, FileFact]
    layout_dirs: dict[str, Any]
    version_file: dict[str, Any]
    tarball: dict[str, Any]


def facts() -> Facts:
    return Facts.model_validate(json.loads((FACTS_DIR / "facts.json").read_text()))


def deb_names(f: Facts) -> set[str]:
    names: set[str] = set()
    for value in f.deb_packages.values():
        names |= {value} if isinstance(value, str) else set(value.values())
    return names


def rendered(targets: str, **extra: Any) -> str:
    settings = Settings(platform="rocm", gpu_arch=targets, **extra)
    return render("rocm-base", example_context("rocm-base", settings))


def excerpts() -> Path | None:
    """`shared/research/therock-7.12/excerpts/` beside the checkout (or a folder above it):
    upstream's files, kept where they were read, never committed."""
    for folder in Path(__file__).resolve().parents:
        found = folder / "shared" / "research" / "therock-7.12" / "excerpts"
        if found.is_dir():
            return found
    return None


def test_every_cited_excerpt_is_kept_with_its_provenance() -> None:
    """Each fact names the upstream file it was read in; where the excerpts are kept (the
    machine that read them), each one names its repository and commit."""
    f = facts()
    raw = json.loads((FACTS_DIR / "facts.json").read_text())
    cited = re.findall(r'"excerpt": "([^"]+)"', json.dumps(raw))
    assert cited and all(s.get("commit") or s.get("ref") for s in f.sources.values())
    folder = excerpts()
    if folder is None:
        pytest.skip("shared/research/therock-7.12/excerpts is not beside this checkout")
    for name in cited:
        text = (folder / name).read_text()
        assert "github.com/ROCm/TheRock" in text and re.search(r"\b[0-9a-f]{40}\b", text), name
    upstream = json.loads((folder / "package.json").read_text())["packages"]
    recorded = raw["packages"]["entries"]
    assert {e["Package"]: (e.get("DEBDepends", []), str(e["Gfxarch"]).lower() == "true")
            for e in upstream} == {
        name: (e["depends"], e["per_family"]) for name, e in recorded.items()
    }  # fmt: skip
    assert f.sources["therock-7.12"]["tag"] == "therock-7.12"
    assert re.fullmatch(r"[0-9a-f]{40}", f.sources["therock-7.12"]["commit"])


@pytest.mark.parametrize("targets", ["gfx1201", "gfx1201,gfx942"])
def test_builder_names_only_recorded_packages_paths_and_repository(targets: str) -> None:
    f = facts()
    text = rendered(targets)
    asked = set(re.findall(r"\bamdrocm[A-Za-z0-9.+-]*[A-Za-z0-9]", text))
    assert asked, "no TheRock package asked for"
    assert asked <= deb_names(f), f"not in TheRock 7.12's packages: {asked - deb_names(f)}"
    wanted = {f.deb_packages[p][fam] for p in ("amdrocm-fft-devel", "amdrocm-ccl-devel")  # type: ignore[index]
              for fam in {f.families[t] for t in targets.split(",")}}  # fmt: skip
    assert wanted <= asked, "a family the targets need is not installed"
    others = {n for n in asked if re.search(r"-gfx[0-9a-z]+$", n)} - wanted
    assert not others, f"a family no target needs: {others}"
    for path in set(re.findall(ROCM_PATHS, text)):
        assert path == f.prefix or path.startswith(f.prefix + "/"), path
        inner = path.removeprefix(f.prefix).strip("/")
        known = inner in f.files or inner in f.layout_dirs["dirs"]
        assert not inner or known, f"{path}: no recorded file of TheRock 7.12"
    for line in re.findall(r'"(deb \[[^"]*)"', text):
        keyring, rest = re.fullmatch(r"deb \[arch=amd64 signed-by=(\S+)\] (.*)", line).groups()  # type: ignore[union-attr]
        assert rest == f"{f.apt.url} {f.apt.suite} {f.apt.component}"
        assert keyring == "$key"
    assert f"curl -fsSL --retry 3 {f.apt.key_url} " in text
    for check in re.findall(r'missing="\$missing, ([^"]+)"', text):
        path, package = re.fullmatch(r"(\S+) \(.*; package (\S+)\)", check).groups()  # type: ignore[union-attr]
        recorded = f.files[path]
        expected = f.deb_packages[recorded.package]
        if recorded.per_family:
            assert isinstance(expected, dict)
            expected = expected[f.families[targets.split(",")[0]]]
        assert package == expected, f"{path} is in {expected}, not {package}"
    assert f"{f.prefix}/{f.version_file['path']}" in text


def test_product_naming_rule_agrees_with_the_recorded_names() -> None:
    f = facts()
    assert f.families == therock.FAMILIES
    for family, suffix in f.family_suffix.items():
        assert therock.package_suffix(family) == suffix
    for package, names in f.deb_packages.items():
        if isinstance(names, str):
            assert therock.deb_name(package, f.release) == names
        else:
            for family, name in names.items():
                assert therock.deb_name(package, f.release, family) == name


def test_no_path_of_the_amd_stack_relies_on_opt_rocm_links() -> None:
    settings = Settings(platform="rocm", gpu_arch="gfx1201")
    amd = STACKS["amd"]
    used = [
        amd.llvm_bin_of_image(), amd.llvm_bin_of_image("7.12.0"), amd.device_libs(settings),
        amd.llvm_bin(settings), amd.stable_hip(settings), rendered("gfx1201"),
        *RocmPlatform().codegen.codegen_probe("codegen", "/opt/gromacs", "amd", release="7.12"),
        *RocmPlatform().codegen.microbench_compiler(settings, {}).flags,
    ]  # fmt: skip
    context = toolchain_llvm.context(settings, builder_image="b:1", builder_id="sha256:" + "0" * 64)
    used += [render("toolchain-llvm", context), render_script("toolchain-llvm", context)]
    for text in used:
        for path in re.findall(ROCM_PATHS, text):
            assert path.startswith(f"{facts().prefix}"), path


def test_a_target_of_no_released_family_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(UsageError) as caught:
        rendered("gfx1201,gfx90a")
    message = str(caught.value)
    assert "gfx90a" in message and "gfx1201 (gfx120X-all)" in message
    assert "ORCH_ROCM_STACK=debian" in message


def test_tarball_source_is_checksummed_and_holds_one_family() -> None:
    f = facts()
    url = "https://mirror.example/therock-dist-linux-gfx120X-all-7.12.0.tar.gz"
    tarball = {"url": url, "sha256": "c" * 64}
    text = rendered("gfx1201", rocm_source="tarball", rocm_tarball=tarball)
    assert f"curl -fsSL --retry 3 {url} -o /tmp/therock.tar.gz" in text
    assert f'echo "{"c" * 64}  /tmp/therock.tar.gz" | sha256sum -c' in text
    assert f"tar -xzf /tmp/therock.tar.gz -C {f.prefix}" in text
    assert "apt-get install -y --no-install-recommends \\\n             amdrocm" not in text
    with pytest.raises(UsageError, match="one GPU family"):
        rendered("gfx1201,gfx942", rocm_source="tarball", rocm_tarball=tarball)
