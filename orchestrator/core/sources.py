"""Where the sources of an image come from: GROMACS (git, Debian source package,
release tarball) and AMD's ROCm packages (TheRock's apt repository or release tarball).

Each value lands in a Dockerfile's shell line or a git command, so each is validated here,
as a record is read, never where it is used.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, field_validator, model_validator

from orchestrator.core.urls import has_userinfo

#: What a GROMACS source URL and ref may hold: one shell word, never an option.
SAFE_URL = re.compile(r"^[A-Za-z0-9._~:/%+@=-]+$")
SAFE_REF = re.compile(r"^[A-Za-z0-9._/+~:][A-Za-z0-9._/+~:-]*$")


class GromacsSource(BaseModel):
    """GROMACS source: `git+<url>` + branch/tag/commit, `deb-src:<package>` + version, a
    `.tar.gz` URL, or a local `.tar.gz` file (absolute path) whose `sha256` must be given,
    for machines that cannot reach upstream."""

    url: str
    ref: str
    sha256: str | None = None

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if not (value.startswith(("git+", "deb-src:")) or value.endswith(".tar.gz")):
            raise ValueError(
                "must be 'git+<repository url>', 'deb-src:<debian source package>', "
                "a URL ending in .tar.gz, or the absolute path of a local .tar.gz"
            )
        return value

    @field_validator("url")
    @classmethod
    def _safe_url(cls, value: str) -> str:
        """The URL goes into a Dockerfile's `RUN` and into labels: one word, no secrets."""
        remote = value.removeprefix("git+")
        local = remote.startswith(("/", "file://"))  # sent in the context, never in a command
        if remote.startswith("-") or not (local or SAFE_URL.match(remote)):
            raise ValueError(
                "must be a plain URL or path (letters, digits and ._~:/%+@=- only, not "
                "starting with '-'): it is written into the build's shell command"
            )
        if has_userinfo(remote):
            raise ValueError(
                "must not hold credentials (user:token@): they would be written into the "
                "image's history and labels. Use a repository that needs none, a mirror, "
                "or a local .tar.gz with its sha256"
            )
        return value

    @field_validator("ref")
    @classmethod
    def _safe_ref(cls, value: str) -> str:
        if not SAFE_REF.match(value):
            raise ValueError(
                "must be a branch, tag, commit or version (letters, digits and ._/+~:- "
                "only, not starting with '-')"
            )
        return value

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9a-f]{64}", value):
            raise ValueError("must be the 64 lowercase hex digits of a sha256")
        return value

    @model_validator(mode="after")
    def _remote_tarball_checksummed(self) -> GromacsSource:
        """A downloaded tarball is verified in the build, so it must come with its sha256."""
        remote = not self.url.startswith(("git+", "deb-src:")) and not self.local
        if remote and self.sha256 is None:
            raise ValueError(
                f"the tarball {self.url} is downloaded in the build and checked against its "
                "sha256, so set ORCH_GROMACS__SHA256 to the sha256 its publisher gives "
                "(for a git branch or tag, use ORCH_GROMACS__URL=git+<repository url>)"
            )
        return self

    @property
    def local(self) -> bool:
        """A tarball on this machine: sent in the build context, never downloaded."""
        return self.url.startswith(("/", "file://"))

    @property
    def path(self) -> Path:
        return Path(self.url.removeprefix("file://"))


#: GROMACS 2026.3 as upstream releases it, the default of both ROCm stacks: full HIP
#: support (every GPU kernel, GPU-direct communication, the GPU-only path) in a release.
#: The sha256 of upstream's release tarball, as Homebrew's `gromacs` formula and other
#: public recipes of 2026.3 pin it; `shared/gromacs/`'s offline tarball is a `git archive`
#: of the tag, another file with another sha256.
GROMACS_2026_RELEASE = GromacsSource(
    url="https://ftp.gromacs.org/gromacs/gromacs-2026.3.tar.gz",
    ref="v2026.3",
    sha256="1094b7bbc6a3960223827114626657110b40096cdf9598a727935fc84ebf8aa0",
)

#: What a URL of the ROCm sources may hold: it lands in a Dockerfile's shell line.
SOURCE_URL = re.compile(r"https?://[A-Za-z0-9._~:/%+-]+")


def _source_url(value: str) -> str:
    if not SOURCE_URL.fullmatch(value):
        raise ValueError(
            "must be an http(s) URL of letters, digits and . _ ~ : / % + - only "
            "(no spaces, quotes or query strings)"
        )
    return value


class RocmApt(BaseModel):
    """AMD's apt repository of TheRock packages (`deb <url> <suite> <component>`, signed
    by the key at `key_url`): the public one by default, a mirror or prerelease channel
    by setting."""

    url: str = "https://repo.amd.com/rocm/packages/ubuntu2404"
    key_url: str = "https://repo.amd.com/rocm/packages/gpg/rocm.gpg"
    suite: str = "stable"
    component: str = "main"

    @field_validator("url", "key_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _source_url(value)

    @field_validator("suite", "component")
    @classmethod
    def _word(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
            raise ValueError("must be one apt suite or component name, like stable or main")
        return value


class RocmTarball(BaseModel):
    """A TheRock release tarball (`therock-dist-linux-<family>-<version>.tar.gz`) and its
    sha256, which the build checks before unpacking it."""

    url: str
    sha256: str

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = _source_url(value)
        if not value.endswith(".tar.gz"):
            raise ValueError("must be the URL of a .tar.gz (therock-dist-linux-...tar.gz)")
        return value

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        if not re.fullmatch(r"[0-9a-f]{64}", value):
            raise ValueError("must be the 64 lowercase hex digits of a sha256")
        return value
