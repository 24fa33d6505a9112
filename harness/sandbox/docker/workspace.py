"""The workspace layer of a task whose image is its own (Harbor), one Docker image on top of the task's:
its working directory snapshotted and its pinned files hashed into a label (what and why:
harness.sandbox.taskimage.workspace).
"""
from __future__ import annotations

import json
import shlex

import docker

from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.images import (BASE_COMMIT_LABEL, Progress, commit_image, image_exists, run_step,
                                           scratch_container)
from harness.sandbox.interface import GIT_DIR_LABEL, PINS_LABEL, WORKDIR_LABEL, ImageBuildError
from harness.sandbox.taskimage.contents import GIT_ENV, RECIPE_VERSION, content_hash
from harness.sandbox.taskimage.workspace import GIT_DIR, PINS, SNAPSHOT, parse_pins, pins_command
from harness.tasks.task import Task


def workdir_of(client: docker.DockerClient, image: str) -> str:
    return (client.images.get(image).attrs["Config"].get("WorkingDir") or "/").rstrip("/") or "/"


def ensure_workspace_image(client: docker.DockerClient, task: Task, image: str, progress: Progress = print) -> str:
    """The task's image with its working directory snapshotted and its pinned files hashed."""
    source = client.images.get(image)
    pinned = task.reward_check.pinned if task.reward_check else ()
    tag = f"optrunner/workspace-{task.id.lower()}:" + content_hash(
        RECIPE_VERSION.encode(), source.id.encode(), SNAPSHOT.encode(), PINS.encode(), json.dumps(pinned).encode())
    if image_exists(client, tag):
        return tag
    workdir = workdir_of(client, image)
    if workdir == "/":
        raise ImageBuildError(f"task {task.id}: the image works in / (no WORKDIR); the agent's working directory "
                              "must be a folder of its own")
    progress(f"[{task.id}] workspace: snapshot of {workdir}")
    container = scratch_container(client, image, network=False)
    try:
        what = f"task {task.id}: workspace"
        sha = run_step(container, SNAPSHOT.format(git_dir=GIT_DIR, workdir=shlex.quote(workdir)), what,
                       env=GIT_ENV).strip().splitlines()[-1]
        pins: dict[str, str] = {}
        if pinned:
            pins = parse_pins(run_step(container, pins_command(workdir, pinned), what), what)
        commit_image(container, tag, {}, {LABEL: "task", "optrunner.task": task.id, BASE_COMMIT_LABEL: sha,
                                          WORKDIR_LABEL: workdir, GIT_DIR_LABEL: GIT_DIR,
                                          PINS_LABEL: json.dumps(pins, sort_keys=True)}, workdir=workdir)
    finally:
        container.remove(force=True)
    return tag


def pins_of(client: docker.DockerClient, image: str) -> dict[str, str]:
    return json.loads((client.images.get(image).labels or {}).get(PINS_LABEL) or "{}")
