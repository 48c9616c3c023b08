"""Microbenchmark images of a user's own kernel: the source a recipe names, our timing header.

A microbenchmark recipe in a user's recipe folder may name its own source per API
(`[sources] hip = "saxpy.hip"`, `cpu = "saxpy.cpp"`) instead of one of our programs. Its
image is built FROM the build's image like bandwidth's (`images.microbench`): the build's
compiler under test compiles the source the platform's API picks, with the build's flags,
against `gmxbench_kernel.h` (`payloads/microbench/`), which times the kernels and prints
the JSON that `parsers.microbench` reads. The image is keyed by its inputs, the source's digest
included, so an edited source makes a new image and an unchanged one is found at once.

A GPU build keeps the device code objects of the program in
`/opt/gmxbench/kernels/codeobjects/` (`<source>.o.<n>.hipv4-amdgcn-amd-amdhsa--<gfx>`, as
`llvm-objdump --offloading` names them), a CPU build its binary, so that `kernel_codegen`
reads the code the compiler made for each target with the codegen probe.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from orchestrator import engine
from orchestrator.codegen.model import Codegen, parse_probe_output, probe_argv
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Step
from orchestrator.core.settings import Settings
from orchestrator.engine import BuildFailed, Client, Image
from orchestrator.images.catalog import find_by_inputs, inputs_key, probe
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.microbench_image import (
    IMAGE_KIND,
    MICROBENCH_DIR,
    REPO,
    SOURCES,
    MicrobenchImage,
    file_digests,
    microbench_record,
)
from orchestrator.images.provenance import label
from orchestrator.images.render import render
from orchestrator.platforms.base import MicrobenchCompiler
from orchestrator.platforms.rocm.stacks import STACKS
from orchestrator.store.layout import build_log_path

TEMPLATE = "kernel-user"
#: The harness header and the header whose batch timing it reuses (`payloads/microbench/`).
HEADERS = ("gmxbench_kernel.h", "bandwidth_common.h")
BINARY = f"{MICROBENCH_DIR}/bin/kernel"
CODEOBJECTS = f"{MICROBENCH_DIR}/codeobjects"
#: What the compile step puts before each line the compiler prints (its errors are
#: read back from the build log by it).
MARK = "compiler| "
#: Lines of the compiler's own output a failure paragraph quotes.
QUOTED_LINES = 30
#: The recipe's `[sources]` key of each platform API.
SOURCE_KEYS = {"hip": "hip", "cuda": "cuda", "openmp": "cpu"}


class UserProgram(BaseModel):
    """A recipe's own kernel sources, where they are on this host, and what to look at."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recipe: str
    #: The recipe file (every message about the program names it).
    recipe_file: str
    #: `[sources]` key (`hip`, `cuda`, `cpu`) -> the path as the recipe writes it,
    #: relative to the recipe's folder.
    sources: dict[str, str]
    #: The kernels' function names (the CPU fingerprint's symbol pattern; empty: all).
    functions: list[str] = []

    def __str__(self) -> str:
        return self.recipe

    def source(self, api: str, build: str) -> tuple[str, Path]:
        """The source for `api` (as written, and on disk), or why there is none."""
        key = SOURCE_KEYS.get(api, api)
        written = self.sources.get(key)
        if written is None:
            has = ", ".join(f"{k} = {v!r}" for k, v in sorted(self.sources.items()))
            raise UserError(
                f"The kernel recipe {self.recipe} ({self.recipe_file}) has no source for "
                f"{build}, a {api.upper()} build: its [sources] has {has}. Add `{key} = "
                f'"<file>"` to [sources] in {self.recipe_file}, or run it on a build whose '
                "API it has a source for."
            )
        return written, Path(self.recipe_file).parent / written

    def pattern(self) -> str:
        """The CPU fingerprint's symbol pattern: the kernels' names, or every function."""
        if not self.functions:
            return "."
        return "(" + "|".join(re.escape(name) for name in self.functions) + ")"


def llvm_bin(labels: dict[str, str], api: str) -> str | None:
    """The LLVM tools of a HIP image's ROCm stack (llvm-objdump), None for other APIs."""
    if api != "hip":
        return None
    used = STACKS[labels.get(label("rocm_stack")) or "amd"]
    return used.llvm_bin_of_image(labels.get(label("rocm_version")))


def context(
    compiler: MicrobenchCompiler, parent_tag: str, build: str, source: str, tools: str | None
) -> dict[str, Any]:
    return {
        "parent_image": parent_tag,
        "build": build,
        "api": compiler.api,
        "compiler": compiler.compiler,
        "source": source,
        "unit": source.rsplit("/", 1)[-1],
        "headers": list(HEADERS),
        "compile_line": " ".join([compiler.compiler, *compiler.flags]),
        "libs": "".join(f" {lib}" for lib in compiler.libs),
        "mark": MARK,
        "llvm_bin": tools,
    }


def ensure_user(
    client: Client, settings: Settings, parent: Image, build: str, compiler: MicrobenchCompiler,
    program: UserProgram, emit: Emit,
) -> MicrobenchImage:  # fmt: skip
    """The microbenchmark image of a user's program on `parent`, the image of `build`,
    compiled by `compiler` (the platform's answer for that image)."""
    written, path = program.source(compiler.api, build)
    if not path.is_file():
        raise UserError(
            f"The kernel recipe {program.recipe} ({program.recipe_file}) names the source "
            f"{written!r}, which is not there any more ({path}). Put it back next to the "
            "recipe or fix [sources]."
        )
    files: dict[str, bytes | Path] = {
        f"include/{name}": SOURCES.joinpath(name).read_bytes() for name in HEADERS
    }
    files[f"src/{written}"] = path.read_bytes()
    values = context(compiler, parent.id, build, written, llvm_bin(parent.labels, compiler.api))
    dockerfile = render(TEMPLATE, values)
    key = inputs_key(dockerfile, parent.id, *file_digests(files))
    tag = f"{REPO}:{build}-{_slug(program.recipe)}-{key[:8]}"
    pattern = program.pattern()

    def build_image() -> str:
        emit(
            Step(f"kernel image: {program.recipe} ({written}) for {build}, by {compiler.compiler}")
        )
        log = build_log_path(settings.results_dir, tag)
        try:
            return engine.build(client, dockerfile, what=tag, files=files, log=log, emit=emit)
        except BuildFailed:
            said = compiler_output(log)
            if not said:
                raise
            raise UserError(
                f"The kernel recipe {program.recipe} ({program.recipe_file}) does not compile "
                f"with {compiler.compiler} for {build}:\n{said}\nFix {written} (next to "
                f"{Path(program.recipe_file).name}) and run again. The whole build log: {log}"
            ) from None

    def made(image_id: str, _: Stamp) -> MicrobenchImage:
        image = engine.image(client, image_id)
        assert image is not None, image_id
        return MicrobenchImage(tag, image_id, build, dict(image.labels), compiler, pattern)

    block = Block[MicrobenchImage](
        find=lambda: find_by_inputs(client, key, IMAGE_KIND),
        reuse=lambda found: MicrobenchImage(
            tag, found.id, build, dict(found.labels), compiler, pattern
        ),
        build=build_image,
        verify=lambda image_id: Stamp(microbench_record(tag, image_id, parent, build, key), [tag]),
        done=made,
        tag=tag,
        key=key,
    )
    return ensure_image(client, block, emit)


def compiler_output(log: Path) -> str:
    """The last lines the compiler printed in a failed build (the marked ones), indented."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    said = [line.removeprefix(MARK) for line in text.splitlines() if line.startswith(MARK)]
    said = [line for line in said if line.strip()][-QUOTED_LINES:]
    return "\n".join("    " + line for line in said)


def kernel_codegen(client: Client, image: MicrobenchImage) -> Codegen:
    """The code the build's compiler made for the program: each kernel per GPU target
    (`name@gfx1201`, `name@gfx942` where there are several) from the kept code objects,
    or the CPU binary's functions (the recipe's `functions`, or all)."""
    tools = llvm_bin(image.labels, image.compiler.api)
    if tools is not None:
        argv = probe_argv(
            "gpu", CODEOBJECTS, objdump=f"{tools}/llvm-objdump",
            readelf=f"{tools}/llvm-readelf", cxxfilt=f"{tools}/llvm-cxxfilt",
        )  # fmt: skip
    else:
        argv = probe_argv("cpu", BINARY, objdump="objdump", nm="nm", cxxfilt="c++filt",
                          pattern=image.pattern or ".")  # fmt: skip
    code, out = probe(client, image.id, argv, stderr=False)
    if code != 0:
        raise UserError(
            f"The codegen probe failed in {image.tag} (exit {code}): {out.strip()[-400:]}. "
            f"Build the kernel image again (`docker rmi {image.tag}` first)."
        )
    return parse_probe_output(out, source=f"image {image.tag}", build=image.tag)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_.-]", "-", name.lower())
