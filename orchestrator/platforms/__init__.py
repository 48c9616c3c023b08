"""Platforms: one folder per platform (`cpu/`, `rocm/`, `cuda/`), each a `roles.Platform`, and
this registry of them.

Only this package knows what differs between platforms; everything else asks the
platform an image was built for (`get(record.platform)`) or the one this host has
(`active(settings)`). A platform's name is said once, in its folder; the `platform`
setting is checked against `names()` (`core.settings.register_choices`).
"""

from __future__ import annotations

from orchestrator.core.errors import UsageError
from orchestrator.core.settings import Settings, register_choices, split_targets
from orchestrator.platforms.cpu import CpuPlatform
from orchestrator.platforms.cuda import CudaPlatform
from orchestrator.platforms.rocm import RocmPlatform
from orchestrator.platforms.roles import Platform

#: Every platform, in the order `auto` tries them: the first one present wins (cpu,
#: present everywhere, last).
PLATFORMS: tuple[Platform, ...] = (
    RocmPlatform(),
    CudaPlatform(),
    CpuPlatform(),
)


def get(name: str) -> Platform:
    for platform in PLATFORMS:
        if platform.name == name:
            return platform
    known = ", ".join(p.name for p in PLATFORMS)
    raise UsageError(f"Unknown platform {name!r}; this tool knows {known}.")


def active(settings: Settings) -> Platform:
    """The configured platform, or with `auto` the first one this host has."""
    if settings.platform != "auto":
        return get(settings.platform)
    return next(p for p in PLATFORMS if p.run.present())


def host_cpu() -> Platform:
    """The platform a GPU build runs as when it runs on the host CPU only (`--cpu-only`):
    no devices, no GPU profiler, md.log's cycle accounting as the breakdown."""
    return next(p for p in PLATFORMS if not p.run.has_devices)


def names() -> list[str]:
    return [platform.name for platform in PLATFORMS]


def on(settings: Settings, platform: str) -> Settings:
    """`settings` as if `platform` were the active one (its own default base image, and
    its own default GPU targets where the set ones are another vendor's)."""
    if active(settings).name == platform:
        return settings
    update: dict[str, object] = {"platform": platform, "base_image": None}
    prefix = get(platform).build.target_prefix
    if prefix and not all(t.startswith(prefix) for t in split_targets(settings.gpu_arch)):
        update["gpu_arch"] = None
    return settings.model_copy(update=update)


register_choices("platform", ["auto", *names()])
