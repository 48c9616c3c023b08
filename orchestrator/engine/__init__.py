"""The container engine (Docker, or Podman's Docker API), and the only package that talks to it.

docker-py drives everything but Docker's BuildKit builds (cache mounts), which go through
the `docker` CLI of the same version as the daemon (`DOCKER_BUILDKIT=1 docker build`).
Images come back as `Image` values, so no other module holds a docker-py object or
calls its API; containers never outlive the call that made them.

Podman (`podman system service`) answers the same API with a few differences, handled
here (`kind` tells the engines apart): its builder (buildah) runs `RUN --mount=type=cache`
itself, so every build goes through the API; it names images `docker.io/...`; it ignores
`network_disabled`, the `tag` of an import and (before 5.1) container annotations; `load`
reports ids its own way; and `keep-groups` (a rootless container keeps the user's groups,
the way to a GPU's device nodes) is an annotation that crun reads (`podman`).

Callers import this package (`from orchestrator import engine`) and use the names below;
the modules are: `client` (connect, which engine), `image_store`, `builds` with
`build_log`, `container`, `podman`, `transfer` (save, load, push) and `volume`.
"""

from orchestrator.engine.builds import (
    BuildFailed,
    ContainerBuildFailed,
    ContextFiles,
    build,
    build_in_container,
)
from orchestrator.engine.client import Client, EngineKind, cli_binary, connect, kind
from orchestrator.engine.container import (
    PROBE_PIDS_LIMIT,
    Container,
    EngineGone,
    container_user,
    containers,
    containers_on,
    gpu_request,
    remove_container,
    run,
    run_capture,
    running_containers,
)
from orchestrator.engine.image_store import (
    Image,
    image,
    images,
    import_tarball,
    pull,
    remove_image,
    tag,
    untag,
)
from orchestrator.engine.podman import KEEP_GROUPS, KEEP_GROUPS_ANNOTATION, KEEP_GROUPS_CONF
from orchestrator.engine.transfer import PushError, load, push, save, tags
from orchestrator.engine.volume import Volume, ensure_volume, volumes

__all__ = [
    "KEEP_GROUPS",
    "KEEP_GROUPS_ANNOTATION",
    "KEEP_GROUPS_CONF",
    "PROBE_PIDS_LIMIT",
    "BuildFailed",
    "Client",
    "Container",
    "ContainerBuildFailed",
    "ContextFiles",
    "EngineGone",
    "EngineKind",
    "Image",
    "PushError",
    "Volume",
    "build",
    "build_in_container",
    "cli_binary",
    "connect",
    "container_user",
    "containers",
    "containers_on",
    "ensure_volume",
    "gpu_request",
    "image",
    "images",
    "import_tarball",
    "kind",
    "load",
    "pull",
    "push",
    "remove_container",
    "remove_image",
    "run",
    "run_capture",
    "running_containers",
    "save",
    "tag",
    "tags",
    "untag",
    "volumes",
]
