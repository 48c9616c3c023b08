"""`prune`: old LLVM toolchain images removed; the LLVM workspace volumes never.

Each LLVM commit built leaves a toolchain image (its distribution, about 200 MB), while
the clone, build tree and ccache that made it live in a workspace volume shared by
every commit (`images.llvm_workspace`). Here the toolchain images go, except the newest
few of each platform and any that a present image was built from (untagging those
would free nothing and lose the name their records give). Volumes are only listed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from orchestrator import engine
from orchestrator.core.errors import UsageError
from orchestrator.core.events import Emit, ignore
from orchestrator.engine import Client, Volume
from orchestrator.images import catalog, toolchain
from orchestrator.images.microbench_image import IMAGE_KIND
from orchestrator.images.provenance import ImageRecord, label

DEFAULT_KEEP = 3
#: The label `images.llvm_workspace` puts on each LLVM workspace volume (with `gmxbench.keep`).
WORKSPACE = label("workspace") + "=llvm"


@dataclass(frozen=True)
class Toolchain:
    """One LLVM toolchain image (one tag), what `prune` did with it, and why."""

    tag: str
    id: str
    platform: str | None
    llvm_commit: str
    created: str | None
    removed: bool
    why: str


@dataclass
class Pruned:
    """What `prune` did (or, with `dry_run`, would do)."""

    keep: int
    dry_run: bool
    toolchains: list[Toolchain] = field(default_factory=list)
    #: The LLVM workspace volumes, every one kept.
    volumes: list[Volume] = field(default_factory=list)

    @property
    def removed(self) -> list[Toolchain]:
        return [t for t in self.toolchains if t.removed]


def prune(
    client: Client,
    *,
    keep: int = DEFAULT_KEEP,
    dry_run: bool = False,
    platform: str | None = None,
    sizes: bool = False,
    emit: Emit = ignore,
) -> Pruned:
    """Untag the LLVM toolchain images of `platform` (every platform when None) but the
    `keep` newest of each platform and those a present image was built from."""
    if keep < 0:
        raise UsageError(f"--keep {keep}: the number of toolchains to keep is 0 or more.")
    records = catalog.list_images(client, ("toolchain", "gromacs", IMAGE_KIND), emit)
    users = _users(records)
    llvm = [  # newest first, as listed
        r
        for r in records
        if r.kind == "toolchain"
        and (r.llvm_commit or r.imported_from)
        and platform in (None, r.platform)
    ]
    seen: defaultdict[str | None, int] = defaultdict(int)
    done = Pruned(keep=keep, dry_run=dry_run)
    for record in llvm:
        seen[record.platform] += 1
        reasons = [_newest(keep)] if seen[record.platform] <= keep else []
        if record.tag in users:
            reasons.append(f"{', '.join(users[record.tag])} built from it")
        refused = None
        if not reasons and not dry_run:
            refused = engine.untag(client, record.tag)
        if refused:
            reasons.append(f"the engine refused: {refused}")
        item = Toolchain(
            tag=record.tag, id=record.id, platform=record.platform,
            llvm_commit=record.llvm_commit or "", created=record.created,
            removed=not reasons, why="; ".join(reasons),
        )  # fmt: skip
        done.toolchains.append(item)
    done.volumes = engine.volumes(client, WORKSPACE, sizes=sizes)
    return done


def _newest(keep: int) -> str:
    return "the newest" if keep == 1 else f"one of the {keep} newest"


def _users(records: list[ImageRecord]) -> dict[str, list[str]]:
    """Toolchain tag to the tags of present images built from it: a dev GROMACS image
    (and its microbenchmark images) name theirs; a microbenchmark image built FROM a
    toolchain names its build `toolchain-<compiler>`, the compiler named like the
    toolchain's tag."""
    users: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if r.kind == "toolchain":
            continue
        if r.toolchain:
            users[r.toolchain].append(r.tag)
        elif r.kind == IMAGE_KIND and r.build and r.build.startswith("toolchain-"):
            name = r.build.removeprefix("toolchain-")
            users[f"{toolchain.REPO}:{r.platform}-{name}"].append(r.tag)
    return users
