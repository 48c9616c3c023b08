"""Settings: `ORCH_*` environment variables, `orchestrator.toml`, `[tool.orchestrator]`.

Precedence, highest first: explicit overrides, environment, `orchestrator.toml` in
the working directory, `[tool.orchestrator]` of `pyproject.toml`, defaults.
Nested values use `__` in the environment (`ORCH_GROMACS__REF=v2025.3`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    PyprojectTomlConfigSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from orchestrator.core.errors import UsageError
from orchestrator.core.settings_errors import env_name, invalid, not_json
from orchestrator.core.sources import GROMACS_2026_RELEASE as GROMACS_2026_RELEASE
from orchestrator.core.sources import GromacsSource as GromacsSource
from orchestrator.core.sources import RocmApt as RocmApt
from orchestrator.core.sources import RocmTarball as RocmTarball
from orchestrator.core.urls import without_userinfo

#: The values a setting accepts where a registry above core holds them (`platform`:
#: `orchestrator.platforms`, `executor`: `orchestrator.runs.executors`): each registry
#: enters its names when imported, as every command does before it loads the settings.
CHOICES: dict[str, tuple[str, ...]] = {}


def register_choices(setting: str, choices: Sequence[str]) -> None:
    """Make `setting` accept only `choices` (a registry's names), with pydantic's words."""
    CHOICES[setting] = tuple(choices)


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

#: AMDGPU code-object versions a dev build can be forced to (`-mcode-object-version`).
CODE_OBJECT_VERSIONS = (4, 5, 6)

#: One AMD GPU target as LLVM names it (gfx1201, gfx942, gfx90a).
GFX_TARGET = re.compile(r"gfx[0-9a-f]{3,4}")
#: One NVIDIA GPU target as nvcc and clang name it (sm_90, sm_90a, sm_100a).
SM_TARGET = re.compile(r"sm_[1-9][0-9]{1,2}[af]?")

IMAGE_REF = re.compile(
    r"^[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(?:@sha256:[0-9a-f]{64})?$"
)


class SlurmResources(BaseModel):
    """What a SLURM job asks for. Settings give the defaults (`ORCH_SLURM__*`); a recipe's
    `[slurm]` table and a matrix's GPU type narrow them (a constraint, a gres)."""

    model_config = ConfigDict(extra="forbid")

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    #: `--constraint` (node features: a GPU type such as `mi300x`).
    constraint: str | None = None
    #: `--gres` (e.g. `gpu:1`, `gpu:mi250:1`).
    gres: str | None = None
    #: `--time` in minutes; default: the run's own timeout plus 10 minutes for set-up.
    time_limit_minutes: int | None = Field(None, ge=1)
    #: A node to itself while a run measures (`--exclusive`).
    exclusive: bool | None = None

    def narrowed(self, other: SlurmResources | None) -> SlurmResources:
        """These resources with what `other` sets put over them."""
        if other is None:
            return self
        return self.model_copy(update=other.model_dump(exclude_none=True))


class SlurmSettings(SlurmResources):
    """How the SLURM executor submits and waits (`ORCH_SLURM__*`)."""

    #: More `sbatch` arguments: a list; in the environment a JSON list or a command line
    #: split as a shell would (`ORCH_SLURM__EXTRA_ARGS="--mem=16G --exclusive"`).
    extra_args: Annotated[list[str], NoDecode] = Field(default_factory=list)
    #: How often `squeue` is asked while jobs are pending or running.
    poll_seconds: float = Field(0.5, gt=0, le=60)
    #: The Python that runs gmxbench on the nodes; default: the one submitting.
    python: str | None = None

    @field_validator("extra_args", mode="before")
    @classmethod
    def _command_line(cls, value: Any) -> Any:
        """`--mem=16G` is one argument, `'["--mem=16G"]'` a JSON list of them."""
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value) if value.lstrip().startswith("[") else shlex.split(value)
        except ValueError as exc:
            raise ValueError(
                f"{exc}: give the sbatch arguments as a command line (--mem=16G --exclusive) "
                """or as a JSON list ('["--mem=16G", "--exclusive"]')"""
            ) from None


class ShareSettings(BaseModel):
    """How `share` signs and what `share load` accepts (`ORCH_SHARE__*`): archives are untrusted."""

    model_config = ConfigDict(extra="forbid")

    #: The SSH private key `share save` signs with (`ssh-keygen -Y sign`); unset: unsigned.
    signing_key: Path | None = None
    #: The allowed-signers file `share load` verifies with (git's `gpg.ssh.allowedSignersFile`).
    allowed_signers: Path | None = None
    #: The most bytes a record (the manifest, the lockfile, an image config) may hold.
    max_record_bytes: int = Field(4 << 20, ge=4096)
    #: The most bytes the image member may hold (and so the disk one load may take).
    max_image_bytes: int = Field(256 << 30, ge=1 << 20)

    @field_validator("signing_key", "allowed_signers")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None


def check_flags(value: str | None) -> str | None:
    """Compiler flags go into CMake's cache and a build's name: one line of shell words
    (None when there are none)."""
    if value is None or not value.strip():
        return None
    if "\n" in value or "\0" in value:
        raise ValueError("the flags must be one line")
    try:
        shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"the flags are not shell words ({exc}): {value!r}") from None
    return value.strip()


class Settings(BaseSettings):
    """Everything a build or run depends on that is not a command-line argument.

    Only values live here; what they mean on a platform (its default base image and
    GROMACS source, the ROCm path, the GPU target) is `orchestrator.platforms`' job.
    """

    model_config = SettingsConfigDict(
        env_prefix="ORCH_",
        env_nested_delimiter="__",
        toml_file="orchestrator.toml",
        pyproject_toml_table_header=("tool", "orchestrator"),
        extra="forbid",
    )

    platform: str = Field(
        "auto",
        description="rocm, cuda, cpu, or auto (rocm when /dev/kfd exists, cuda when "
        "/dev/nvidiactl does, else cpu)",
    )
    base_image: str | None = Field(
        None, description="base image of the active platform (tag, optional @sha256: digest)"
    )
    results_dir: Path = Field(Path("results"), description="run directories and lockfiles")
    cache_dir: Path = Field(
        Path("~/.cache/gmxbench"), description="downloaded inputs and debootstrap trees"
    )
    recipes_dirs: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="folders of your own recipes (`:`-separated), searched before the shipped ones",
    )
    rocm_version: str = Field("7.12", description="ROCm release the images pin")
    rocm_stack: Literal["amd", "debian"] = Field(
        "amd",
        description="where the ROCm platform's base and stable compiler come from: AMD's "
        "ROCm 7.12 as TheRock ships it (rocm_source), or Debian's ROCm packages (no AMD "
        "server needed)",
    )
    rocm_source: Literal["apt", "tarball"] = Field(
        "apt",
        description="where the amd stack's ROCm comes from: AMD's apt repository "
        "(rocm_apt) or a release tarball (rocm_tarball, checksummed)",
    )
    rocm_apt: RocmApt = Field(
        default_factory=RocmApt,
        description="AMD's apt repository: url, key_url, suite, component "
        "(ORCH_ROCM_APT__URL, ...); a mirror or a prerelease channel can replace it",
    )
    rocm_tarball: RocmTarball | None = Field(
        None,
        description="the TheRock release tarball of rocm_source=tarball: url and sha256 "
        "(ORCH_ROCM_TARBALL__URL, ORCH_ROCM_TARBALL__SHA256)",
    )
    gpu_arch: str | None = Field(
        None,
        description="GPU targets (gfx... on ROCm, sm_... on CUDA), comma-separated: every GPU "
        "unit is compiled for each, the first is the primary one; unset: the host's GPU, "
        "else gfx1201 (ROCm) or sm_90 (CUDA)",
    )
    code_object_version: int | None = Field(
        None,
        description="AMDGPU code-object version of dev builds (4, 5 or 6); unset: the stable "
        "compiler's default, so both sides of a comparison share the kernels' ABI",
    )
    rocm_device_libs: str | None = Field(
        None,
        description="the device-library folder (ocml.bc, ...) dev builds link, as a path "
        "in the images; unset: the ROCm stack's own. Device libraries built by the LLVM "
        "under test go here when the stack's are too new or too old for it",
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
    run_pids_limit: int = Field(
        4096, ge=64, description="most processes and threads one run container may hold"
    )
    webhook_url: SecretStr | None = Field(None, description="secret: never printed or stored")
    database_url: SecretStr | None = Field(
        None,
        description="results database (postgresql://…); default: SQLite in the results folder. "
        "Secret: may hold a password",
    )
    webhook_format: Literal["discord", "json"] = "discord"
    executor: str = Field(
        "local",
        description="where runs run: here, as SLURM batch jobs (ORCH_SLURM__*), or natively "
        "on a host without a container engine (builds in native_root)",
    )
    native_root: Path = Field(
        Path("/opt/gromacs"),
        description="where the native executor installs each build (<root>/<build>, and "
        "<root>/dev-current), as the field report's hand-made harness did",
    )
    device_flags: str | None = Field(
        None,
        description="extra flags for the compiler under test on every GPU unit (CPU: every "
        "unit), e.g. `-Xptxas -maxrregcount=64` or `-mllvm -amdgpu-...`: a compiler option's "
        "A/B; the build's name carries their digest",
    )
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)
    bench_budget: str | None = Field(
        None,
        description="the runs' time of every `bench` (`10m`, `90s`, `1h`) when --budget is "
        "not given: pairs, and steps where the kernel trace allows, fitted to it",
    )
    debian_mirror: str = Field(
        "http://deb.debian.org/debian", description="mirror for `orchestrator base`"
    )
    share: ShareSettings = Field(default_factory=ShareSettings)

    @field_validator("device_flags")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return check_flags(value)

    @field_validator("results_dir", "cache_dir", "native_root")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("recipes_dirs", mode="before")
    @classmethod
    def _path_list(cls, value: Any) -> Any:
        """`ORCH_RECIPES_DIRS=/a:/b` like PATH; a TOML list as it is."""
        if isinstance(value, str):
            return [part for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator("recipes_dirs")
    @classmethod
    def _expand_all(cls, value: list[Path]) -> list[Path]:
        return [path.expanduser() for path in value]

    @field_validator("platform", "executor")
    @classmethod
    def _registered(cls, value: str, info: ValidationInfo) -> str:
        known = CHOICES.get(info.field_name or "")
        if known is not None and value not in known:
            *first, last = map(repr, known)
            raise ValueError(f"Input should be {', '.join(first) + ' or ' if first else ''}{last}")
        return value

    @field_validator("simd")
    @classmethod
    def _known_simd(cls, value: str) -> str:
        if value not in SIMD_LEVELS:
            raise ValueError(f"must be one of {', '.join(SIMD_LEVELS)}")
        return value

    @field_validator("gpu_arch", mode="before")
    @classmethod
    def _gfx(cls, value: Any) -> Any:
        """`gfx1201,gfx942` (or a TOML list) kept as one comma-joined string, checked."""
        if value is None:
            return None
        if isinstance(value, str | list | tuple):
            return ",".join(gpu_target_list(value))
        return value

    @field_validator("code_object_version")
    @classmethod
    def _code_object_version(cls, value: int | None) -> int | None:
        if value is not None and value not in CODE_OBJECT_VERSIONS:
            raise ValueError(
                "must be 4, 5 or 6 (an AMDGPU code-object version), or unset to follow the "
                "stable compiler's default"
            )
        return value

    @field_validator("base_image")
    @classmethod
    def _image_ref(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE_REF.match(value):
            raise ValueError("must be an image reference like name:tag or name:tag@sha256:<64 hex>")
        return value

    @field_validator("llvm_source")
    @classmethod
    def _llvm_source(cls, value: str) -> str:
        """Given to git as a repository: never an option, never more than one argument."""
        if value.startswith("-"):
            raise ValueError(
                "starts with '-', so git would read it as an option: set it to an "
                "llvm-project checkout or a git URL"
            )
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError("holds a control character (a newline?): give one path or URL")
        return value

    @model_validator(mode="after")
    def _targets_of_platform(self) -> Settings:
        """GPU targets of the other vendor for a named platform: sm_90 is no ROCm target,
        gfx1201 no CUDA one (with `auto`, the platform's own targets module checks)."""
        vendor = {"rocm": "gfx", "cuda": "sm"}.get(self.platform)
        wrong = [t for t in split_targets(self.gpu_arch) if vendor and t[:2] != vendor[:2]]
        if wrong:
            example = "gfx1201" if vendor == "gfx" else "sm_90"
            raise ValueError(
                f"gpu_arch {','.join(wrong)} is not a target of the {self.platform} platform: "
                f"set ORCH_GPU_ARCH (or --gpu-arch) to its GPUs' names, like {example}"
            )
        return self

    @model_validator(mode="after")
    def _tarball_given(self) -> Settings:
        if self.rocm_source == "tarball" and self.rocm_tarball is None:
            raise ValueError(
                "rocm_source=tarball needs the tarball: set ORCH_ROCM_TARBALL__URL to a "
                "therock-dist-linux-<family>-<version>.tar.gz and ORCH_ROCM_TARBALL__SHA256 "
                "to its sha256, or leave ORCH_ROCM_SOURCE unset for AMD's apt repository"
            )
        return self

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

    def public_dump(self) -> dict[str, Any]:
        """Settings as shown to users and stored in records: the webhook only as set/unset."""
        data = self.model_dump(mode="json", exclude={"webhook_url", "database_url"})
        data["llvm_source"] = without_userinfo(self.llvm_source)
        data["webhook_url"] = "<set>" if self.webhook_url else None
        data["database_url"] = "<set>" if self.database_url else None
        return data


def gpu_target_list(value: str | Sequence[str]) -> list[str]:
    """GPU targets from `gfx1201,gfx942` (or a list), in order, duplicates dropped; a
    `ValueError` names the entry that is not a gfx target."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    targets: list[str] = []
    for part in parts:
        name = str(part).strip()
        if not GFX_TARGET.fullmatch(name) and not SM_TARGET.fullmatch(name):
            raise ValueError(
                f"{name!r} is not a GPU target: each entry must look like gfx1201 or gfx90a, "
                "several separated by commas (gfx1201,gfx942); sm_90 on the CUDA platform"
            )
        if name not in targets:
            targets.append(name)
    vendors = {target[:2] for target in targets}
    if len(vendors) > 1:
        raise ValueError(
            f"{','.join(targets)} mixes AMD (gfx) and NVIDIA (sm_) targets: one build is for "
            "one platform's GPUs; give the targets of one of them"
        )
    return targets


def split_targets(joined: str | None) -> list[str]:
    """An image's `gpu_arch` label or the setting (`gfx1201,gfx942`: comma-joined, as
    :func:`gpu_target_list` left it) as a list; none for None or an empty string."""
    return [target.strip() for target in (joined or "").split(",") if target.strip()]


def with_gpu_arch(settings: Settings, value: str | None) -> Settings:
    """`settings` with the GPU targets a command's `--gpu-arch` names (None: as they are)."""
    if value is None:
        return settings
    try:
        targets = gpu_target_list(value)
    except ValueError as exc:
        raise UsageError(
            f"--gpu-arch {value!r}: {exc}; it replaces ORCH_GPU_ARCH for this command."
        ) from None
    return settings.model_copy(update={"gpu_arch": ",".join(targets)})


#: Settings that are never written into another process's environment or a job script.
SECRETS = frozenset({"webhook_url", "database_url"})


def environment_of(settings: Settings, leave_out: frozenset[str] = frozenset()) -> dict[str, str]:
    """`ORCH_*` variables that give another process these settings (a batch job on a
    node), paths made absolute; the secrets are never among them."""
    out: dict[str, str] = {}
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if name in SECRETS or name in leave_out or value is None:
            continue
        if name == "llvm_source":
            text = without_userinfo(value)  # a job runs, never fetches: no credentials
        elif isinstance(value, Path):
            text = str(value.resolve())
        elif name == "recipes_dirs":
            text = os.pathsep.join(str(path.resolve()) for path in value)
        elif isinstance(value, BaseModel):
            text = value.model_dump_json()
        else:
            text = str(value)
        out[env_name((name,))] = text
    return out


def load_settings(**overrides: Any) -> Settings:
    """Load settings or raise a `UsageError` naming the setting and the accepted values."""
    try:
        return Settings(**overrides)
    except SettingsError as exc:  # an ORCH_* value that should be JSON is not
        raise not_json(exc) from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"orchestrator.toml (or [tool.orchestrator] in pyproject.toml) is not valid TOML: "
            f"{exc}. Fix the file or remove it; every setting also has an ORCH_* variable."
        ) from None
    except ValidationError as exc:
        raise invalid(exc, SECRETS) from None
