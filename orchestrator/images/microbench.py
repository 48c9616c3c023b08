"""Microbenchmark images: a build's image plus our microbenchmarks, compiled by its compiler.

A microbenchmark recipe (`runs.microbench_recipe`) runs in an image built FROM the image
of the build it measures: a GROMACS image (stable or dev) or a toolchain image, since a
microbenchmark needs the compiler, not GROMACS. The build's compiler under test compiles
the program with the flags its GROMACS build used (`CodegenRole.microbench_compiler`);
`tune` instead gets Kernel Tuner, whose C backend calls that compiler for every
configuration at run time. Like every image here it is keyed by its inputs (rendered
Dockerfile, parent id, the files it copies): a second run of the same build finds it in
seconds. A recipe with its own sources (`[sources]`) gets its image from
`images.user_kernels`.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from importlib.resources import as_file
from pathlib import Path
from typing import Any

from orchestrator import engine
from orchestrator.codegen.model import probe_argv
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Step, ignore
from orchestrator.core.files import parse_model
from orchestrator.core.settings import Settings
from orchestrator.engine import Client, Image
from orchestrator.images.catalog import find_by_inputs, inputs_key, probe
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.gromacs import example_probe, gromacs_ref
from orchestrator.images.microbench_image import (
    IMAGE_KIND,
    MICROBENCH_DIR,
    REPO,
    SOURCES,
    MicrobenchImage,
    file_digests,
    microbench_record,
)
from orchestrator.images.provenance import (
    KIND_LABEL,
    TOOLCHAIN_LABEL,
    label,
)
from orchestrator.images.render import render
from orchestrator.images.user_kernels import TEMPLATE as USER_TEMPLATE
from orchestrator.images.user_kernels import UserProgram, ensure_user, kernel_codegen, llvm_bin
from orchestrator.images.user_kernels import context as user_context
from orchestrator.platforms import active, get
from orchestrator.platforms.base import Compiler, MicrobenchCompiler
from orchestrator.store.layout import build_log_path

REQUIREMENTS = "tune-requirements.txt"
PROGRAMS = ("bandwidth", "tune")
#: The files each program's image copies from `payloads/microbench/` (bandwidth: the
#: platform's source and the header both sources share).
BANDWIDTH_HEADER = "bandwidth_common.h"
TUNE_SOURCES = ("tune.py", "tune_cpu.c", "tune_gpu.cu")
#: The manylinux platforms whose wheels run on the Debian images.
WHEEL_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def template(program: str) -> str:
    """The template of a program's image (`images/kernel-<program>.Dockerfile.j2`, a name
    the goldens share)."""
    return f"kernel-{program}"


def templates() -> list[str]:
    return [*(template(p) for p in PROGRAMS), USER_TEMPLATE]


def build_name(parent: Image, ref: str) -> str:
    """The build a parent image stands for: a GROMACS build's name, or `toolchain-<compiler>`."""
    labels = parent.labels
    if labels.get(KIND_LABEL) == "toolchain" and TOOLCHAIN_LABEL in labels:
        fix = f"Build the toolchain again (`docker rmi {ref}` first)."
        compiler = parse_model(labels[TOOLCHAIN_LABEL], Compiler, f"{ref}'s label", fix)
        return f"toolchain-{compiler.name}"
    build = labels.get(label("build"))
    if labels.get(KIND_LABEL) != "gromacs" or not build:
        raise UserError(
            f"{ref} is neither a GROMACS nor a toolchain image of this tool: kernel benchmarks "
            "run in one of those, compiled by its compiler. `nox -s images` lists the builds."
        )
    return build


def microbench_compiler(settings: Settings, labels: dict[str, str]) -> MicrobenchCompiler:
    """The platform's answer for an image with these (prefixed) labels."""
    platform = get(labels.get(label("platform")) or active(settings).name)
    prefix = label("")
    return platform.codegen.microbench_compiler(
        settings, {k.removeprefix(prefix): v for k, v in labels.items() if k.startswith(prefix)}
    )


def context(
    program: str, settings: Settings, parent_tag: str, build: str, labels: dict[str, str]
) -> dict[str, Any]:
    compiler = microbench_compiler(settings, labels)
    return {
        "parent_image": parent_tag,
        "build": build,
        "api": compiler.api,
        "compiler": compiler.compiler,
        "source": compiler.source,
        "header": BANDWIDTH_HEADER,
        "compile_line": " ".join([compiler.compiler, *compiler.flags]),
        "libs": "".join(f" {lib}" for lib in compiler.libs),
        "sources": list(TUNE_SOURCES),
    }


def example_context(name: str, settings: Settings) -> dict[str, Any]:
    """The context of a real build of the stable image's microbenchmarks (no engine asked)."""
    platform = active(settings)
    compiler = platform.build.stable_compiler(settings, example_probe)
    build = platform.build.stable_build_name(settings, compiler)
    labels = {
        label("platform"): platform.name,
        label("simd"): settings.simd,
        label("rocm_stack"): settings.rocm_stack,
        label("compiler"): platform.build.compiler_under_test(compiler),
    }
    if name == USER_TEMPLATE:
        under_test = microbench_compiler(settings, labels)
        tools = llvm_bin(labels, under_test.api)
        return user_context(under_test, gromacs_ref(build), build,
                            "saxpy.hip" if tools else "saxpy.cpp", tools)  # fmt: skip
    return context(name.removeprefix("kernel-"), settings, gromacs_ref(build), build, labels)


def ensure(
    client: Client, settings: Settings, ref: str, program: str | UserProgram,
    emit: Emit = ignore,
) -> MicrobenchImage:  # fmt: skip
    """The microbenchmark image of `program` on the build `ref` names (built now when missing):
    one of ours by name, or a user's own (`UserProgram`, a recipe's `[sources]`)."""
    parent = engine.image(client, gromacs_ref(ref))
    if parent is None:
        raise UserError(
            f"Image {gromacs_ref(ref)} is not in the engine. Kernel benchmarks run on a GROMACS "
            "build (`nox -s build -- stable`) or a toolchain image (`nox -s build -- toolchain "
            "--package clang-16`); `nox -s images` lists what exists."
        )
    build = build_name(parent, gromacs_ref(ref))
    compiler = microbench_compiler(settings, parent.labels)
    if isinstance(program, UserProgram):
        return ensure_user(client, settings, parent, build, compiler, program, emit)
    values = context(program, settings, parent.id, build, parent.labels)
    if program == "tune" and compiler.api != "openmp":
        raise UserError(
            f"`tune` runs Kernel Tuner's C backend on CPU builds only; {build} is a "
            f"{compiler.api.upper()} build, whose Kernel Tuner backend needs hip-python "
            "matching the image's ROCm, and none can be pinned yet (hip-python 6.4.3, for "
            "Debian's HIP 6.4.3, has no wheel for sid's Python 3.14; AMD's for 7.12 is not "
            "on PyPI). Tune a CPU build, or run `bandwidth` on this one."
        )
    context_files: dict[str, bytes | Path] = {
        name: SOURCES.joinpath(name).read_bytes()
        for name in (
            (BANDWIDTH_HEADER, compiler.source) if program == "bandwidth" else TUNE_SOURCES
        )
    }
    if program == "tune":
        context_files |= _wheel_files(client, settings, parent, emit)
    dockerfile = render(template(program), values)
    key = inputs_key(dockerfile, parent.id, *file_digests(context_files))
    tag = f"{REPO}:{build}-{program}-{key[:8]}"

    def build_image() -> str:
        emit(Step(f"kernel image: {program} for {build}, compiled by {compiler.compiler}"))
        log = build_log_path(settings.results_dir, tag)
        return engine.build(client, dockerfile, what=tag, files=context_files, log=log, emit=emit)

    def made(image_id: str, _: Stamp) -> MicrobenchImage:
        image = engine.image(client, image_id)
        assert image is not None, image_id
        return MicrobenchImage(tag, image_id, build, dict(image.labels), compiler)

    block = Block[MicrobenchImage](
        find=lambda: find_by_inputs(client, key, IMAGE_KIND),
        reuse=lambda found: MicrobenchImage(tag, found.id, build, dict(found.labels), compiler),
        build=build_image,
        verify=lambda image_id: Stamp(microbench_record(tag, image_id, parent, build, key), [tag]),
        done=made,
        tag=tag,
        key=key,
    )
    return ensure_image(client, block, emit)


#: The programs of a bandwidth image, whose code is the image's code identity.
BANDWIDTH_BINARIES = ("bandwidth", "bandwidth-nt")
_IDENTITIES: dict[str, str | None] = {}


def code_identity(client: Client, image: MicrobenchImage, program: str | UserProgram) -> str | None:
    """A sha256 of the code the build's compiler made for `program`: every function of its
    binaries, normalised by the codegen probe (only what the compiler chose: addresses,
    the `.comment` naming the compiler's revision, and so on are left out), so two
    compilers that made the same code give the same identity. None where it cannot be
    read: `tune` compiles at run time, and a HIP bandwidth's code is in its offload bundle.
    A user's program: its fingerprint (GPU: the device code of every target)."""
    if isinstance(program, UserProgram):
        if image.id not in _IDENTITIES:
            found = kernel_codegen(client, image).kernels
            lines = sorted(f"{key} {code.sha256}\n" for key, code in found.items())
            _IDENTITIES[image.id] = hashlib.sha256("".join(lines).encode()).hexdigest()
        return _IDENTITIES[image.id]
    if program != "bandwidth" or image.compiler.api != "openmp":
        return None
    if image.id not in _IDENTITIES:
        lines = []
        for binary in BANDWIDTH_BINARIES:
            argv = probe_argv("cpu", f"{MICROBENCH_DIR}/bin/{binary}", objdump="objdump",
                              nm="nm", pattern=".")  # fmt: skip
            code, out = probe(client, image.id, argv, stderr=False)
            if code != 0:
                _IDENTITIES[image.id] = None
                return None
            for f in json.loads(out)["functions"]:
                lines.append(f"{binary} {f['name']} {f['sha256']}\n")
        _IDENTITIES[image.id] = hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()
    return _IDENTITIES[image.id]


def _wheel_files(
    client: Client, settings: Settings, parent: Image, emit: Emit
) -> dict[str, bytes | Path]:
    """Kernel Tuner's wheels for the parent's Python, and a SHA256SUMS the image checks."""
    version = _PYTHONS.get(parent.id) or _python_of(client, parent.id)
    _PYTHONS[parent.id] = version
    wheels = fetch_wheels(
        settings.cache_dir / "wheels" / f"cp{version.replace('.', '')}", version, emit
    )
    sums = "".join(f"{_sha256(w)}  {w.name}\n" for w in wheels)
    return {"SHA256SUMS": sums.encode(), **{w.name: w for w in wheels}}


#: The Python of each parent image asked so far (a probe container costs a second).
_PYTHONS: dict[str, str] = {}


def _python_of(client: Client, image_id: str) -> str:
    code, out = probe(client, image_id, ["python3", "--version"])
    match = re.fullmatch(r"Python (3\.\d+)\.\S+", out.strip()) if code == 0 else None
    version = match.group(1) if match else ""
    if not version:
        raise UserError(
            f"`tune` needs python3 in the image it runs in; `python3` in {image_id[:19]} "
            f"answered {out.strip()[:200]!r}. Use a build made from this tool's builder images."
        )
    return version


def pins() -> dict[str, set[str]]:
    """`name==version` → the sha256 digests allowed for it, from tune-requirements.txt."""
    out: dict[str, set[str]] = {}
    for line in SOURCES.joinpath(REQUIREMENTS).read_text().splitlines():
        words = line.split()
        if words and not line.startswith("#"):
            out[words[0]] = {w.removeprefix("--hash=sha256:") for w in words[1:]}
    return out


def fetch_wheels(folder: Path, python: str, emit: Emit = ignore) -> list[Path]:
    """The pinned wheels for CPython `python`, downloaded once (pip checks every hash)."""
    allowed = set().union(*pins().values())
    have = sorted(w for w in folder.glob("*.whl") if _sha256(w) in allowed)
    if len(have) == len(pins()):
        return have
    emit(Step(f"downloading Kernel Tuner's wheels for Python {python} (hashes pinned)"))
    folder.mkdir(parents=True, exist_ok=True)
    with as_file(SOURCES.joinpath(REQUIREMENTS)) as requirements:
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
            "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
            *(f"--platform={p}" for p in WHEEL_PLATFORMS), "-r", str(requirements),
            "-d", str(folder),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise UserError(
            f"Could not download Kernel Tuner's wheels for Python {python} from PyPI into "
            f"{folder}: {' '.join(detail)[:400]}. The host needs PyPI (containers never do); "
            "or copy the wheels listed in orchestrator/payloads/microbench/tune-requirements.txt "
            "there."
        )
    have = sorted(w for w in folder.glob("*.whl") if _sha256(w) in allowed)
    if len(have) != len(pins()):
        raise UserError(
            f"{folder} holds {len(have)} of the {len(pins())} pinned wheels after the download: "
            "a pin has no wheel for this Python. Pin versions that do in tune-requirements.txt."
        )
    return have


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
