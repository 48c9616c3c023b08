"""GROMACS builds on a host without a container engine (the native executor).

The lent GPU host has no container engine, and neither do many HPC sites. There a build
is the same rendered build steps as an image's (`_gromacs-steps.j2`), run by bash into
an install prefix named like the field report's (`<native_root>/<build>`, with
`<native_root>/dev-current` pointing at the newest dev build). It gets the same checks
(`gromacs_check.build_facts`), the same record and lockfile, and the same codegen
fingerprint, read by the probe on this host. A prefix is a build only once its record
(`gmxbench-build.json`) is written, last: a prefix without one is a build that did not
finish, removed before the next one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.codegen import collect
from orchestrator.codegen.model import Codegen
from orchestrator.core.errors import UsageError, UserError
from orchestrator.core.events import Caution, Emit, Message, ignore
from orchestrator.core.files import read_model, write_atomic
from orchestrator.core.settings import Settings
from orchestrator.images.catalog import new_record
from orchestrator.images.gromacs import SourceSpec, context, gromacs_ref
from orchestrator.images.gromacs_check import build_facts, refused
from orchestrator.images.provenance import ImageRecord, Lockfile, save_lockfile
from orchestrator.images.render import render_script
from orchestrator.platforms import active
from orchestrator.platforms.base import Compiler, Flavor, Probe, flags_suffix
from orchestrator.store.layout import build_log_path

#: The record of a finished native build, in its prefix; written last.
RECORD_FILE = "gmxbench-build.json"
#: What the checks and the codegen read, below the prefix (an image's /opt/gmxbench).
KEPT_DIR = "gmxbench"
DEV_CURRENT = "dev-current"
TEMPLATE = "gromacs-native"
#: The prefix of the tool's own settings in the environment (pydantic-settings').
SETTINGS_PREFIX = "ORCH_"


@dataclass(frozen=True)
class NativeBuild:
    """A finished native build: where it is installed, and its record."""

    prefix: Path
    record: ImageRecord

    @property
    def kept(self) -> Path:
        return self.prefix / KEPT_DIR

    def environment(self) -> dict[str, str]:
        """The host's environment with the build's `gmx` first on PATH."""
        path = f"{self.prefix}/bin:{os.environ.get('PATH', '')}"
        return {**host_environment(), "PATH": path}


def host_environment() -> dict[str, str]:
    """This process's environment without the tool's own settings (`ORCH_*`, where the
    webhook's and the database's secrets live): what builds and runs on the host get,
    as a container gets only what its run names."""
    return {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIX)}


def builds_root(settings: Settings) -> Path:
    return settings.native_root


def find(settings: Settings, name: str) -> NativeBuild | None:
    """The finished build `name` (`stable-…`, `dev-…`, `dev-current`, or `gromacs:<name>`)."""
    bare = name.removeprefix("gromacs:")
    if not bare or "/" in bare or bare.startswith("."):
        return None
    prefix = builds_root(settings) / bare
    record_file = prefix.resolve() / RECORD_FILE
    if not record_file.is_file():
        return None
    record = read_model(
        record_file, ImageRecord, f"the record of native build {bare}",
        f"Remove {prefix} and build it again.",
    )  # fmt: skip
    return NativeBuild(prefix.resolve(), record)


def records(settings: Settings) -> list[ImageRecord]:
    """Every finished build in the native root (for `bench --dry-run`'s plan)."""
    root = builds_root(settings)
    names = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    found = (find(settings, name) for name in names if name != DEV_CURRENT)
    return [build.record for build in found if build is not None]


def host_run(
    build: NativeBuild | None, command: list[str], stderr: bool = True, timeout: float = 1800
) -> tuple[int, str]:
    """Run a command on this host (with `build`'s `gmx` on PATH): the native twin of a
    probe container."""
    env = build.environment() if build else host_environment()
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return done.returncode, done.stdout + (done.stderr if stderr else "")


def host_probe(build: NativeBuild | None = None) -> Probe:
    return lambda command: host_run(build, command)


def build_native(settings: Settings, flavor: Flavor, emit: Emit = ignore) -> ImageRecord:
    """Build (or reuse) the stable GROMACS build natively; returns its record.

    Dev builds need the LLVM under test installed on this host; until the native
    executor builds LLVM itself, the compiler option A/B (`device_flags`) is the dev loop
    on a host without an engine.
    """
    platform = active(settings)
    if flavor != "stable":
        raise UsageError(
            "A native dev build needs an LLVM installed on this host, which the native "
            "executor does not build yet. Compare compiler options instead: "
            "ORCH_DEVICE_FLAGS (or bench --flags) builds the stable compiler with them."
        )
    root = builds_root(settings)
    _writable(root)
    compiler = platform.build.stable_compiler(settings, host_probe())
    source = SourceSpec.from_setting(platform.build.gromacs_source(settings))
    if source.scheme != "file":
        raise UsageError(
            f"A native build reads GROMACS from a tarball on this host, not {source.url}: set "
            "ORCH_GROMACS__URL to its absolute path and ORCH_GROMACS__SHA256 to its sha256."
        )
    tarball = source.context_files()["gromacs.tar.gz"]
    assert isinstance(tarball, Path)
    build_name = platform.build.stable_build_name(settings, compiler) + flags_suffix(settings)
    prefix = root / build_name
    tag = gromacs_ref(build_name)
    ctx = context(
        settings, flavor=flavor, builder_image="host", builder_id=_host_id(compiler),
        compiler_image="host", compiler=compiler, source=source, build_name=build_name,
        prefix=str(prefix),
    )  # fmt: skip
    # the inputs: the script as it would run in a fixed work folder, and the compiler
    planned = render_script(TEMPLATE, _script_context(ctx, prefix, tarball, Path("/work")))
    key = hashlib.sha256(f"{planned}\0{ctx['cxx']}\0{compiler.version}".encode()).hexdigest()
    existing = find(settings, build_name)
    if existing is not None:
        if existing.record.inputs == key:
            emit(Message(f"up to date: {existing.prefix}, nothing to build"))
            return existing.record
        raise UserError(
            f"{prefix} holds a build of other inputs (another GROMACS source, compiler or "
            "flags under the same name). Move it away or remove it, or set ORCH_NATIVE_ROOT "
            "to another folder; builds are never overwritten."
        )
    if prefix.exists():  # a build that did not finish: no record
        emit(Caution(f"removing {prefix}: a build there did not finish"))
        shutil.rmtree(prefix)
    work = root / f".work-{build_name}-{os.getpid()}"
    script = render_script(TEMPLATE, _script_context(ctx, prefix, tarball, work))
    log = build_log_path(settings.results_dir, tag)
    emit(Message(f"building {prefix} natively with {platform.build.compiler_under_test(compiler)} "
                 f"(log: {log})"))  # fmt: skip
    started = time.monotonic()
    try:
        _run_script(script, work, log)
        build = NativeBuild(prefix, ImageRecord(tag=tag, id="", build=build_name))
        facts, problems = build_facts(
            host_probe(build), settings, flavor, compiler, str(prefix), kept=str(build.kept),
            sha_file="/dev/null",  # the tarball's sha256 was checked before the build
        )  # fmt: skip
        if problems:
            raise refused(flavor, compiler, settings, problems, f"{prefix} was removed.")
        record = new_record(
            settings, "gromacs", tag, _content_id(prefix), key, build=build_name,
            gromacs_source=source.url, gromacs_ref=source.ref, gromacs_commit=source.revision,
            gmx_version=facts.version_info.get("GROMACS version"),
            compiler=platform.build.recorded_compiler(facts, compiler),
            compiler_version=facts.compiler_version, cmake_flags=ctx["raw_cmake_flags"],
            gpu_arch=platform.build.gpu_target(settings), simd=settings.simd,
            native_prefix=str(prefix), **platform.build.record_values(settings),
        ).model_copy(update={"base_image": None})  # fmt: skip  # the host is the base
        codegen = _codegen(NativeBuild(prefix, record), emit)
        save_lockfile(
            settings.results_dir,
            Lockfile(
                record=record, template=TEMPLATE, context=ctx,
                dockerfile_sha256=hashlib.sha256(script.encode()).hexdigest(),
                dockerfile=script, parents={}, builder="host", packages=facts.packages,
                gmx_version_info=facts.version_info,
                build_seconds=round(time.monotonic() - started, 1),
                compile_cache=facts.compile_cache,
                codegen_functions=len(codegen.kernels) if codegen else None,
                codegen_seconds=codegen.probe_seconds if codegen else None,
            ),
        )  # fmt: skip
        if codegen is not None:
            collect.save(settings.results_dir, codegen, tag)
        write_atomic(prefix / RECORD_FILE, record.model_dump_json(indent=2) + "\n")
    except BaseException:
        shutil.rmtree(prefix, ignore_errors=True)  # nothing half-built is left
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    emit(Message(f"installed {prefix} in {time.monotonic() - started:.0f} s"))
    return record


def _script_context(
    ctx: dict[str, object], prefix: Path, tarball: Path, work: Path
) -> dict[str, object]:
    launchers = ctx["launchers"] if shutil.which("ccache") else []
    return {
        **ctx, "launchers": launchers, "work": str(work), "kept": str(prefix / KEPT_DIR),
        "tarball": str(tarball), "ccache": str(Path("~/.cache/gmxbench/ccache").expanduser()),
    }  # fmt: skip


def _run_script(script: str, work: Path, log: Path) -> None:
    """Run the build script in `work`, its output in `log`; a failure says the log's end."""
    work.mkdir(parents=True)
    (work / "build.sh").write_text(script)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        code = subprocess.run(
            ["bash", str(work / "build.sh")], cwd=work, env=host_environment(), stdout=out,
            stderr=subprocess.STDOUT, check=False,
        ).returncode  # fmt: skip
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise UserError(f"The native GROMACS build failed (exit {code}); the end of {log}:\n{tail}")


def _writable(root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".gmxbench-write-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError(
            f"The native executor installs builds in {root}, which cannot be written "
            f"({exc.strerror}). Set ORCH_NATIVE_ROOT to a folder you can write."
        ) from None


def _host_id(compiler: Compiler) -> str:
    """The compile cache's builder part natively: the compiler, not an image."""
    return "sha256:" + hashlib.sha256(compiler.model_dump_json().encode()).hexdigest()


def _content_id(prefix: Path) -> str:
    """A native build's id: the digest of its `gmx` and libraries, as an image's is of
    its layers."""
    digest = hashlib.sha256()
    for path in sorted([*prefix.glob("bin/gmx*"), *prefix.glob("lib*/libgromacs*")]):
        if path.is_file() and not path.is_symlink():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return "native:sha256:" + digest.hexdigest()


def codegen_of(build: NativeBuild) -> Codegen:
    """The build's codegen fingerprint: the probe run on this host."""
    return collect.probe_codegen(
        lambda command, stderr: host_run(build, command, stderr), build.record,
        str(build.prefix), str(build.kept), "native build",
    )  # fmt: skip


def _codegen(build: NativeBuild, emit: Emit) -> Codegen | None:
    """The new build's codegen fingerprint; a failed probe is said, not fatal."""
    try:
        codegen = codegen_of(build)
    except UserError as exc:
        emit(Caution(f"no codegen fingerprint for {build.record.tag}: {exc.message}"))
        return None
    emit(Message(f"codegen fingerprint: {len(codegen.kernels)} functions "
                 f"({codegen.probe_seconds:.1f} s)"))  # fmt: skip
    return codegen


def point_dev_current(settings: Settings, build_name: str) -> None:
    """`<root>/dev-current` → the build, replaced in one step (scripts dereference it)."""
    link = builds_root(settings) / DEV_CURRENT
    new = link.with_name(f".{DEV_CURRENT}-{os.getpid()}")
    new.unlink(missing_ok=True)
    new.symlink_to(build_name)
    new.replace(link)
