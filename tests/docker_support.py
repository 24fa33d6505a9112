"""Docker access for integration tests: the engine, the shared client, and built task images."""
from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache

import docker
import pytest

from harness.sandbox.docker.engine import DockerUnavailable, ensure_engine
from harness.sandbox.docker.images import BaseImageSpec, ensure_base_image, ensure_task_image
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import SandboxLimits
from harness.tasks import Task, select_tasks


@lru_cache(maxsize=1)
def client() -> docker.DockerClient:
    try:
        ensure_engine()
    except DockerUnavailable as err:
        pytest.fail(f"Docker is required for these tests: {err}")
    return docker_client()


@lru_cache(maxsize=1)
def base_tag() -> str:
    return ensure_base_image(client(), BaseImageSpec(), progress=lambda _msg: None)


def task_image(task: Task) -> str:
    return ensure_task_image(client(), task, base_tag(), progress=lambda _msg: None)


@lru_cache(maxsize=1)
def smoke_task() -> Task:
    """The task integration tests run in: the first smoke task, or OPTRUNNER_TEST_TASK."""
    return select_tasks(os.environ.get("OPTRUNNER_TEST_TASK", "smoke"))[0]


def sandbox_for(task: Task, **limits: object) -> Iterator[DockerSandbox]:
    box = DockerSandbox.start(task_image(task), SandboxLimits(**limits), client=client())  # type: ignore[arg-type]
    try:
        yield box
    finally:
        box.close()


def bwrap_here() -> bool:
    """Whether bubblewrap can make sandboxes on this machine."""
    from harness.sandbox.interface import SandboxUnavailable
    from harness.sandbox.providers import provider

    try:
        provider("bwrap").ensure_ready()
        return True
    except SandboxUnavailable:
        return False


def providers_here() -> list[str]:
    """The sandbox providers this machine can start: docker, and bwrap where it is ready."""
    return ["docker", *(["bwrap"] if bwrap_here() else [])]
