"""One sequence for every image: find it by its inputs, or build, verify, label and tag it.

Each building block (base, builder, toolchains, GROMACS, microbenchmark images) fills a `Block`
with its own steps, and `ensure_image` runs them in one order:

1. **Refuse a taken tag.** A tag known before the lookup (`Block.tag`) is refused when
   an image of other inputs holds it: tags are never overwritten, and a reused image
   would otherwise take the tag from it.
2. **Find.** An image made from the same inputs is reused as it is (its tag put back if
   it was removed); the block's `reuse` says so, and brings its lockfile back. Blocks
   whose tag names their inputs (a base, the LLVM toolchain and its environment) find
   their image by that tag.
3. **Claim.** A block whose found image keeps the tag its labels name (a GROMACS image:
   a dev build's name carries the minute it started) names the new image's tag only once
   the lookup missed; it is refused like the first, before an hour's build, not after.
4. **Build** the image, untagged.
5. **Verify.** The block checks what it built and says what it gets (`Stamp`). This
   comes before any label or tag, so an image that failed its check is never tagged or
   recorded; and an imported LLVM's tag names the commit that only the check reads.
6. **Label and tag.** The record's labels are stamped in a one-line build, then every
   tag is put on at once. The image's own tag is refused once more first: it may be
   known only since step 5, or taken by another process during the build.
7. **Save** what must exist whenever the tags do (a GROMACS image's lockfile and codegen
   fingerprint), with the tags and while signals wait: a tagged image has its lockfile.

A block that `discard`s removes what it built when steps 5 to 7 fail: an imported LLVM
is a committed container, no build cache's layer, and nothing half-made may stay. The
others keep a failed build untagged (its layers are the next build's cache), except that
the GROMACS check removes a build it refuses itself (`gromacs_check.check_build`).
A base comes labelled and tagged from its import or pull, so its stamp is empty.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from orchestrator import engine
from orchestrator.core import interrupts
from orchestrator.core.events import Emit
from orchestrator.engine import Client, Image
from orchestrator.images.catalog import keep_tag, label_and_tag, refuse_overwrite
from orchestrator.images.provenance import ImageRecord

T = TypeVar("T")


@dataclass(frozen=True)
class Stamp:
    """What a verified image gets: the record its labels say (None: tags alone, no labels),
    labels beyond the record's, and its tags, its own first (`dev-current` moves to it).
    `save` writes, given the final id, what must exist whenever the tags do."""

    record: ImageRecord | None
    tags: list[str]
    labels: dict[str, str] = field(default_factory=dict)
    save: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Block(Generic[T]):
    """One image kind's steps, for `ensure`; `T` is what its caller gets back."""

    #: An image already made from these inputs (by inputs key, or by tag).
    find: Callable[[], Image | None]
    #: What a found image gives the caller (said to the user where the block says so).
    reuse: Callable[[Image], T]
    #: Make the image; its id, untagged.
    build: Callable[[], str]
    #: Check the built image (raise when it is not what was asked) and say what it gets.
    verify: Callable[[str], Stamp]
    #: What the finished image (its final id and stamp) gives the caller.
    done: Callable[[str, Stamp], T]
    #: The image's tag, where it is known before a lookup by inputs (a block that finds
    #: its image by tag leaves it out: the tag is what it found).
    tag: str | None = None
    #: The inputs key, where it is known before the build; a taken tag is refused with it.
    key: str | None = None
    #: The new image's tag, said once the lookup missed (refusing a name Docker cannot
    #: take is the block's own step).
    claim: Callable[[], str] | None = None
    #: Remove the built image when verifying, labelling or saving it fails.
    discard: bool = False


def ensure_image(client: Client, block: Block[T], emit: Emit) -> T:
    """The block's image: found by its inputs, or built, verified, labelled and tagged."""
    if block.tag is not None and block.key is not None:
        refuse_overwrite(client, block.tag, block.key)
    found = block.find()
    if found is not None:
        if block.tag is not None:
            keep_tag(client, found, block.tag)
        return block.reuse(found)
    if block.claim is not None:
        claimed = block.claim()
        if block.key is not None:
            refuse_overwrite(client, claimed, block.key)
    image_id = block.build()
    try:
        stamp = block.verify(image_id)
        final = _stamp(client, image_id, stamp, emit)
    except BaseException:
        if block.discard:
            _remove(client, image_id)
        raise
    return block.done(final, stamp)


def _stamp(client: Client, image_id: str, stamp: Stamp, emit: Emit) -> str:
    """Label and tag a verified image, and save its records; its final id."""
    if stamp.record is None:
        for tag in stamp.tags:
            engine.tag(client, image_id, tag)
        return image_id
    if stamp.record.inputs is not None:
        refuse_overwrite(client, stamp.tags[0], stamp.record.inputs)
    saving = interrupts.deferred() if stamp.save else contextlib.nullcontext()
    with saving:  # tagged means its lockfile is on disk
        final = label_and_tag(client, image_id, stamp.record, stamp.tags, emit, stamp.labels)
        stamp.record.id = final
        if stamp.save is not None:
            stamp.save(final)
    return final


def _remove(client: Client, image_id: str) -> None:
    """Remove a built image whose later step failed (once labelled it has a child and
    cannot go, which is not the failure to report)."""
    try:
        engine.remove_image(client, image_id, force=True)
    except Exception:  # the failure being raised is the one to say
        return
