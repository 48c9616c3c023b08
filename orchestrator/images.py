"""Build the project's images: builder base, toolchains, GROMACS stable and dev.

Every image is keyed by its inputs (rendered Dockerfile + parent image ids): an image
whose inputs already exist is reused as it is, so a rebuild with nothing changed takes
seconds and yields the same id. GROMACS images are checked (`gmx --version`) before
they get labels and a tag; a failed check tags nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker

from orchestrator import LABEL_PREFIX, engine
from orchestrator.baseimage import ensure_base
from orchestrator.buildspec import (
    Compiler,
    Kind,
    SourceSpec,
    dev_build_name,
    gromacs_context,
    stable_build_name,
)
from orchestrator.engine import Log, stderr_log
from orchestrator.errors import UsageError, UserError
from orchestrator.provenance import (
    ImageRecord,
    Lockfile,
    lockfile_path,
    parse_lockfile,
    save_lockfile,
)
from orchestrator.render import render, uses_buildkit
from orchestrator.settings import Settings

GROMACS_REPO = "gromacs"
DEV_CURRENT = f"{GROMACS_REPO}:dev-current"
#: Fixed build date (`__DATE__`, GROMACS build info): identical rebuilds need one.
SOURCE_DATE_EPOCH = 1704067200
LOCK_LABEL = LABEL_PREFIX + "lockfile"
LAYERS_LABEL = LABEL_PREFIX + "layers"


def gromacs_ref(name: str) -> str:
    """A bare build name means `gromacs:<build>`; anything with a tag or repo is as given."""
    return name if ":" in name or "/" in name else f"{GROMACS_REPO}:{name}"


def inputs_key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def layers_digest(image: Any) -> str:
    """One digest of an image's filesystem layers (their diff ids, in order)."""
    layers = image.attrs.get("RootFS", {}).get("Layers", [])
    return "sha256:" + hashlib.sha256("\n".join(layers).encode()).hexdigest()


def is_labeled_for_itself(image: Any) -> bool:
    """True for the image we labeled, false for anything built FROM it.

    Children inherit every label (the raw GROMACS build carries its toolchain's, a
    user's `FROM gromacs:…` carries the lockfile), so the labels alone cannot say whose
    they are; the layers digest stamped with them can: a child adds layers.
    """
    labels = image.labels
    if LAYERS_LABEL not in labels and labels.get(LABEL_PREFIX + "kind") == "base":
        return len(image.attrs.get("RootFS", {}).get("Layers", [])) == 1  # a `docker import`
    return bool(labels.get(LAYERS_LABEL) == layers_digest(image))


def find_by_inputs(client: docker.DockerClient, key: str, kind: str) -> Any | None:
    """A finished image of this kind made from these inputs, tagged ones first.

    A GROMACS image counts only once verified, i.e. when it carries its lockfile.
    """
    found = [
        image
        for image in client.images.list(
            filters={"label": [f"{LABEL_PREFIX}inputs={key}", f"{LABEL_PREFIX}kind={kind}"]}
        )
        if is_labeled_for_itself(image) and (kind != "gromacs" or LOCK_LABEL in image.labels)
    ]
    found.sort(key=lambda image: (bool(image.tags), image.attrs.get("Created", "")), reverse=True)
    return found[0] if found else None


def base_digest(image: Any) -> str:
    """Registry digest when the base came from a registry, else the local image id."""
    digests = image.attrs.get("RepoDigests") or []
    return str(digests[0].split("@", 1)[1]) if digests else str(image.id)


def label_and_tag(
    client: docker.DockerClient,
    image_id: str,
    record: ImageRecord,
    tags: list[str],
    log: Log,
    extra_labels: dict[str, str] | None = None,
) -> str:
    """Stamp the record's labels on a verified image (a one-line build) and tag it.

    A label-only build keeps the layers, so the layers digest stamped here marks the
    result as the image these labels describe (`is_labeled_for_itself`).
    """
    layers = layers_digest(client.images.get(image_id))
    labels = {**record.labels(), **(extra_labels or {}), LAYERS_LABEL: layers}
    final_id = engine.build(
        client, f"FROM {image_id}\n", what=f"labels of {tags[0]}", labels=labels, log=log
    )
    image = client.images.get(final_id)
    for tag in tags:
        repo, _, version = tag.rpartition(":")
        image.tag(repo, tag=version)
    return final_id


def refuse_overwrite(client: docker.DockerClient, tag: str, key: str) -> None:
    existing = engine.image_or_none(client, tag)
    if existing is not None and existing.labels.get(LABEL_PREFIX + "inputs") != key:
        raise UserError(
            f"{tag} already exists and was built from other inputs; tags are never overwritten. "
            f"Remove it (`docker rmi {tag}`) to rebuild it, or keep it and change nothing."
        )


def ensure_builder(client: docker.DockerClient, settings: Settings, log: Log = stderr_log) -> str:
    """The platform's builder base (compilers and build deps); returns its tag."""
    base = ensure_base(client, settings, log)
    platform = settings.active_platform
    template = f"{platform}-base"
    dockerfile = render(template, builder_context(settings))
    key = inputs_key(template, dockerfile, base.id)
    tag = f"gmxbench-builder:{platform}-{key[:12]}"
    existing = find_by_inputs(client, key, "builder")
    if existing is not None and tag not in existing.tags:
        existing.tag(*tag.split(":"))
    if existing is None:
        log(f"building the {platform} builder base from {settings.base}")
        image_id = engine.build(
            client, dockerfile, what=tag, buildkit=uses_buildkit(dockerfile), log=log
        )
        record = ImageRecord(
            tag=tag,
            id=image_id,
            kind="builder",
            platform=platform,
            base_image=settings.base,
            base_digest=base_digest(base),
            rocm_version=settings.rocm_version if platform == "rocm" else None,
            inputs=key,
            created=now_iso(),
        )
        label_and_tag(client, image_id, record, [tag], log)
    return tag


def builder_context(settings: Settings) -> dict[str, Any]:
    return {
        "base_image": settings.base,
        "rocm_version": settings.rocm_version,
        "rocm_path": settings.rocm_path,
    }


def default_compiler(client: docker.DockerClient, settings: Settings, builder: str) -> Compiler:
    """The stable compiler: ROCm's amdclang++ for HIP, the distribution's c++ on CPU."""
    if settings.active_platform == "rocm":
        hip = f"{settings.rocm_path}/bin/amdclang++"
        return Compiler(name=f"rocm{settings.rocm_version}", cc="cc", cxx="c++", hip=hip)
    code, out = engine.run_capture(
        client, builder, ["sh", "-c", "c++ -dumpversion && c++ --version | head -n1"]
    )
    if code != 0:
        raise UserError(f"The builder base {builder} has no working c++: {out.strip()[:300]}")
    major, version = out.splitlines()[0].split(".")[0], out.splitlines()[1]
    family = "clang" if "clang" in version.lower() else "gcc"
    return Compiler(name=f"{family}{major}", cc="cc", cxx="c++", version=version)


def build_gromacs(
    client: docker.DockerClient,
    settings: Settings,
    kind: Kind,
    *,
    toolchain: str | None = None,
    log: Log = stderr_log,
) -> ImageRecord:
    """Build (or reuse) a stable or dev GROMACS image; returns its record."""
    platform = settings.active_platform
    builder = ensure_builder(client, settings, log)
    builder_image = client.images.get(builder)
    if kind == "dev":
        if toolchain is None:
            raise UsageError(
                "A dev build needs a compiler: pass --toolchain <image> or --llvm <commit>."
            )
        from orchestrator.toolchains import toolchain_compiler

        compiler, compiler_id = toolchain_compiler(client, toolchain)
        compiler_image = toolchain
    else:
        compiler, compiler_id, compiler_image = (
            default_compiler(client, settings, builder),
            builder_image.id,
            builder,
        )
    source = SourceSpec.from_setting(settings.gromacs_source)
    template = f"gromacs-{kind}-{platform}"
    plan_name = "dev-<stamp>" if kind == "dev" else stable_build_name(settings, compiler)

    def context_for(name: str) -> dict[str, Any]:
        return gromacs_context(
            settings,
            kind=kind,
            builder_image=builder,
            compiler_image=compiler_image,
            compiler=compiler,
            source=source,
            build_name=name,
            source_date_epoch=SOURCE_DATE_EPOCH,
        )

    key = inputs_key(
        template, render(template, context_for(plan_name)), builder_image.id, compiler_id
    )
    existing = find_by_inputs(client, key, "gromacs")
    if existing is not None:
        record = record_of(existing)
        if record.tag not in existing.tags:  # e.g. the tag was removed: put it back
            existing.tag(*record.tag.split(":"))
        log(f"up to date: {record.tag} ({existing.id[:19]}), nothing to build")
        ensure_lockfile(settings.results, existing, record)
        if kind == "dev":
            existing.tag(*DEV_CURRENT.split(":"))
        return record

    name = plan_name if kind == "stable" else dev_build_name(compiler)
    tag = f"{GROMACS_REPO}:{name}"
    refuse_overwrite(client, tag, key)
    context = context_for(name)
    dockerfile = render(template, context)
    log(f"building {tag} with {compiler.cxx if platform == 'cpu' else compiler.hip}")
    image_id = engine.build(
        client, dockerfile, what=tag, buildkit=uses_buildkit(dockerfile), log=log
    )
    info = verify_build(client, image_id, settings, kind, compiler, context["prefix"])
    source.sha256 = info.pop("_source_sha256", None) or source.sha256
    context["source"]["sha256"] = source.sha256
    record = ImageRecord(
        tag=tag,
        id="",
        platform=platform,
        build=name,
        base_image=settings.base,
        base_digest=builder_image.labels.get(LABEL_PREFIX + "base_digest"),
        rocm_version=settings.rocm_version if platform == "rocm" else None,
        gromacs_source=source.url,
        gromacs_ref=source.ref,
        gromacs_commit=source.revision,
        gmx_version=info.get("GROMACS version"),
        compiler=compiler.hip if platform == "rocm" else info.get("_compiler_path", compiler.cxx),
        compiler_version=info.pop("_compiler_version", compiler.version),
        toolchain=compiler.toolchain_image,
        llvm_commit=compiler.llvm_commit,
        llvm_dirty=compiler.llvm_dirty,
        cmake_flags=context["raw_cmake_flags"],
        gpu_arch=settings.target_arch if platform == "rocm" else None,
        simd=settings.simd,
        inputs=key,
        created=now_iso(),
    )
    packages = _parse_packages(info.pop("_packages", ""))
    info.pop("_compiler_path", None)
    tags = [tag, DEV_CURRENT] if kind == "dev" else [tag]
    lock = Lockfile(
        record=record,
        template=template,
        context=context,
        dockerfile_sha256=hashlib.sha256(dockerfile.encode()).hexdigest(),
        dockerfile=dockerfile,
        parents={builder: str(builder_image.id), compiler_image: compiler_id},
        builder=builder,
        packages=packages,
        gmx_version_info=info,
    )
    # The lockfile travels inside the image too (without the id, which it cannot know).
    embedded = {LOCK_LABEL: lock.model_dump_json(exclude={"record": {"id"}})}
    record.id = label_and_tag(client, image_id, record, tags, log, extra_labels=embedded)
    path = save_lockfile(settings.results, lock)
    log(f"tagged {', '.join(tags)}; lockfile {path}")
    return record


def ensure_lockfile(results: Path, image: Any, record: ImageRecord) -> None:
    """Write the image's lockfile into this results dir from its label, if missing here."""
    raw = image.labels.get(LOCK_LABEL)
    if raw is None or lockfile_path(results, record.tag).exists():
        return
    save_lockfile(results, parse_lockfile(raw, f"the label of {record.tag}", str(image.id)))


def record_of(image: Any) -> ImageRecord:
    """The record of a GROMACS image; its tag follows from the build label."""
    tag = f"{GROMACS_REPO}:{image.labels.get(LABEL_PREFIX + 'build')}"
    return ImageRecord.from_labels(tag, image.id, image.labels)


def _parse_packages(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {name: version for name, version in pairs}


VERIFY_SCRIPT = r"""gmx --version 2>&1
echo '@@compiler'; {compiler} --version 2>&1 | head -n1
echo '@@path'; readlink -f "$(command -v {compiler})" 2>/dev/null || echo {compiler}
echo '@@reported'
readlink -f "$(gmx --version 2>/dev/null | sed -n 's/^C++ compiler: *\([^ ]*\).*/\1/p')"
echo '@@sha'; cat /src/gromacs.tar.gz.sha256 2>/dev/null
echo '@@hip'; grep -h '^CMAKE_HIP_COMPILER:' {prefix}/CMakeCache.txt 2>/dev/null
echo '@@packages'; dpkg-query -W -f='${{Package}}=${{Version}}\n' 2>/dev/null
"""


def parse_version_info(text: str) -> dict[str, str]:
    """`gmx --version`'s `Key: value` lines as a dict."""
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def verify_build(
    client: docker.DockerClient,
    image_id: str,
    settings: Settings,
    kind: Kind,
    compiler: Compiler,
    prefix: str,
) -> dict[str, str]:
    """Check `gmx --version` shows what was asked; raise (tagging nothing) when it does not."""
    tool = compiler.hip if settings.active_platform == "rocm" else compiler.cxx
    script = VERIFY_SCRIPT.format(compiler=tool, prefix=prefix)
    _, out = engine.run_capture(client, image_id, ["sh", "-c", script])
    sections = dict(
        [*part.split("\n", 1), ""][:2] for part in ("@@version\n" + out).split("@@")[1:]
    )
    info = parse_version_info(sections.get("version", ""))
    info["_compiler_version"] = sections.get("compiler", "").strip()
    info["_compiler_path"] = sections.get("path", "").strip()
    info["_source_sha256"] = sections.get("sha", "").strip()
    info["_packages"] = sections.get("packages", "")
    problems = []
    if "GROMACS version" not in info:
        problems.append(f"`gmx --version` did not run: {out.strip()[:300]}")
    else:
        wanted_gpu = "HIP" if settings.active_platform == "rocm" else "disabled"
        checks: list[tuple[str, Callable[[str], bool], str]] = [
            ("Precision", lambda v: v.startswith("mixed"), "mixed (GMX_DOUBLE=OFF)"),
            ("SIMD instructions", lambda v: v == settings.simd, settings.simd),
            ("OpenMP support", lambda v: v.startswith("enabled"), "enabled"),
            ("GPU support", lambda v: v.startswith(wanted_gpu), wanted_gpu),
        ]
        for label, ok, wanted in checks:
            if not ok(info.get(label, "")):
                problems.append(f"{label} is {info.get(label, 'missing')!r}, asked for {wanted}")
        if settings.active_platform == "cpu":
            built_with = sections.get("reported", "").strip()
            if built_with != info["_compiler_path"]:
                problems.append(
                    f"C++ compiler is {info.get('C++ compiler')!r}, asked for {compiler.cxx}"
                )
        else:
            hip = sections.get("hip", "").strip().split("=", 1)[-1]
            if hip != compiler.hip:
                problems.append(f"CMAKE_HIP_COMPILER is {hip!r}, asked for {compiler.hip}")
    if problems:
        hint = ""
        if any(p.startswith("OpenMP") for p in problems) and "clang" in (tool or ""):
            hint = " A clang build needs libomp-<N>-dev in the toolchain image for OpenMP."
        client.images.remove(image_id, noprune=False)
        raise UserError(
            f"The {kind} GROMACS build finished but is not what was asked: "
            + "; ".join(problems)
            + f". Nothing was tagged.{hint}"
        )
    return info


def list_images(
    client: docker.DockerClient, kinds: tuple[str, ...] = ("gromacs",)
) -> list[ImageRecord]:
    """Records of the project's tagged images, newest first."""
    records = []
    for image in engine.project_images(client):
        if image.labels.get(LABEL_PREFIX + "kind") not in kinds or not is_labeled_for_itself(image):
            continue
        for tag in image.tags:
            records.append(ImageRecord.from_labels(tag, image.id, image.labels))
    return sorted(records, key=lambda r: (r.created or "", r.tag), reverse=True)


def records_json(records: list[ImageRecord]) -> str:
    keys = [
        "tag",
        "id",
        "platform",
        "build",
        "base_image",
        "base_digest",
        "gromacs_source",
        "gromacs_commit",
        "compiler",
        "compiler_version",
        "llvm_commit",
        "cmake_flags",
        "gpu_arch",
        "simd",
        "created",
    ]
    return json.dumps([r.model_dump(include=set(keys)) for r in records], indent=2)
