"""Builds against the real engine: failures name the step, tag nothing, leave no container."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.core import engine as engine_mod
from orchestrator.core.errors import UserError
from orchestrator.platforms.cpu import CpuPlatform

DEFAULT_CPU_BASE = CpuPlatform.default_base

pytestmark = pytest.mark.engine


def _containers(client: Any) -> set[str]:
    return {c.id for c in client.containers.list(all=True)}


def test_failing_step_is_named_with_log_tail(engine: Any) -> None:
    from orchestrator.core.settings import load_settings
    from orchestrator.images.base import ensure_base

    ensure_base(engine, load_settings(platform="cpu"))
    before = _containers(engine)
    dockerfile = (
        f"FROM {DEFAULT_CPU_BASE}\n"
        "RUN echo preparing the thing\n"
        "RUN echo about to fail && echo the-last-words && exit 3\n"
    )
    lines: list[str] = []
    with pytest.raises(UserError) as err:
        engine_mod.build(
            engine, dockerfile, what="gmxbench-test:fail", emit=lambda e: lines.append(e.text)
        )
    message = err.value.message
    assert "Building gmxbench-test:fail failed at Step 3/3 : RUN echo about to fail" in message
    assert "returned a non-zero code: 3" in message
    assert "the-last-words" in message
    assert "Nothing was tagged" in message
    assert any("preparing the thing" in line for line in lines)
    assert _containers(engine) == before
    assert not engine.images.list(name="gmxbench-test")


def test_parse_error_is_a_user_error(engine: Any) -> None:
    with pytest.raises(UserError, match="unknown instruction"):
        engine_mod.build(engine, "FROM scratch\nFOOBAR baz\n", what="gmxbench-test:parse")


def test_build_returns_id_and_labels(engine: Any) -> None:
    dockerfile = f"FROM {DEFAULT_CPU_BASE}\nRUN echo ok > /ok\n"
    image_id = engine_mod.build(engine, dockerfile, what="probe", labels={"gmxbench.test": "yes"})
    image = engine.images.get(image_id)
    assert image.labels["gmxbench.test"] == "yes"
    code, out = engine_mod.run_capture(engine, image_id, ["cat", "/ok"])
    assert (code, out.strip()) == (0, "ok")
    engine.images.remove(image_id)
