"""Which images a task runs in: its grading image (prebuilt, or built here) and its agent image.

- A task naming a prebuilt image (GSO's) uses it when it is present or can be pulled (policy `auto` or
  `prebuilt`); otherwise (`auto` or `build`) an equivalent image is built from the task.
- When the grading image may hold what the agent must not see (an expert commit in its history, an eval
  script), the agent's image is a derived layer without it (agent_image.py); otherwise both are one. Its
  history cut is an image of its own, where the grader starts the base's and the patches' states.
- A task with its own environment (Harbor: a Dockerfile, or a prebuilt `docker_image`) gets its image
  built with local substitutes for unreachable bases (dockerfile.py), then a workspace layer that makes
  its working directory diffable (workspace.py); agent and grader share it (its tests are not in it).
"""
from __future__ import annotations

from collections.abc import Mapping

import docker

from harness.sandbox.docker.agent_image import ensure_agent_image, ensure_cut_image
from harness.sandbox.docker.dockerfile import adapted_of, ensure_dockerfile_image
from harness.sandbox.docker.images import BaseImageSpec, Progress, ensure_base_image, ensure_task_image
from harness.sandbox.docker.prebuilt import NotAvailable, find_or_pull
from harness.sandbox.docker.workspace import ensure_workspace_image
from harness.sandbox.interface import ImageBuildError, TaskImages
from harness.tasks.task import Task


def ensure_images(client: docker.DockerClient, tasks: list[Task], spec: BaseImageSpec | None = None,
                  progress: Progress = print, base_map: Mapping[str, str] | None = None) -> dict[str, TaskImages]:
    """Find, pull or build every task's images; task id -> TaskImages. Raises ImageBuildError."""
    spec = spec or BaseImageSpec()
    base: str | None = None
    images: dict[str, TaskImages] = {}
    for task in tasks:
        if task.reward_check is not None:  # a task with its own environment
            if task.environment is not None:
                base = base or ensure_base_image(client, spec, progress)
                own = ensure_dockerfile_image(client, task, base, base_map or {}, progress)
            else:
                try:
                    own = find_or_pull(client, task, progress)
                except NotAvailable as why:
                    raise ImageBuildError(f"task {task.id}: {why}") from None
            workspace = ensure_workspace_image(client, task, own, progress)
            adapted = adapted_of(client, own) if task.environment is not None else ()
            images[task.id] = TaskImages(agent=workspace, grading=workspace, adapted=adapted)
            continue
        grading, unavailable = None, ""
        if task.prebuilt_image and task.image_policy != "build":
            try:
                grading = find_or_pull(client, task, progress)
            except NotAvailable as why:
                if task.image_policy == "prebuilt":
                    raise ImageBuildError(f"task {task.id}: {why} (tasks.image=prebuilt; use tasks.image=auto "
                                          "to build it from the task instead)") from None
                unavailable = str(why)
                progress(f"[{task.id}] {why}; building an equivalent image from the task")
        if grading is None:
            base = base or ensure_base_image(client, spec, progress)
            try:
                grading = ensure_task_image(client, task, base, progress)
            except ImageBuildError as err:
                if not unavailable:
                    raise
                first, _, rest = str(err).partition("\n")
                raise ImageBuildError(f"task {task.id}: image {task.prebuilt_image} is neither present nor "
                                      f"buildable: {unavailable}; building it failed: {first}"
                                      + (f"\n{rest}" if rest else "")) from None
        if task.opt_commit or task.agent_hides:
            cut = ensure_cut_image(client, task, grading, progress)
            agent = ensure_agent_image(client, task, cut, progress)
        else:
            cut, agent = "", grading
        # graded base and patch states start without the expert's commit in their history
        images[task.id] = TaskImages(agent=agent, grading=grading, base=cut if task.opt_commit else "")
    return images
