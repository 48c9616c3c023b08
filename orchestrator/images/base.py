"""The base image block: the `FROM` of every builder, present, pulled, or made here.

Air-gapped sites (and CI here) reach a package mirror but no image registry; for them
`make_base` debootstraps a Debian/Ubuntu tree and `docker import`s it. Each made base
has a lockfile (`BaseLock`): the suite, the mirror, the date of the suite's Release file
(the snapshot: `snapshot.debian.org/archive/debian/<that time>/` serves it later) and
every package version in the tree. `make_base(..., lock=...)` bootstraps again from the
lockfile and tags the result only when every package version is the same.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections import deque
from email.utils import parsedate_to_datetime
from pathlib import Path

from pydantic import BaseModel

from orchestrator import engine
from orchestrator.core.errors import UserError
from orchestrator.core.events import BuildEnded, BuildOutput, BuildStarted, Emit, Message, ignore
from orchestrator.core.files import read_model, write_atomic
from orchestrator.core.settings import Settings
from orchestrator.engine import Client, Image
from orchestrator.images.catalog import now_iso
from orchestrator.images.ensure import Block, Stamp, ensure_image
from orchestrator.images.provenance import KIND_LABEL, label
from orchestrator.platforms import active
from orchestrator.platforms.base import DEBOOTSTRAP_REPO
from orchestrator.store.layout import build_log_path, lockfile_path


class BaseLock(BaseModel):
    """What a debootstrapped base was made from, to make it again identically."""

    tag: str
    id: str
    suite: str
    mirror: str
    release_date: str
    packages: dict[str, str]
    created: str

    @property
    def snapshot_mirror(self) -> str:
        """The snapshot.debian.org mirror that serves this Release for ever."""
        stamp = parsedate_to_datetime(self.release_date).strftime("%Y%m%dT%H%M%SZ")
        return f"https://snapshot.debian.org/archive/debian/{stamp}/"


def base_tag(suite: str) -> str:
    return f"{DEBOOTSTRAP_REPO}:{suite}"


def load_base_lock(path: Path) -> BaseLock:
    fix = "Pass the .lock.json that `python -m orchestrator base` wrote under results/images/."
    return read_model(path, BaseLock, "a base image lockfile", fix)


def make_base(
    client: Client,
    settings: Settings,
    *,
    suite: str = "bookworm",
    tag: str | None = None,
    lock: BaseLock | None = None,
    emit: Emit = ignore,
) -> Image:
    """Create `gmxbench-base/debian:<suite>` from `settings.debian_mirror`; return the image.

    With `lock`, bootstrap the lockfile's suite again (from its mirror, unless
    ORCH_DEBIAN_MIRROR names another, such as its snapshot) and refuse, tagging nothing,
    when any package version differs from the lockfile's.
    """
    if lock is not None:
        suite, tag = lock.suite, tag or lock.tag
    tag = tag or base_tag(suite)
    mirror = settings.debian_mirror
    if lock is not None and "debian_mirror" not in settings.model_fields_set:
        mirror = lock.mirror
    if shutil.which("debootstrap") is None:
        raise UserError(
            "Making a base image needs debootstrap, which is not installed. "
            "Install it with `apt-get install -y debootstrap` (run as root), then retry."
        )
    work = settings.cache_dir / "debootstrap"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{suite}-", dir=work) as tmp:
        root = Path(tmp, "root")
        emit(Message(f"debootstrap --variant=minbase {suite} from {mirror} (about a minute)"))
        log = build_log_path(settings.results_dir, tag, "debootstrap")
        command = ["debootstrap", "--variant=minbase", suite, str(root), mirror]
        code, tail = _logged(command, f"{tag} (debootstrap)", log, emit)
        if code != 0:
            shown = "\n".join("    " + line for line in tail)
            raise UserError(
                f"debootstrap of {suite} from {mirror} failed (exit "
                f"{code}). Check the mirror (ORCH_DEBIAN_MIRROR) and the suite name. "
                f"Its last lines:\n{shown}\nThe whole log: {log}"
            )
        released, packages = _release_date(root), _packages(root)
        if lock is not None:
            refuse_other_packages(lock, released, packages, mirror)
        # A mirror's copy of an unstable suite can be past its Release file's Valid-Until
        # (seen here for sid); the label below records which Release the tree came from.
        (root / "etc/apt/apt.conf.d/99gmxbench-release-date").write_text(
            'Acquire::Check-Valid-Until "false";\n'
        )
        tarball = Path(tmp, "root.tar")
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        changes = [
            f"LABEL {KIND_LABEL}=base",
            f'LABEL {label("mirror")}="{mirror}"',
            f"LABEL {label('suite')}={suite}",
            f'LABEL {label("suite_date")}="{released}"',
            f"LABEL org.opencontainers.image.created={now_iso()}",
            'CMD ["/bin/bash"]',
        ]
        image = engine.import_tarball(client, tarball, tag, changes)
    if image is None:
        raise UserError(f"docker import did not produce {tag}; see the engine's log.")
    made = BaseLock(
        tag=tag, id=image.id, suite=suite, mirror=mirror, release_date=released,
        packages=packages, created=now_iso(),
    )  # fmt: skip
    path = write_atomic(lockfile_path(settings.results_dir, tag), made.model_dump_json(indent=2))
    emit(Message(f"made base image {tag} ({image.id[:19]}), {len(packages)} packages; {path}"))
    return image


def _logged(command: list[str], what: str, log: Path, emit: Emit) -> tuple[int, list[str]]:
    """Run a host command as a build: every line of its output to `log` and to `emit`;
    its exit code and its last 20 lines."""
    started, tail = time.monotonic(), deque[str](maxlen=20)
    log.parent.mkdir(parents=True, exist_ok=True)
    emit(BuildStarted(f"running {what}", what=what, log=log))
    with log.open("w", encoding="utf-8", buffering=1) as sink:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                text = raw.rstrip()
                sink.write(text + "\n")
                tail.append(text)
                emit(BuildOutput(text))
            code = proc.wait()
        finally:
            if proc.poll() is None:  # interrupted: debootstrap stops with us
                proc.terminate()
                proc.wait()
    seconds = time.monotonic() - started
    done = f"{what}: done in {seconds:.1f} s" if code == 0 else f"{what} failed"
    emit(BuildEnded(done, what=what, log=log, ok=code == 0, seconds=seconds))
    return code, list(tail)


def refuse_other_packages(
    lock: BaseLock, released: str, packages: dict[str, str], mirror: str
) -> None:
    """Refuse a rebuild whose packages are not the lockfile's, naming each difference."""
    differ = sorted(
        f"{name} {lock.packages.get(name, '-')} → {packages.get(name, '-')}"
        for name in lock.packages.keys() | packages.keys()
        if lock.packages.get(name) != packages.get(name)
    )
    if differ:
        more = f" and {len(differ) - 10} more" if len(differ) > 10 else ""
        shown = "; ".join(differ[:10]) + more
        raise UserError(
            f"The {lock.suite} tree bootstrapped from {mirror} (Release of {released}) is not "
            f"the one {lock.tag} was made from (Release of {lock.release_date}): {shown}. "
            f"Nothing was tagged. Bootstrap from the snapshot of that Release: "
            f"ORCH_DEBIAN_MIRROR={lock.snapshot_mirror}"
        )


def _release_date(root: Path) -> str:
    """The `Date:` of the suite's Release file the tree was bootstrapped from."""
    for release in sorted((root / "var/lib/apt/lists").glob("*_Release")):
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("Date:"):
                return line.partition(":")[2].strip()
    return "unknown"


def _packages(root: Path) -> dict[str, str]:
    """Every installed package of the tree and its version (the host's dpkg-query reads it)."""
    proc = subprocess.run(
        ["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", "-f=${Package}=${Version}\n"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise UserError(f"dpkg-query could not list the bootstrapped tree: {proc.stderr[:300]}")
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


def ensure_base(client: Client, settings: Settings, emit: Emit = ignore) -> Image:
    """The configured base image: present, pulled, or (the local default) made here."""
    ref = active(settings).build.base_image(settings)

    def build() -> str:
        if ref.startswith(DEBOOTSTRAP_REPO + ":"):
            return make_base(client, settings, suite=ref.partition(":")[2], tag=ref, emit=emit).id
        emit(Message(f"pulling base image {ref}"))
        try:
            return engine.pull(client, ref).id
        except UserError as exc:
            raise UserError(
                f"Base image {ref} is not in the engine and cannot be pulled ({exc.message}). "
                f"Without a registry, make one from a package mirror with "
                f"`python -m orchestrator base` and set ORCH_BASE_IMAGE={base_tag('bookworm')}, "
                f"or `docker load` the image from a file."
            ) from None

    def made(image_id: str, _: Stamp) -> Image:
        image = engine.image(client, image_id)
        assert image is not None, image_id
        return image

    block = Block[Image](
        find=lambda: engine.image(client, ref),
        reuse=lambda image: image,
        build=build,
        verify=lambda _: Stamp(None, []),  # the import or pull labelled and tagged it
        done=made,
    )
    return ensure_image(client, block, emit)
