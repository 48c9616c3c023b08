"""The base image block: the `FROM` of every builder, present, pulled, or made here.

Air-gapped sites (and CI here) reach a package mirror but no image registry; for them
`make_base` debootstraps a Debian/Ubuntu tree and `docker import`s it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from orchestrator.core import engine
from orchestrator.core.engine import Client, Image
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.core.settings import Settings
from orchestrator.images.catalog import now_iso
from orchestrator.images.provenance import KIND_LABEL, label
from orchestrator.platforms import active
from orchestrator.platforms.base import DEBOOTSTRAP_REPO


def base_tag(suite: str) -> str:
    return f"{DEBOOTSTRAP_REPO}:{suite}"


def make_base(
    client: Client,
    settings: Settings,
    *,
    suite: str = "bookworm",
    tag: str | None = None,
    emit: Emit = ignore,
) -> Image:
    """Create `gmxbench-base/debian:<suite>` from `settings.debian_mirror`; return the image."""
    tag = tag or base_tag(suite)
    if shutil.which("debootstrap") is None:
        raise UserError(
            "Making a base image needs debootstrap, which is not installed. "
            "Install it with `apt-get install -y debootstrap` (run as root), then retry."
        )
    work = settings.cache_dir / "debootstrap"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{suite}-", dir=work) as tmp:
        root = Path(tmp, "root")
        emit(
            Message(
                f"debootstrap --variant=minbase {suite} from {settings.debian_mirror} (about 30 s)"
            )
        )
        proc = subprocess.run(
            ["debootstrap", "--variant=minbase", suite, str(root), settings.debian_mirror],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            tail = "\n".join(proc.stdout.splitlines()[-10:] + proc.stderr.splitlines()[-10:])
            raise UserError(
                f"debootstrap of {suite} from {settings.debian_mirror} failed (exit "
                f"{proc.returncode}). Check the mirror (ORCH_DEBIAN_MIRROR) and the suite name. "
                f"Its last lines:\n{tail}"
            )
        tarball = Path(tmp, "root.tar")
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        changes = [
            f"LABEL {KIND_LABEL}=base",
            f'LABEL {label("mirror")}="{settings.debian_mirror}"',
            f"LABEL {label('suite')}={suite}",
            f"LABEL org.opencontainers.image.created={now_iso()}",
            'CMD ["/bin/bash"]',
        ]
        image = engine.import_tarball(client, tarball, tag, changes)
    if image is None:
        raise UserError(f"docker import did not produce {tag}; see the engine's log.")
    emit(Message(f"made base image {tag} ({image.id[:19]})"))
    return image


def ensure_base(client: Client, settings: Settings, emit: Emit = ignore) -> Image:
    """The configured base image: present, pulled, or (the local default) made here."""
    ref = active(settings).base_image(settings)
    image = engine.image(client, ref)
    if image is not None:
        return image
    if ref.startswith(DEBOOTSTRAP_REPO + ":"):
        return make_base(client, settings, suite=ref.partition(":")[2], tag=ref, emit=emit)
    emit(Message(f"pulling base image {ref}"))
    try:
        return engine.pull(client, ref)
    except UserError as exc:
        raise UserError(
            f"Base image {ref} is not in the engine and cannot be pulled ({exc.message}). "
            f"Without a registry, make one from a package mirror with "
            f"`python -m orchestrator base` and set ORCH_BASE_IMAGE={base_tag('bookworm')}, "
            f"or `docker load` the image from a file."
        ) from None
