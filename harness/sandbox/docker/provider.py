"""The Docker sandbox provider: the engine, the task images, containers and their cleanup."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from harness.sandbox.docker.containers import docker_client, remove_containers
from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.sandbox import DockerSandbox, engine_errors
from harness.sandbox.docker.task_images import ensure_images
from harness.sandbox.interface import SandboxLimits, TaskImages
from harness.sandbox.providers import CleanupScope, Progress

if TYPE_CHECKING:
    from harness.tasks.task import Task


class DockerProvider:
    name = "docker"

    def ensure_ready(self) -> None:
        ensure_engine()

    def ensure_images(self, tasks: Sequence["Task"], base_image: str = BaseImageSpec.base,
                      progress: Progress = print, base_map: Mapping[str, str] | None = None) -> dict[str, TaskImages]:
        with engine_errors():
            return ensure_images(docker_client(), list(tasks), BaseImageSpec(base=base_image), progress, base_map)

    def start(self, image: str, limits: SandboxLimits | None = None,
              labels: dict[str, str] | None = None) -> DockerSandbox:
        return DockerSandbox.start(image, limits, labels)

    def cleanup(self, scope: CleanupScope = "orphans") -> int:
        with engine_errors():
            return remove_containers(scope)
