"""Settings: `ORCH_*` environment variables, `orchestrator.toml`, `[tool.orchestrator]`.

Precedence, highest first: explicit overrides, environment, `orchestrator.toml` in
the working directory, `[tool.orchestrator]` of `pyproject.toml`, defaults.
Nested values use `__` in the environment (`ORCH_GROMACS__REF=v2025.3`).
"""

from __future__ import annotations

import os
import re
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from orchestrator.errors import UsageError

Platform = Literal["rocm", "cpu"]

#: GROMACS `GMX_SIMD` levels this tool knows how to check on the host.
SIMD_LEVELS = (
    "None",
    "SSE2",
    "SSE4.1",
    "AVX_128_FMA",
    "AVX_256",
    "AVX2_128",
    "AVX2_256",
    "AVX_512",
    "ARM_NEON_ASIMD",
    "ARM_SVE",
)

DEFAULT_ROCM_BASE = "rocm/dev-ubuntu-24.04:7.12-complete"
DEFAULT_CPU_BASE = "gmxbench-base/debian:bookworm"
#: Where `python -m orchestrator base` puts the locally made Debian image.
LOCAL_CPU_BASE = DEFAULT_CPU_BASE

DEFAULT_ROCM_GROMACS = "git+https://gitlab.com/gromacs/gromacs.git"
DEFAULT_ROCM_GROMACS_REF = "4947-hip-feature-enablement"
#: Debian's source package: `apt-get source gromacs` yields the upstream tarball.
DEFAULT_CPU_GROMACS = "deb-src:gromacs"
DEFAULT_CPU_GROMACS_REF = "2022.5"

IMAGE_REF = re.compile(
    r"^[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(?:@sha256:[0-9a-f]{64})?$"
)


class GromacsSource(BaseModel):
    """GROMACS source: `git+<url>` + branch/tag/commit, or `deb-src:<package>` + version."""

    url: str
    ref: str

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if not (value.startswith(("git+", "deb-src:")) or value.endswith(".tar.gz")):
            raise ValueError(
                "must be 'git+<repository url>', 'deb-src:<debian source package>' "
                "or a URL ending in .tar.gz"
            )
        return value


class Settings(BaseSettings):
    """Everything a build or run depends on that is not a command-line argument."""

    model_config = SettingsConfigDict(
        env_prefix="ORCH_",
        env_nested_delimiter="__",
        toml_file="orchestrator.toml",
        pyproject_toml_table_header=("tool", "orchestrator"),
        extra="forbid",
    )

    platform: Literal["auto", "rocm", "cpu"] = Field(
        "auto", description="rocm, cpu, or auto (rocm when /dev/kfd exists)"
    )
    base_image: str | None = Field(
        None, description="base image of the active platform (tag, optional @sha256: digest)"
    )
    results_dir: Path = Field(Path("results"), description="run directories and lockfiles")
    cache_dir: Path = Field(
        Path("~/.cache/gmxbench"), description="downloaded inputs and debootstrap trees"
    )
    rocm_version: str = Field("7.12", description="ROCm release the images pin")
    gpu_arch: str | None = Field(
        None, description="GPU target (gfx...); detected from the host, else gfx1201"
    )
    simd: str = Field("AVX2_256", description="GROMACS GMX_SIMD level of every build")
    gromacs: GromacsSource | None = Field(
        None, description="GROMACS source (url + ref); default depends on the platform"
    )
    llvm_source: str = Field(
        "https://github.com/llvm/llvm-project.git",
        description="local llvm-project checkout or git URL",
    )
    jobs: int = Field(default_factory=lambda: os.cpu_count() or 2, ge=1)
    webhook_url: SecretStr | None = Field(None, description="secret: never printed or stored")
    webhook_format: Literal["discord", "json"] = "discord"
    debian_mirror: str = Field(
        "http://deb.debian.org/debian", description="mirror for `orchestrator base`"
    )

    @field_validator("simd")
    @classmethod
    def _known_simd(cls, value: str) -> str:
        if value not in SIMD_LEVELS:
            raise ValueError(f"must be one of {', '.join(SIMD_LEVELS)}")
        return value

    @field_validator("gpu_arch")
    @classmethod
    def _gfx(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"gfx[0-9a-f]{3,4}", value):
            raise ValueError("must look like gfx1201 or gfx90a")
        return value

    @field_validator("base_image")
    @classmethod
    def _image_ref(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE_REF.match(value):
            raise ValueError("must be an image reference like name:tag or name:tag@sha256:<64 hex>")
        return value

    @field_validator("rocm_version")
    @classmethod
    def _rocm_version(cls, value: str) -> str:
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", value):
            raise ValueError("must be a version like 7.12 or 7.12.0")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls),
            PyprojectTomlConfigSettingsSource(settings_cls),
        )

    # Derived values: what "auto" and "default" mean on this machine.

    @cached_property
    def active_platform(self) -> Platform:
        if self.platform == "auto":
            return "rocm" if Path("/dev/kfd").exists() else "cpu"
        return self.platform

    @property
    def base(self) -> str:
        if self.base_image:
            return self.base_image
        return DEFAULT_ROCM_BASE if self.active_platform == "rocm" else DEFAULT_CPU_BASE

    @property
    def gromacs_source(self) -> GromacsSource:
        if self.gromacs is not None:
            return self.gromacs
        if self.active_platform == "rocm":
            return GromacsSource(url=DEFAULT_ROCM_GROMACS, ref=DEFAULT_ROCM_GROMACS_REF)
        return GromacsSource(url=DEFAULT_CPU_GROMACS, ref=DEFAULT_CPU_GROMACS_REF)

    @cached_property
    def target_arch(self) -> str:
        return self.gpu_arch or detect_gpu_arch() or "gfx1201"

    @property
    def rocm_path(self) -> str:
        return f"/opt/rocm/core-{self.rocm_version}"

    @property
    def results(self) -> Path:
        return self.results_dir.expanduser()

    @property
    def cache(self) -> Path:
        return self.cache_dir.expanduser()

    def public_dump(self) -> dict[str, Any]:
        """Settings as shown to users and stored in records: the webhook only as set/unset."""
        data = self.model_dump(mode="json", exclude={"webhook_url"})
        data["webhook_url"] = "<set>" if self.webhook_url else None
        data["active_platform"] = self.active_platform
        return data


def detect_gpu_arch() -> str | None:
    """The first GPU's gfx target from the KFD topology (no ROCm tools needed)."""
    nodes = Path("/sys/class/kfd/kfd/topology/nodes")
    if not nodes.is_dir():
        return None
    for props in sorted(nodes.glob("*/properties")):
        text = props.read_text(errors="replace")
        match = re.search(r"^gfx_target_version\s+(\d+)", text, re.MULTILINE)
        if match and int(match.group(1)):
            version = int(match.group(1))
            major, minor, step = version // 10000, (version // 100) % 100, version % 100
            return f"gfx{major}{minor:x}{step:x}"
    return None


def _env_name(loc: tuple[Any, ...]) -> str:
    return "ORCH_" + "__".join(str(part).upper() for part in loc)


def load_settings(**overrides: Any) -> Settings:
    """Load settings or raise a `UsageError` naming the setting and the accepted values."""
    try:
        return Settings(**overrides)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"orchestrator.toml (or [tool.orchestrator] in pyproject.toml) is not valid TOML: "
            f"{exc}. Fix the file or remove it; every setting also has an ORCH_* variable."
        ) from None
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            name = _env_name(tuple(err["loc"]))
            given = err.get("input")
            secret = err["loc"][:1] == ("webhook_url",)
            shown = "" if secret or isinstance(given, dict) else f" (got {given!r})"
            msg = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "is not a known setting; see the settings table in README.md"
            problems.append(f"{name}{shown}: {msg}")
        raise UsageError("Invalid setting. " + "; ".join(problems) + ".") from None
