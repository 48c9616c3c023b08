"""`prune`: old LLVM toolchain images go, the newest, the used and the volumes stay.

Real images on the real engine: label-only images (no layers) carrying toolchain,
dev GROMACS and kernel records of a platform name no one else uses, so the prune
under test, scoped to that platform, can touch nothing but them.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from orchestrator import engine as engine_mod
from orchestrator.cli import main
from orchestrator.core.errors import UsageError
from orchestrator.core.events import ignore
from orchestrator.core.settings import load_settings
from orchestrator.images.catalog import label_and_tag, new_record
from orchestrator.images.provenance import label
from orchestrator.workflows.prune import prune

#: The labels of an LLVM workspace volume (`images.llvm_workspace`).
WORKSPACE_LABEL, KEEP_LABEL = label("workspace"), label("keep")
#: Six toolchains, oldest first (created 2001-01-01 … 2001-01-06).
COMMITS = ["a0a0a0a0", "a1a1a1a1", "a2a2a2a2", "a3a3a3a3", "a4a4a4a4", "a5a5a5a5"]


@dataclass
class Made:
    platform: str
    toolchains: list[str]  # tags, oldest first
    ids: dict[str, str]
    dev: str
    microbench: str
    volume: str


@pytest.fixture
def made(engine: Any, tmp_path: Path) -> Iterator[Made]:
    uid = uuid.uuid4().hex[:8]
    platform = f"prunetest{uid}"
    settings = load_settings(platform="cpu", results_dir=tmp_path)
    base = engine_mod.build(
        engine, f"FROM scratch\nLABEL gmxbench.test=prune-{uid}\n", what="prune test base"
    )
    tags = [f"gmxbench-toolchain:{platform}-llvm-{c}" for c in COMMITS]
    dev = f"gmxbench-prunetest:dev-llvm-{COMMITS[0]}-{uid}"
    microbench = f"gmxbench-prunetest:toolchain-llvm-{COMMITS[1]}-bandwidth-{uid}"
    volume = f"gmxbench-llvm-{platform}-000000000000"
    ids: dict[str, str] = {}

    def make(tag: str, kind: Any, created: str, **fields: Any) -> str:
        record = new_record(settings, kind, tag, base, f"prune-{uid}-{tag}", **fields)
        record = record.model_copy(update={"platform": platform, "created": created})
        return label_and_tag(engine, base, record, [tag], ignore)

    try:
        for day, (tag, commit) in enumerate(zip(tags, COMMITS, strict=True), start=1):
            ids[tag] = make(
                tag, "toolchain", f"2001-01-0{day}T00:00:00Z",
                compiler=f"/opt/llvm-{commit}/bin/clang++", llvm_commit=commit,
            )  # fmt: skip
        make(dev, "gromacs", "2001-02-01T00:00:00Z", build=dev.split(":")[1],
             toolchain=tags[0], llvm_commit=COMMITS[0])  # fmt: skip
        make(microbench, "kernels", "2001-02-01T00:00:00Z", build=f"toolchain-llvm-{COMMITS[1]}",
             llvm_commit=COMMITS[1])  # fmt: skip
        engine.volumes.create(volume, labels={WORKSPACE_LABEL: "llvm", KEEP_LABEL: "true"})
        yield Made(platform, tags, ids, dev, microbench, volume)
    finally:
        for tag in [*tags, dev, microbench]:
            with contextlib.suppress(docker.errors.NotFound):
                engine.images.remove(tag)
        with contextlib.suppress(docker.errors.NotFound):
            engine.images.remove(base)
        with contextlib.suppress(docker.errors.NotFound):
            engine.volumes.get(volume).remove()


def present(engine: Any, ref: str) -> bool:
    return engine_mod.image(engine, ref) is not None


def test_prune_keeps_newest_used_and_volumes(engine: Any, made: Made) -> None:
    tags = made.toolchains
    old, refused = tags[2], tags[3]  # neither newest nor used; a container holds the second
    container = engine.containers.create(
        refused, command=["/none"], labels={"gmxbench.test": "prune"}
    )
    try:
        dry = prune(engine, keep=2, dry_run=True, platform=made.platform)
        assert [t.tag for t in dry.removed] == [refused, old]  # newest first
        assert all(present(engine, tag) for tag in tags)  # a dry run removes nothing

        done = prune(engine, keep=2, platform=made.platform)
        why = {t.tag: t.why for t in done.toolchains}
        assert [t.tag for t in done.removed] == [old]
        assert why[tags[5]] == why[tags[4]] == "one of the 2 newest"
        assert why[tags[1]] == f"{made.microbench} built from it"  # a microbenchmark image FROM it
        assert why[tags[0]] == f"{made.dev} built from it"  # a dev GROMACS image
        assert why[refused].startswith("the engine refused: ")
        assert not present(engine, old) and not present(engine, made.ids[old])  # image gone too
        assert all(present(engine, tag) for tag in tags if tag != old)
        assert made.volume in [v.name for v in done.volumes]
        assert engine.volumes.get(made.volume).attrs["Labels"][KEEP_LABEL] == "true"
    finally:
        container.remove(force=True)

    again = prune(engine, keep=2, platform=made.platform, sizes=True)
    assert [t.tag for t in again.removed] == [refused]  # its container is gone
    assert [t.tag for t in again.toolchains] == [tags[5], tags[4], refused, tags[1], tags[0]]
    kept = next(v for v in again.volumes if v.name == made.volume)
    assert kept.size == 0  # an empty volume, as the engine's disk usage reports it
    assert present(engine, made.dev) and present(engine, made.microbench)


def test_prune_cli_dry_run_lists_and_removes_nothing(
    engine: Any, made: Made, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole engine's listing, dry: the test's toolchains are in it, and nothing goes."""
    assert main(["prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    line = next(text for text in out.splitlines() if made.toolchains[2] in text)
    assert line.startswith("would remove")  # three newer ones are kept (default 3)
    assert made.volume in out
    assert "prune never removes a workspace volume" in out
    assert all(present(engine, tag) for tag in made.toolchains)


def test_prune_refuses_a_negative_keep() -> None:
    with pytest.raises(UsageError, match="0 or more"):
        prune(None, keep=-1)  # refused before the engine is asked anything
