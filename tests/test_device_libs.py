"""Device libraries that do not fit the compiler fail the LLVM toolchain's build, at once.

The toolchain build ends with a smoke compile for the target GPU that calls ocml (sinf,
expf) with the device libraries dev builds will link. The mini llvm-project's clang
(Debian's clang 21 underneath) is built on the ROCm builder twice: pointed at a folder
without the libraries, it must fail with the paragraph that names them, and tag nothing;
with the stack's own, the same commit passes the smoke compile.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from mini_llvm import INITIAL_MESSAGE, make_mini_llvm

from orchestrator import engine as engine_api
from orchestrator.core.errors import UserError
from orchestrator.core.events import Event, Message
from orchestrator.images.toolchain_llvm import (
    ensure_environment,
    ensure_toolchain_llvm,
    llvm_tag,
    resolve_llvm,
    workspace_volume,
)

pytestmark = pytest.mark.engine

#: A folder every Debian ROCm image has, holding clang's headers and no bitcode.
NOT_DEVICE_LIBS = "/usr/lib/llvm-21/lib/clang/21/include"


def test_a_device_library_mismatch_fails_at_toolchain_build_time(
    engine: Any, rocm_settings: Any, tmp_path: Path
) -> None:
    repo = make_mini_llvm(tmp_path / "llvm-project", f"{INITIAL_MESSAGE} ({uuid.uuid4().hex})")
    settings = rocm_settings.model_copy(
        update={"llvm_source": str(repo.path), "results_dir": tmp_path / "results"}
    )
    wrong = settings.model_copy(update={"rocm_device_libs": NOT_DEVICE_LIBS})
    tag = llvm_tag(settings, resolve_llvm(settings, repo.head()))
    try:
        with pytest.raises(UserError) as failed:
            ensure_toolchain_llvm(engine, wrong, repo.head())
        message = str(failed.value)
        assert message.startswith(f"The LLVM toolchain {repo.head()[:8]} was built, but it ")
        assert (
            f"cannot compile for gfx1201 with the device libraries in {NOT_DEVICE_LIBS}" in message
        )
        assert "nothing was tagged" in message
        assert "cannot find ROCm device library" in message  # clang's own words follow
        assert "Traceback" not in message
        assert engine_api.image(engine, tag) is None

        said: list[Event] = []
        assert ensure_toolchain_llvm(engine, settings, repo.head(), emit=said.append) == tag
        texts = [e.text for e in said if isinstance(e, Message)]
        assert "device libraries: smoke compile for gfx1201 (sinf, expf) passed" in texts
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            engine.images.remove(tag)
        environment = ensure_environment(engine, settings)
        with contextlib.suppress(docker.errors.NotFound):
            engine.volumes.get(workspace_volume(settings, environment, str(repo.path))).remove()
