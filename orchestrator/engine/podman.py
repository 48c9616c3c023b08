"""Where Podman's Docker API differs from Docker's, said once: image names, the network
of a container, and `keep-groups` (a rootless container keeps the user's groups, the
way to a GPU's device nodes), an annotation that crun reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from docker.models.containers import RUN_HOST_CONFIG_KWARGS

from orchestrator.core.errors import UsageError, UserError
from orchestrator.engine.client import Client, kind, libpod

#: `group_add` value asking that a rootless container keep the user's own groups (crun).
KEEP_GROUPS = "keep-groups"
KEEP_GROUPS_ANNOTATION = "run.oci.keep_original_groups"
KEEP_GROUPS_CONF = f'annotations = ["{KEEP_GROUPS_ANNOTATION}=1"]'


def familiar(ref: str) -> str:
    """A name as Docker shows it: Podman says `docker.io/library/gromacs:x` for `gromacs:x`."""
    for prefix in ("docker.io/library/", "docker.io/"):
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return ref


def adapted(client: Client, config: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """`config` said so that the engine at hand does what it says, and whether the
    container must keep the user's groups (`container.create` does the rest).

    Podman's Docker API ignores `network_disabled` (the container would get a network),
    so it gets `network_mode="none"` too. `keep-groups` in `group_add` is Podman's: its
    API takes it as a group name, so it is taken out here, to go as the annotation crun
    reads instead (`create_annotated`), and the container is checked to carry it
    (`check_keeps_groups`: Podman before 5.1 drops annotations sent this way;
    containers.conf can set it for every container).
    """
    options, engine_kind = dict(config), kind(client)
    groups = [str(g) for g in options.get("group_add") or []]
    if engine_kind.name == "podman" and options.get("network_disabled"):
        options["network_mode"] = "none"
    if KEEP_GROUPS not in groups:
        return options, False
    if engine_kind.name != "podman" or groups != [KEEP_GROUPS]:
        raise UsageError(
            f"group_add {groups}: `{KEEP_GROUPS}` is Podman's, and goes alone; "
            f"this engine is {engine_kind.name} {engine_kind.version}."
        )
    del options["group_add"]
    return options, True


def create_annotated(client: Client, options: dict[str, Any], annotations: dict[str, str]) -> Any:
    """`containers.create` through docker-py's low-level API, with HostConfig.Annotations
    (split as `containers.create` splits its arguments; volumes in its dict form)."""
    volumes = dict(options.pop("volumes", None) or {})
    host = {key: options.pop(key) for key in RUN_HOST_CONFIG_KWARGS if key in options}
    host_config = client.api.create_host_config(binds=volumes or None, **host)
    host_config["Annotations"] = annotations
    made = client.api.create_container(
        options.pop("image"), options.pop("command", None), host_config=host_config,
        volumes=[v["bind"] for v in volumes.values()] or None, **options,
    )  # fmt: skip
    return client.containers.get(made["Id"])


def check_keeps_groups(client: Client, container_id: str) -> None:
    """Refuse a container that would not keep the user's groups (its GPU access)."""
    state = libpod(client, f"containers/{container_id}/json")
    annotations = (state.get("Config") or {}).get("Annotations") or {}
    if annotations.get(KEEP_GROUPS_ANNOTATION) != "1":
        raise UserError(
            f"Podman {kind(client).version} dropped the `{KEEP_GROUPS}` annotation that its "
            "Docker API takes from Podman 5.1 on. Set it for every container: add "
            f"`{KEEP_GROUPS_CONF}` under [containers] in containers.conf "
            "(~/.config/containers/containers.conf when rootless), then restart "
            "`podman system service`."
        )
    runtime = str(state.get("OCIRuntime", ""))
    if runtime != "crun":
        raise UserError(
            f"`{KEEP_GROUPS}` needs the crun runtime, and this container would run under "
            f"{runtime or 'an unnamed runtime'}, which drops the user's groups: set "
            '`runtime = "crun"` under [engine] in containers.conf.'
        )
