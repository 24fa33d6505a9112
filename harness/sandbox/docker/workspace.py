"""The workspace layer of a task whose image is its own (Harbor): what makes its working directory
diffable without putting anything into it.

On top of the task's image: the working directory (the image's WORKDIR) is committed into a git
repository kept outside it (/.optrunner/git), so a sandbox reports the agent's change as a binary-safe
diff while the agent sees no .git of ours; /logs/agent and /logs/verifier exist (Harbor's layout); and
the files the agent may not change (the task's pinned globs) are hashed into a label, for the grader
to check before it verifies.
"""
from __future__ import annotations

import json
import posixpath
import shlex

import docker

from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.images import (BASE_COMMIT_LABEL, GIT_ENV, RECIPE_VERSION, Progress, commit_image,
                                           content_hash, image_exists, run_step, scratch_container)
from harness.sandbox.interface import GIT_DIR_LABEL, PINS_LABEL, WORKDIR_LABEL, ImageBuildError
from harness.tasks.task import Task

GIT_DIR = "/.optrunner/git"
SNAPSHOT = """set -e
mkdir -p /logs/agent /logs/verifier /.optrunner
command -v git >/dev/null || {{ echo "the image has no git (needed to diff the working directory)"; exit 3; }}
git config --system safe.directory '*'
export GIT_DIR={git_dir} GIT_WORK_TREE={workdir}
git init -q
cd {workdir}
git add -A -f .
git commit -q --allow-empty -m 'task environment'
git rev-parse HEAD
"""
# Pinned files: every file whose working-directory path or name matches a glob, with its hash (find and
# sha256sum only, so images without python work too).
PINS = """cd {workdir} && find . \\( -name .git -o -name node_modules -o -name __pycache__ \\) -prune \\
  -o -type f \\( {tests} \\) -print0 | xargs -0 -r sha256sum; echo optrunner-pins-done"""


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


def pins_command(workdir: str, pinned: tuple[str, ...] | list[str]) -> str:
    """The shell command that hashes the files `pinned` names under `workdir` (parse_pins reads its output)."""
    tests = " -o ".join(f"-name {shlex.quote(g)} -o -path {shlex.quote('./' + g)}" for g in pinned)
    return PINS.format(workdir=shlex.quote(workdir), tests=tests)


def parse_pins(out: str, what: str) -> dict[str, str]:
    """Working-directory path -> sha256 from pins_command's output."""
    if "optrunner-pins-done" not in out:
        raise ImageBuildError(f"{what}: could not hash the pinned files (find, sha256sum): {out[-300:]}")
    pins: dict[str, str] = {}
    for line in out.splitlines():
        digest, sep, path = line.partition("  ")
        if sep and len(digest) == 64:
            pins[posixpath.normpath(path)] = digest
    return pins


def pins_of(client: docker.DockerClient, image: str) -> dict[str, str]:
    return json.loads((client.images.get(image).labels or {}).get(PINS_LABEL) or "{}")
