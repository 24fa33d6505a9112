"""A task's prebuilt image (GSO ships one per instance): found locally under its name, or pulled from
its registry with progress and tagged with that name, the way GSO's own harness keys it."""
from __future__ import annotations

import time

import docker
import docker.errors
from docker.utils import parse_repository_tag

from harness.sandbox.docker.images import Progress, image_exists
from harness.tasks.task import Task


class NotAvailable(Exception):
    """The prebuilt image is neither present nor pullable; the message says why, in one line."""


def find_or_pull(client: docker.DockerClient, task: Task, progress: Progress = print) -> str:
    """The task's prebuilt image name once it is present; NotAvailable otherwise."""
    local = task.prebuilt_image
    if not local:
        raise NotAvailable("the task names no prebuilt image")
    if image_exists(client, local):
        return local
    if not task.registry_image:
        raise NotAvailable(f"{local} is not present and no registry is named")
    pull(client, task.registry_image, progress)
    if task.registry_image != local:  # GSO's harness keys a pulled image by its local name
        repository, tag = parse_repository_tag(local)
        client.images.get(task.registry_image).tag(repository, tag or "latest")
    return local


def pull(client: docker.DockerClient, name: str, progress: Progress) -> None:
    """`docker pull` through the engine's API, reporting the downloaded size every few seconds."""
    repository, tag = parse_repository_tag(name)
    progress(f"pulling {name}")
    layers: dict[str, tuple[int, int]] = {}
    last = time.monotonic()
    try:
        for event in client.api.pull(repository, tag=tag or "latest", stream=True, decode=True):
            if "error" in event:
                raise NotAvailable(f"pulling {name} failed: {str(event['error']).splitlines()[0][:200]}")
            detail = event.get("progressDetail") or {}
            if event.get("id") and detail.get("total"):
                layers[event["id"]] = (detail.get("current", 0), detail["total"])
            if time.monotonic() - last > 5 and layers:
                done, total = (sum(v[i] for v in layers.values()) for i in (0, 1))
                progress(f"pulling {name}: {done / 1e6:.0f} of {total / 1e6:.0f} MB")
                last = time.monotonic()
    except docker.errors.APIError as err:
        reason = (getattr(err, "explanation", None) or str(err)).splitlines()[0][:200]
        raise NotAvailable(f"pulling {name} failed: {reason}") from None
    if not image_exists(client, name):
        raise NotAvailable(f"pulling {name} ended without the image")
