"""The agent's image, derived from a grading image that holds more than an agent may see.

GSO's images (and ours built from a row's repository) keep the whole history in /testbed/.git, the
expert's commit among it, and GSO's ship `/eval.sh`, which names that commit. The agent's image is one
thin layer on top that:
- replaces /testbed/.git by a repository holding only what HEAD (the base commit) reaches: no later
  commit, ref, reflog or pack survives (the layer below is invisible from inside a container;
  harness.sandbox.taskimage.contents.CUT_HISTORY, which the bwrap provider runs too);
- removes the task's `agent_hides` paths;
- makes the task's virtualenv every shell's python (GSO activates it only from /root/.bashrc, which
  non-interactive shells skip, with a relative path that fails outside /testbed).
The history cut is an image of its own (`ensure_cut_image`), nothing else changed: the grader starts the
base's and the patches' states from it, so a patch's build cannot check out the expert's commit either.
Its build checks its own work: if `git cat-file -e <opt_commit>` still succeeds, it fails.
"""
from __future__ import annotations

import shlex
from collections.abc import Callable

import docker
from docker.models.containers import Container
from docker.models.images import Image

from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.images import (BASE_COMMIT_LABEL, Progress, activate_venv, commit_image, image_exists,
                                           run_step, scratch_container)
from harness.sandbox.interface import TESTBED, ImageBuildError
from harness.sandbox.taskimage.contents import CUT_HISTORY, DEFAULT_PATH, RECIPE_VERSION, content_hash
from harness.tasks.task import Task


def _derived(client: docker.DockerClient, task: Task, parent: str, kind: str, parts: tuple[str, ...], say: str,
             progress: Progress, build: Callable[[Container, Image], tuple[dict[str, str], dict[str, str], str]]
             ) -> str:
    """An image one layer above `parent`, tagged by its parent's id and `parts` (reused while both are the
    same): `build` runs its steps in a scratch container and returns the ENV, labels and WORKDIR to commit."""
    image = client.images.get(parent)
    digest = content_hash(RECIPE_VERSION.encode(), image.id.encode(), *(p.encode() for p in parts))
    tag = f"optrunner/{kind}-{task.id.lower()}:{digest}"
    if image_exists(client, tag):
        return tag
    progress(f"[{task.id}] {say}")
    container = scratch_container(client, parent, network=False)
    try:
        env, labels, workdir = build(container, image)
        commit_image(container, tag, env, {LABEL: kind if kind != "cut" else "grading",
                                           "optrunner.task": task.id, **labels}, workdir=workdir)
    finally:
        container.remove(force=True)
    return tag


def ensure_cut_image(client: docker.DockerClient, task: Task, grading: str, progress: Progress = print) -> str:
    """The grading image with /testbed/.git holding only what the base commit reaches, nothing else changed:
    where the base's and the patches' graded states start (a patch's build cannot check out the expert's
    commit), and what the agent's image is made from. Reused while `grading` is the same image."""
    def build(container: Container, image: Image) -> tuple[dict[str, str], dict[str, str], str]:
        what = f"task {task.id}: history cut"
        head = run_step(container, CUT_HISTORY, what).strip().splitlines()[-1]
        # (login shells may print errors of the image's profile scripts: look for a token, not for output)
        if task.opt_commit and "optrunner-reachable" in run_step(
                container, f"cd {TESTBED} && git cat-file -e {shlex.quote(task.opt_commit)} 2>/dev/null && "
                "echo optrunner-reachable || true", what):
            raise ImageBuildError(f"{what}: the expert's commit {task.opt_commit[:12]} is still reachable")
        return {}, {BASE_COMMIT_LABEL: head}, image.attrs["Config"].get("WorkingDir") or TESTBED

    return _derived(client, task, grading, "cut", (CUT_HISTORY,), "history after the base commit cut (graded base "
                    "and patch states, agent image)", progress, build)


def ensure_agent_image(client: docker.DockerClient, task: Task, cut: str, progress: Progress = print) -> str:
    """The agent-safe layer on top of the history cut `cut` (ensure_cut_image; reused while it is the same)."""
    def build(container: Container, image: Image) -> tuple[dict[str, str], dict[str, str], str]:
        what = f"task {task.id}: agent image"
        if task.agent_hides:
            run_step(container, f"rm -rf {' '.join(shlex.quote(p) for p in task.agent_hides)}", what)
        image_env = dict(item.partition("=")[::2] for item in image.attrs["Config"].get("Env") or [])
        env = activate_venv(container, what, image_env.get("PATH", DEFAULT_PATH))
        if env:  # GSO's relative `source .venv/bin/activate` in .bashrc fails outside /testbed: replaced above
            run_step(container, "if [ -f /root/.bashrc ]; then sed -i 's|^source .venv/bin/activate|# &|' "
                     "/root/.bashrc; fi", what)
        return env, {BASE_COMMIT_LABEL: image.labels[BASE_COMMIT_LABEL]}, TESTBED

    return _derived(client, task, cut, "agent", ("\n".join(task.agent_hides),), f"agent image: "
                    f"{len(task.agent_hides)} hidden path(s) removed, the venv every shell's", progress, build)
