"""Base images without a registry: debootstrap a Debian/Ubuntu tree and `docker import` it.

Air-gapped sites (and CI here) reach a package mirror but no image registry; this is
how they get the `FROM` of every template.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker

from orchestrator import LABEL_PREFIX
from orchestrator.engine import Log, image_or_none, stderr_log
from orchestrator.errors import UserError
from orchestrator.settings import LOCAL_CPU_BASE, Settings


def base_tag(suite: str) -> str:
    return f"{LOCAL_CPU_BASE.split(':')[0]}:{suite}"


def make_base(
    client: docker.DockerClient,
    settings: Settings,
    *,
    suite: str = "bookworm",
    tag: str | None = None,
    log: Log = stderr_log,
) -> Any:
    """Create `gmxbench-base/debian:<suite>` from `settings.debian_mirror`; return the image."""
    tag = tag or base_tag(suite)
    if shutil.which("debootstrap") is None:
        raise UserError(
            "Making a base image needs debootstrap, which is not installed. "
            "Install it with `apt-get install -y debootstrap` (run as root), then retry."
        )
    work = settings.cache / "debootstrap"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{suite}-", dir=work) as tmp:
        root = Path(tmp, "root")
        log(f"debootstrap --variant=minbase {suite} from {settings.debian_mirror} (about 30 s)")
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
        created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        changes = [
            f"LABEL {LABEL_PREFIX}kind=base",
            f'LABEL {LABEL_PREFIX}mirror="{settings.debian_mirror}"',
            f"LABEL {LABEL_PREFIX}suite={suite}",
            f"LABEL org.opencontainers.image.created={created}",
            'CMD ["/bin/bash"]',
        ]
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(
            str(tarball), repository=repo, tag=version or "latest", changes=changes
        )
    image = image_or_none(client, tag)
    if image is None:
        raise UserError(f"docker import did not produce {tag}; see the engine's log.")
    log(f"made base image {tag} ({image.id[:19]})")
    return image


def ensure_base(client: docker.DockerClient, settings: Settings, log: Log = stderr_log) -> Any:
    """The configured base image: present, pulled, or (the local default) made here."""
    ref = settings.base
    image = image_or_none(client, ref)
    if image is not None:
        return image
    if ref.startswith(LOCAL_CPU_BASE.split(":")[0] + ":"):
        return make_base(client, settings, suite=ref.partition(":")[2], tag=ref, log=log)
    log(f"pulling base image {ref}")
    try:
        return client.images.pull(ref)
    except docker.errors.APIError as exc:
        reason = str(exc.explanation or exc).split("\n")[0][:160]
        raise UserError(
            f"Base image {ref} is not in the engine and cannot be pulled ({reason}). "
            f"Without a registry, make one from a package mirror with "
            f"`python -m orchestrator base` and set ORCH_BASE_IMAGE={LOCAL_CPU_BASE}, "
            f"or `docker load` the image from a file."
        ) from None
