"""The one sequence every image goes through (`images.ensure`), with the engine faked:
what each step is called with, in which order, and what a failed check leaves behind."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.core.errors import UserError
from orchestrator.core.events import ignore
from orchestrator.engine import Image
from orchestrator.images import ensure as ensure_mod
from orchestrator.images.catalog import StaleTag
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.provenance import ImageRecord

KEY = "k" * 64


class Engine:
    """Records what `ensure_image` asks of the engine; `taken` holds tags of other inputs."""

    def __init__(self, taken: tuple[str, ...] = ()) -> None:
        self.calls: list[str] = []
        self.taken = set(taken)

    def refuse(self, client: Any, tag: str, key: str) -> None:
        self.calls.append(f"refuse {tag}")
        if tag in self.taken:
            raise StaleTag(tag)

    def label(self, client: Any, image_id: str, record: ImageRecord, tags: list[str],
              emit: Any, extra: dict[str, str]) -> str:  # fmt: skip
        self.calls.append(f"label {image_id} {','.join(tags)} {sorted(extra)}")
        return "final"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Engine:
    engine = Engine()
    monkeypatch.setattr(ensure_mod, "refuse_overwrite", engine.refuse)
    monkeypatch.setattr(ensure_mod, "label_and_tag", engine.label)
    monkeypatch.setattr(ensure_mod, "keep_tag", lambda c, i, t: engine.calls.append(f"keep {t}"))
    monkeypatch.setattr(ensure_mod.engine, "tag", lambda c, i, t: engine.calls.append(f"tag {t}"))
    monkeypatch.setattr(
        ensure_mod.engine, "remove_image", lambda c, i, force: engine.calls.append(f"remove {i}")
    )
    return engine


def _image(image_id: str) -> Image:
    return Image(id=image_id, tags=(), labels={}, layers=(), repo_digests=(), created="")


def _block(
    fake: Engine, *, found: Image | None = None, fail: bool = False, **more: Any
) -> Block[str]:
    def build() -> str:
        fake.calls.append("build")
        return "built"

    def verify(image_id: str) -> Stamp:
        fake.calls.append(f"verify {image_id}")
        if fail:
            raise UserError("not what was asked")
        record = ImageRecord(tag="t:1", id=image_id, kind="builder", inputs=KEY)
        return Stamp(record, ["t:1", "t:current"], {"extra": "1"},
                     lambda final: fake.calls.append(f"save {final}"))  # fmt: skip

    return Block[str](
        find=lambda: found,
        reuse=lambda image: f"reused {image.id}",
        build=build,
        verify=verify,
        done=lambda final, stamp: f"made {final} {stamp.record.id if stamp.record else ''}",
        **more,
    )


def test_a_found_image_is_reused_with_its_tag_put_back(fake: Engine) -> None:
    block = _block(fake, found=_image("old"), tag="t:1", key=KEY)
    assert ensure_image(None, block, ignore) == "reused old"
    assert fake.calls == ["refuse t:1", "keep t:1"]


def test_a_new_image_is_verified_before_its_labels_tags_and_lockfile(fake: Engine) -> None:
    block = _block(fake, tag="t:1", key=KEY)
    assert ensure_image(None, block, ignore) == "made final final"
    assert fake.calls == [
        "refuse t:1", "build", "verify built", "refuse t:1",
        "label built t:1,t:current ['extra']", "save final",
    ]  # fmt: skip


def test_a_claimed_tag_is_refused_before_the_build(fake: Engine) -> None:
    fake.taken.add("t:1")
    block = _block(fake, key=KEY, claim=lambda: "t:1")
    with pytest.raises(StaleTag):
        ensure_image(None, block, ignore)
    assert fake.calls == ["refuse t:1"]


def test_a_failed_check_tags_nothing_and_a_discarding_block_removes_the_image(
    fake: Engine,
) -> None:
    with pytest.raises(UserError):
        ensure_image(None, _block(fake, fail=True, key=KEY), ignore)
    assert fake.calls == ["build", "verify built"]
    fake.calls.clear()
    with pytest.raises(UserError):
        ensure_image(None, _block(fake, fail=True, key=KEY, discard=True), ignore)
    assert fake.calls == ["build", "verify built", "remove built"]


def test_a_tag_first_known_from_the_check_is_refused_before_labels(fake: Engine) -> None:
    fake.taken.add("t:1")
    with pytest.raises(StaleTag):
        ensure_image(None, _block(fake, key=KEY, discard=True), ignore)
    assert fake.calls == ["build", "verify built", "refuse t:1", "remove built"]


def test_a_stamp_without_a_record_only_tags(fake: Engine) -> None:
    block = Block[str](
        find=lambda: None,
        reuse=lambda image: "reused",
        build=lambda: "built",
        verify=lambda image_id: Stamp(None, ["env:1"]),
        done=lambda final, _: final,
    )
    assert ensure_image(None, block, ignore) == "built"
    assert fake.calls == ["tag env:1"]
