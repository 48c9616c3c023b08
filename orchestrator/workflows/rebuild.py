"""Historical rebuilds: build a GROMACS image again from its lockfile, then compare.

The lockfile holds the exact Dockerfile and pins every `FROM` image to the id it had,
so the rebuild compiles the same source (sha256-checked) with the same compiler and
flags at the same paths. The compile stage and all that follows run again and every
unit is compiled again (the compile cache is bypassed): the point is to show that the build is
reproducible, file by file, not to reuse the old layers or objects.

The compile stage is made to run again by a fresh value of its `GMXBENCH_NO_COMPILE_CACHE`
argument, not by `--no-cache`: BuildKit's `--no-cache` also swaps every cache mount for an
empty one, which would erase the compile cache of every later stable and dev build.

A rebuild never mounts the shared compile cache either: a lockfile may have come in
someone's archive, and its Dockerfile could write anything there. Every cache mount gets
an id of its own for this rebuild (the compile cache is off in a rebuild anyway).
"""

from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path
from uuid import uuid4

from pydantic import BaseModel, Field
from tabulate import tabulate

from orchestrator import engine
from orchestrator.core import interrupts
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.core.files import write_atomic
from orchestrator.core.settings import Settings
from orchestrator.engine import Client
from orchestrator.images.catalog import label_and_tag, now_iso, probe
from orchestrator.images.gromacs import (
    NO_COMPILE_CACHE,
    SourceSpec,
    ensure_lockfile,
    gromacs_ref,
    record_of,
)
from orchestrator.images.gromacs_check import parse_version_info
from orchestrator.images.provenance import (
    LOCK_LABEL,
    ImageRecord,
    Lockfile,
    label,
    load_lockfile,
    parse_lockfile,
    save_lockfile,
)
from orchestrator.images.render import render, uses_buildkit
from orchestrator.images.toolchain_import import cannot_rebuild
from orchestrator.store.layout import (
    IMAGES_DIR,
    build_log_path,
    lockfile_path,
    rebuild_report_path,
)

REBUILD_REPO = "gmxbench-rebuild"
#: Tags that pin a rebuild's parents to their recorded ids while it builds.
PINNED_REPO = "gmxbench-pinned"
SHOWN = 20

#: sha256 of every regular file under the prefix, and the target of every symlink.
MANIFEST_SCRIPT = (
    "cd {prefix} && find . -type f -exec sha256sum {{}} + "
    "&& find . -type l -printf '%l  %p\\n' | sed 's/^/link:/'"
)


class FileDiff(BaseModel):
    path: str
    original: str | None
    rebuilt: str | None


class RebuildReport(BaseModel):
    """What `rebuild` found; saved next to the lockfile as `<tag>.rebuild.json`."""

    tag: str
    lockfile: str
    original_id: str | None
    rebuilt_id: str
    rebuilt_tag: str
    created: str
    prefix: str
    files_compared: int = 0
    identical: bool | None = None
    differing: list[FileDiff] = Field(default_factory=list)
    version_mismatches: dict[str, list[str | None]] = Field(default_factory=dict)


def find_lockfile(client: Client, settings: Settings, target: str) -> Lockfile:
    """The lockfile of `target`: a lockfile path, or an image tag (results dir, then label)."""
    path = Path(target)
    if target.endswith(".json") or path.is_file():
        if not path.is_file():
            raise UserError(f"Lockfile {target} does not exist. Pass an image tag or a lockfile.")
        hint = f"Lockfiles live in {settings.results_dir / IMAGES_DIR}."
        return parse_lockfile(path.read_text(), target, hint=hint)
    tag = gromacs_ref(target)
    image = engine.image(client, tag)
    if image is not None and LOCK_LABEL in image.labels:
        record = record_of(image)  # `dev-current` → the build's own tag
        ensure_lockfile(settings.results_dir, image, record)
        tag = record.tag
    saved = lockfile_path(settings.results_dir, tag)
    if saved.is_file():
        return load_lockfile(saved)
    if image is not None and label("imported_from") in image.labels:  # a toolchain image
        raise UserError(cannot_rebuild(ImageRecord.from_labels(tag, image.id, image.labels)))
    raise UserError(
        f"No lockfile for {tag}: it is neither in {saved.parent} nor on an image of that "
        f"name. List what can be rebuilt with `nox -s images`, or pass a lockfile path."
    )


def pinned(image_id: str) -> str:
    """A tag for a parent's exact id: BuildKit reads `FROM sha256:…` as a registry name."""
    return f"{PINNED_REPO}:{image_id.removeprefix('sha256:')[:12]}"


def dockerfile_of(lock: Lockfile, client: Client) -> str:
    """The exact Dockerfile that was built, with each parent pinned to its recorded id
    (through a `pinned` tag that `rebuild` puts on that id for the build)."""
    text = lock.dockerfile
    if text is None:
        try:
            text = render(lock.template, lock.context)
        except UserError:
            text = ""  # the template now needs values the old context lacks: changed
        if hashlib.sha256(text.encode()).hexdigest() != lock.dockerfile_sha256:
            raise UserError(
                f"The lockfile of {lock.record.tag} predates stored Dockerfiles and the "
                f"template {lock.template} has changed since, so the original Dockerfile "
                "cannot be recovered. Check out the orchestrator version that built it."
            )
    for tag, image_id in lock.parents.items():
        if engine.image(client, image_id) is None:
            raise UserError(
                f"The rebuild of {lock.record.tag} needs its parent image {tag} exactly as it "
                f"was ({image_id[:19]}), and this engine does not have it. Load it with "
                "`nox -s share -- load <archive>` of this image (archives carry their "
                "parents), or rebuild on the machine that has it."
            )
        text = re.sub(
            rf"^FROM {re.escape(tag)}(\s|$)", rf"FROM {pinned(image_id)}\1", text, flags=re.M
        )
    return text


_MOUNT = re.compile(r"--mount=(\S+)")


def private_mounts(dockerfile: str, private: str) -> str:
    """`dockerfile` with every cache mount's id replaced by `private`; a mount whose options
    this cannot read for certain (a variable, a quote it cannot parse) is refused."""

    def rewrite(match: re.Match[str]) -> str:
        spec = match.group(1)
        try:
            fields = next(csv.reader([spec], strict=True))
        except (csv.Error, StopIteration):
            fields = []
        options = dict(f.partition("=")[::2] for f in fields)
        if not fields or "$" in spec or any(not k or k != k.strip().lower() for k in options):
            raise UserError(
                f"The Dockerfile of this lockfile mounts {spec[:120]!r}, which rebuild cannot "
                "check; it never lets a rebuild reach the shared compile cache. Rebuild only "
                "lockfiles of images this tool built."
            )
        if options.get("type") != "cache":
            return match.group(0)
        kept = [f for f in fields if f.partition("=")[0] != "id"]
        return "--mount=" + ",".join([*kept, f"id={private}"])

    return _MOUNT.sub(rewrite, dockerfile)


def installed_files(client: Client, image: str, prefix: str) -> dict[str, str]:
    """`{path: sha256 or link:target}` for everything installed under `prefix`."""
    script = MANIFEST_SCRIPT.format(prefix=prefix)
    code, out = probe(client, image, ["sh", "-c", script], timeout=600)
    if code != 0:
        raise UserError(f"Could not list {prefix} in {image[:19]}: {out.strip()[:300]}")
    files = {}
    for line in out.splitlines():
        digest, _, name = line.partition("  ")
        if name:
            files[name.removeprefix("./")] = digest
    return files


def diff_files(original: dict[str, str], rebuilt: dict[str, str]) -> list[FileDiff]:
    return [
        FileDiff(path=path, original=original.get(path), rebuilt=rebuilt.get(path))
        for path in sorted(original.keys() | rebuilt.keys())
        if original.get(path) != rebuilt.get(path)
    ]


def rebuild(client: Client, settings: Settings, target: str, emit: Emit = ignore) -> RebuildReport:
    """Rebuild from the lockfile; compare with the original when it still exists.

    When the original is gone, the rebuild takes its place (same tag, same labels,
    new id) so historical results can be re-run.
    """
    lock = find_lockfile(client, settings, target)
    if lock.record.imported_from:
        raise UserError(cannot_rebuild(lock.record))
    record, prefix = lock.record, str(lock.context["prefix"])
    dockerfile = private_mounts(dockerfile_of(lock, client), f"gmxbench-rebuild-{uuid4()}")
    original = engine.image(client, record.id) if record.id else None
    source = SourceSpec.model_validate(lock.context["source"])
    emit(Message(f"rebuilding {record.tag} from its lockfile, every step and every compile again"))
    keeps_cache = f"ARG {NO_COMPILE_CACHE}=" in dockerfile  # older templates: --no-cache
    pins = [pinned(image_id) for image_id in lock.parents.values()]
    for image_id, pin in zip(lock.parents.values(), pins, strict=True):
        engine.tag(client, image_id, pin)
    try:
        rebuilt_id = engine.build(
            client, dockerfile, what=f"rebuild of {record.tag}", nocache=not keeps_cache,
            files=source.context_files(), build_args={NO_COMPILE_CACHE: f"rebuild-{uuid4()}"},
            buildkit=uses_buildkit(dockerfile),
            log=build_log_path(settings.results_dir, record.tag, "rebuild"), emit=emit,
        )  # fmt: skip
    finally:
        for image_id, pin in zip(lock.parents.values(), pins, strict=True):
            parent = engine.image(client, image_id)
            if parent is not None and len(parent.tags) > 1:  # never its last name
                engine.remove_image(client, pin)
    _, out = probe(client, rebuilt_id, ["gmx", "--version"])
    version = parse_version_info(out)
    mismatches = {
        key: [wanted, version.get(key)]
        for key, wanted in lock.gmx_version_info.items()
        if version.get(key) != wanted
    }
    report = RebuildReport(
        tag=record.tag,
        lockfile=str(lockfile_path(settings.results_dir, record.tag)),
        original_id=original.id if original is not None else None,
        rebuilt_id=rebuilt_id,
        rebuilt_tag=record.tag,
        created=now_iso(),
        prefix=prefix,
        version_mismatches=mismatches,
    )
    if original is not None:
        report.rebuilt_tag = f"{REBUILD_REPO}:{record.build}"
        engine.tag(client, rebuilt_id, report.rebuilt_tag)
        before = installed_files(client, original.id, prefix)
        after = installed_files(client, rebuilt_id, prefix)
        report.files_compared = len(before.keys() | after.keys())
        report.differing = diff_files(before, after)
        report.identical = not report.differing and not mismatches
    elif mismatches:
        raise UserError(
            f"The rebuild of {record.tag} does not report what its lockfile recorded "
            f"({', '.join(mismatches)} differ in `gmx --version`); nothing was tagged."
        )
    else:
        restored = record.model_copy(update={"created": report.created})
        with interrupts.deferred():  # tagged means its lockfile is on disk
            restored.id = label_and_tag(
                client, rebuilt_id, restored, [record.tag], emit, extra_labels=lock.embedded()
            )
            save_lockfile(settings.results_dir, lock.model_copy(update={"record": restored}))
        report.rebuilt_id = restored.id
    write_atomic(
        rebuild_report_path(settings.results_dir, record.tag), report.model_dump_json(indent=2)
    )
    return report


def summary(report: RebuildReport) -> str:
    """The lines `rebuild` prints."""
    if report.original_id is None:
        return (
            f"{report.tag} was not in the engine: rebuilt it from its lockfile as "
            f"{report.rebuilt_id[:19]} (no original to compare with)."
        )
    lines = []
    if report.identical:
        lines.append(
            f"identical: all {report.files_compared} files under {report.prefix} of the "
            f"rebuild ({report.rebuilt_tag}) match {report.tag} (sha256)."
        )
    else:
        lines.append(
            f"NOT identical: {len(report.differing)} of {report.files_compared} files under "
            f"{report.prefix} differ between {report.tag} and its rebuild {report.rebuilt_tag}:"
        )
        rows = [
            [diff.path, _short(diff.original), _short(diff.rebuilt)]
            for diff in report.differing[:SHOWN]
        ]
        lines.append(tabulate(rows, headers=["file", "original", "rebuild"]))
        if len(report.differing) > SHOWN:
            lines.append(f"… and {len(report.differing) - SHOWN} more (see the .rebuild.json)")
        for key, (wanted, got) in report.version_mismatches.items():
            lines.append(f"gmx --version {key}: {wanted!r} → {got!r}")
    return "\n".join(lines)


def _short(digest: str | None) -> str:
    if digest is None:
        return "missing"
    return digest if digest.startswith("link:") else digest[:12]
