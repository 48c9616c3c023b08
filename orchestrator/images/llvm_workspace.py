"""Where LLVM is built: a volume the tool owns, holding a git clone, the build tree and ccache.

A real llvm-project is 2 GB of source and hours of compile on a laptop, so nothing of it
may be per commit except what changed. The volume outlives every image and is outside
the engine's build cache, whose garbage collection would otherwise silently make the
next build cold. A local checkout reaches the clone as a git bundle of only the objects
the clone lacks; a working tree with changes (new files included) is sent as a commit
made in a scratch object store, so the user's repository is never written to.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

from orchestrator import engine
from orchestrator.core.errors import UserError
from orchestrator.core.events import Emit, Message, ignore
from orchestrator.core.owner import Owner
from orchestrator.engine import Client
from orchestrator.images.gitsource import ResolvedCommit, git
from orchestrator.images.provenance import label

#: Where the volume is mounted in the build container (the script's SRC, BUILD, CCACHE).
MOUNT = "/llvm"
#: The clone's git directory, outside the source tree (see toolchain-llvm.sh.j2).
GIT_DIR = f"{MOUNT}/git"
#: Labels on the volume: what it is, and that `gmxbench` prunes never remove it.
WORKSPACE_LABEL, KEEP_LABEL = label("workspace"), label("keep")
#: What the volume's build tree was configured with and cloned from.
BUILDER_LABEL, REPOSITORY_LABEL = label("builder"), label("repository")
#: A build container's name: the gmxbench that started it (boot, pid and its start time),
#: not labels, which `docker commit` would copy into the toolchain image.
BUILD_PREFIX = "gmxbench-llvm-build-"
_BUILD_NAME = re.compile(
    rf"^{BUILD_PREFIX}(?P<boot>[0-9a-f-]{{36}})-(?P<pid>\d+)-(?P<started>\d+)-[0-9a-f]{{8}}$"
)
#: Where a build's own inputs are put in its container (not the shared volume, so two
#: builds never overwrite each other's): the bundle, and the credentials of a URL.
INBOX = "/tmp"
BUNDLE, CREDENTIALS = "gmxbench-incoming.bundle", "gmxbench-git-credentials"
#: Refs the clone keeps each fetched commit under (a bundle's `refs/heads/<id>` lands here).
KEPT_REFS = "refs/gmxbench/"
#: The same author and dates for every snapshot, so one working tree is one commit id.
_SNAPSHOT_ENV = {
    "GIT_AUTHOR_NAME": "gmxbench", "GIT_AUTHOR_EMAIL": "gmxbench@localhost",
    "GIT_COMMITTER_NAME": "gmxbench", "GIT_COMMITTER_EMAIL": "gmxbench@localhost",
    "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000",
}  # fmt: skip


def ensure_volume(client: Client, name: str, builder_id: str, repository: str) -> bool:
    """Create the workspace volume unless it exists; True when it was created (a cold build)."""
    labels = {
        WORKSPACE_LABEL: "llvm", KEEP_LABEL: "true",
        BUILDER_LABEL: builder_id, REPOSITORY_LABEL: repository,
    }  # fmt: skip
    return engine.ensure_volume(client, name, labels)


def build_name() -> str:
    """The name of a build container: `sweep_orphans` reads its owner from it."""
    owner = Owner.current()
    return f"{BUILD_PREFIX}{owner.boot_id}-{owner.pid}-{owner.started}-{uuid.uuid4().hex[:8]}"


def sweep_orphans(client: Client, volume: str, emit: Emit = ignore) -> None:
    """Remove the build containers on `volume` whose gmxbench is gone, and say who holds it.

    A build's container outlives a killed gmxbench and keeps the workspace's lock (the
    script's `flock`, released only when the container's process ends), so the next
    build would wait for a build nobody will commit. Removing the container ends it.
    """
    for found in engine.containers_on(client, volume):
        if not found.name.startswith(BUILD_PREFIX):
            continue  # a reader of the clone (known_commits), gone in a moment
        owner = _owner(found.name)
        if owner is not None and owner.alive() is False:
            engine.remove_container(client, found.id)
            emit(Message(
                f"removed the LLVM build container {found.name}: its gmxbench "
                f"({owner.describe()}) is gone, and it held the workspace {volume}"
            ))  # fmt: skip
        elif found.status == "running":
            who = owner.describe() if owner is not None else "an unknown process"
            emit(Message(
                f"another LLVM build (container {found.name}, started by {who}) holds the "
                f"workspace {volume}: this build waits for it. If it is orphaned, remove it: "
                f"docker rm -f {found.name}"
            ))  # fmt: skip


def _owner(name: str) -> Owner | None:
    """The gmxbench that started the build named `name`, when it ran on this machine."""
    match = _BUILD_NAME.match(name)
    here = Owner.current()
    if match is None or match["boot"] != here.boot_id:
        return None  # another machine's engine, or a name of another layout: unknown
    return Owner(host=here.host, boot_id=here.boot_id, pid=int(match["pid"]),
                 started=int(match["started"]))  # fmt: skip


def known_commits(client: Client, image: str, volume: str) -> set[str]:
    """The commits the volume's clone holds (empty for a new volume)."""
    code, out = engine.run_capture(
        client, image,
        ["bash", "-c", f"git --git-dir={GIT_DIR} for-each-ref --format='%(objectname)' "
         f"{KEPT_REFS} 2>/dev/null || true"],
        volumes={volume: {"bind": MOUNT, "mode": "ro"}}, stderr=False,
    )  # fmt: skip
    if code != 0:
        raise UserError(f"Could not read the LLVM clone in volume {volume}: {out.strip()[:300]}")
    return {line.strip() for line in out.splitlines() if len(line.strip()) == 40}


class Scratch:
    """A bare repository in `folder` that borrows the user's objects (git alternates).

    Snapshots and bundle refs live here; the user's refs, index and objects are untouched.
    """

    def __init__(self, checkout: Path, folder: Path) -> None:
        self.checkout = checkout
        self.git_dir = folder / "scratch.git"
        common = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=checkout)
        self.objects = Path(common.stdout.decode().strip()) / "objects"
        git(["init", "--quiet", "--bare", str(self.git_dir)])
        (self.git_dir / "objects" / "info" / "alternates").write_text(f"{self.objects}\n")

    def snapshot(self, head: str) -> str:
        """A commit of the working tree as it is (untracked, unignored files too) on `head`."""
        index = self.git_dir / "snapshot-index"
        real_index = Path(
            git(["rev-parse", "--path-format=absolute", "--git-path", "index"], cwd=self.checkout)
            .stdout.decode().strip()
        )  # fmt: skip
        if real_index.exists():
            shutil.copyfile(real_index, index)  # its stat data spares hashing unchanged files
        env = {
            "GIT_INDEX_FILE": str(index),
            "GIT_OBJECT_DIRECTORY": str(self.git_dir / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(self.objects),
            **_SNAPSHOT_ENV,
        }
        git(["add", "--all", "--", "."], cwd=self.checkout, env=env)
        tree = git(["write-tree"], cwd=self.checkout, env=env).stdout.decode().strip()
        message = b"gmxbench: the working tree on " + head.encode() + b"\n"
        made = git(["commit-tree", tree, "-p", head], cwd=self.checkout, env=env, stdin=message)
        return made.stdout.decode().strip()

    def bundle(self, commit: str, have: set[str], out: Path) -> Path:
        """A bundle of `commit` holding only what a clone with the commits `have` lacks."""
        git(["update-ref", f"refs/heads/{commit}", commit], cwd=self.git_dir)
        present = [c for c in sorted(have) if self._has(c)]
        git(["bundle", "create", "--quiet", str(out), f"refs/heads/{commit}",
             *(["--not", *present] if present else [])], cwd=self.git_dir)  # fmt: skip
        return out

    def lacks(self, commit: str, have: set[str]) -> bool:
        """Whether a clone with the commits `have` lacks `commit` (an ancestor of one of them,
        as a bisect's step is of its bad end, needs no bundle: git refuses an empty one)."""
        present = [c for c in sorted(have) if self._has(c)]
        if commit in present:
            return False
        ahead = git(["rev-list", "--count", commit, "--not", *present], cwd=self.git_dir)
        return int(ahead.stdout.decode().strip() or 0) > 0

    def _has(self, commit: str) -> bool:
        found = git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=self.git_dir, check=False)
        return found.returncode == 0


def checkout_commit(scratch: Scratch, commit: ResolvedCommit) -> str:
    """The commit the build checks out: the commit itself, or a snapshot of a dirty tree."""
    return scratch.snapshot(commit.full) if commit.dirty else commit.full
