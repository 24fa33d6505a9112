"""Images, built offline and cached by content hash.

Two layers (what each holds, whichever provider builds it: harness.sandbox.taskimage):
- the base image: Debian with python3/numpy/gcc/git/tmux. It comes from a registry tag when one can
  be pulled, otherwise from debootstrap + `docker import` (no registry on air-gapped machines);
- one image per task: base + /testbed, built with the task's setup_commands and install_commands.
  A folder task's /testbed is a git repository whose ONLY commit is its base tree; nothing of the
  expert change or the hidden tests goes in. A task from a repository's history (a GSO row) gets that
  history, as GSO's images do, checked out at the base commit: such an image is for grading only, and
  the agent gets a derived layer without the later history (agent_image.py).

Every tag carries a hash of all its inputs, so an unchanged image is reused and a changed one is
rebuilt. Builds run as exec steps in a container that is then committed, so a failing step can be
named precisely (task, command, output tail). `task_images.py` decides which images a task uses.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

import docker
import docker.errors
from docker.models.containers import Container

from harness.sandbox.docker.containers import LABEL, OWNER_LABEL, owner_id
from harness.sandbox.docker.stream import run_exec
from harness.sandbox.interface import BASE_COMMIT_LABEL, DEFAULT_BASE_IMAGE, TESTBED, ImageBuildError
from harness.sandbox.taskimage.contents import (BASE_COMMIT, DEFAULT_PATH, GIT_ENV, IMAGE_ENV, RECIPE_VERSION,
                                                VENV_FOUND, VENV_PROFILE, content_hash, repo_tar, task_image_tag,
                                                venv_env)
from harness.sandbox.taskimage.history import repository_tar
from harness.tasks.task import Task

BASE_PACKAGES = (
    "python3", "python3-dev", "python3-numpy", "build-essential", "git", "patch", "tmux", "procps",
    "ca-certificates",
)
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BaseImageSpec:
    base: str = DEFAULT_BASE_IMAGE  # registry tag; debootstrap is the fallback
    packages: tuple[str, ...] = BASE_PACKAGES
    env: dict[str, str] = field(default_factory=lambda: dict(IMAGE_ENV))

    def tag(self) -> str:
        digest = content_hash(json.dumps(
            {"v": RECIPE_VERSION, "base": self.base, "packages": sorted(self.packages), "env": self.env,
             "suite": DEBIAN_SUITE}, sort_keys=True).encode())
        return f"optrunner/base:{digest}"


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def run_step(container: Container, cmd: str, what: str, env: dict[str, str] | None = None,
             workdir: str = "/") -> str:
    # (not docker-py's exec_run: a history cut's output once came back empty, see stream.run_exec)
    chunks: list[bytes] = []
    code = run_exec(container.client.api, container.id, ["bash", "-lc", cmd], chunks.append, workdir, env)
    text = b"".join(chunks).decode("utf-8", errors="replace")
    if code != 0:
        raise ImageBuildError(f"{what}: command failed (exit {code}): {cmd}\n{_tail(text)}")
    return text


def commit_image(container: Container, tag: str, env: dict[str, str], labels: dict[str, str],
                 workdir: str = TESTBED) -> None:
    repo, _, version = tag.partition(":")
    changes = [f"ENV {k}={v}" for k, v in env.items()] + [f"WORKDIR {workdir}", 'CMD ["sleep", "infinity"]']
    # the build container's owner is not the image's: its containers would look owned by a process long gone
    changes += [f'LABEL {k}="{_quoted(v)}"' for k, v in {OWNER_LABEL: "", **labels}.items()]
    container.commit(repository=repo, tag=version, changes=changes)


def _quoted(value: str) -> str:
    """A label value inside a Dockerfile's double quotes (JSON labels hold quotes)."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def scratch_container(client: docker.DockerClient, image: str, network: bool) -> Container:
    return client.containers.run(
        image, ["sleep", "infinity"], detach=True, labels={LABEL: "build", OWNER_LABEL: owner_id()},
        network_mode=None if network else "none",
    )


# ---------------------------------------------------------------- base image

def ensure_base_image(client: docker.DockerClient, spec: BaseImageSpec, progress: Progress = print) -> str:
    tag = spec.tag()
    if image_exists(client, tag):
        return tag
    root = _root_from_registry(client, spec, progress) or _root_from_debootstrap(client, spec, progress)
    container = scratch_container(client, root, network=False)
    try:
        run_step(container, f"git config --system init.defaultBranch main && mkdir -p {TESTBED} /workspace",
                 "base image")
        commit_image(container, tag, spec.env, {LABEL: "base"})
    finally:
        container.remove(force=True)
    progress(f"base image ready: {tag}")
    return tag


def _root_from_registry(client: docker.DockerClient, spec: BaseImageSpec, progress: Progress) -> str | None:
    progress(f"base image: pulling {spec.base}")
    try:
        client.images.pull(spec.base)
    except docker.errors.APIError as err:
        reason = (getattr(err, "explanation", None) or str(err)).splitlines()[0][:160]
        progress(f"base image: pull failed ({reason}); falling back to debootstrap")
        return None
    root_tag = f"optrunner/root:{spec.tag().split(':')[1]}"
    container = scratch_container(client, spec.base, network=True)
    try:
        progress(f"base image: apt-get install {' '.join(spec.packages)}")
        run_step(container, "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                 f"--no-install-recommends {' '.join(spec.packages)} && rm -rf /var/lib/apt/lists/*",
                 "base image")
        commit_image(container, root_tag, {}, {LABEL: "root"})
    finally:
        container.remove(force=True)
    return root_tag


def _root_from_debootstrap(client: docker.DockerClient, spec: BaseImageSpec, progress: Progress) -> str:
    root_tag = f"optrunner/root:{spec.tag().split(':')[1]}"
    if image_exists(client, root_tag):
        return root_tag
    if not shutil.which("debootstrap"):  # installing it is setup's job (harness.sandbox.docker.engine)
        raise ImageBuildError("base image: the registry is unreachable and debootstrap is not installed; run "
                              "'optrunner setup' (or 'apt-get install debootstrap'), or pass a reachable base image")
    with tempfile.TemporaryDirectory(prefix="optrunner-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        progress(f"base image: debootstrap {DEBIAN_SUITE} (about a minute)")
        _host(f"debootstrap --variant=minbase --include={','.join(spec.packages)} {DEBIAN_SUITE} {rootfs} "
              f"{DEBIAN_MIRROR}", "base image: debootstrap")
        _host(f"rm -rf {rootfs}/var/cache/apt/archives/*.deb {rootfs}/var/lib/apt/lists/*", "base image: clean")
        progress(f"base image: docker import as {root_tag}")
        _host(f"tar -C {rootfs} -c . | docker import - {root_tag}", "base image: docker import")
    return root_tag


def _host(cmd: str, what: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise ImageBuildError(f"{what}: command failed (exit {done.returncode}): {cmd}\n"
                              f"{_tail(done.stdout + done.stderr)}")


# ---------------------------------------------------------------- task images

def ensure_task_image(client: docker.DockerClient, task: Task, base_tag: str, progress: Progress = print) -> str:
    tag = task_image_tag(task, base_tag)
    if image_exists(client, tag):
        return tag
    progress(f"[{task.id}] building {tag}")
    container = scratch_container(client, base_tag, network=True)
    try:
        if task.base_commit:
            sha = _checkout_history(container, task)
        else:
            container.put_archive(TESTBED, repo_tar(task))
            # One fresh commit of the tree: no history, so no later commit is reachable from the image.
            sha = run_step(container, BASE_COMMIT, f"task {task.id}: git init", env=GIT_ENV, workdir=TESTBED)
        for kind, commands in (("setup", task.setup_commands), ("install", task.install_steps)):
            for cmd in commands:
                progress(f"[{task.id}] {kind}: {cmd.splitlines()[0]}{' ...' if chr(10) in cmd else ''}")
                run_step(container, cmd, f"task {task.id}: {kind} command", workdir=TESTBED)
        # (Images with history are for grading; their agent layer activates the venv.)
        env = {} if task.base_commit else activate_venv(container, f"task {task.id}: venv activation")
        commit_image(container, tag, env, {LABEL: "task", "optrunner.task": task.id,
                                           BASE_COMMIT_LABEL: _head(container, task, sha)})
    finally:
        container.remove(force=True)
    progress(f"[{task.id}] ready")
    return tag


def _head(container: Container, task: Task, said: str) -> str:
    """The base commit a build step printed last; asked again when its output came back empty (the engine
    loses a short exec's output now and then under load: seen once in 1,200 tests)."""
    for _ in range(3):
        last = (said.strip().splitlines() or [""])[-1]
        if re.fullmatch(r"[0-9a-f]{40}(?:[0-9a-f]{24})?", last):
            return last
        said = run_step(container, "git rev-parse HEAD", f"task {task.id}: base commit", workdir=TESTBED)
    raise ImageBuildError(f"task {task.id}: the base commit could not be read from /testbed (git rev-parse "
                          f"printed {said.strip()[:80]!r})")


def activate_venv(container: Container, what: str, path: str = DEFAULT_PATH) -> dict[str, str]:
    """Make the task's virtualenv, if it has one, every shell's python: the image ENV to commit (returned,
    with `path` after the venv) and /etc/profile.d for login shells."""
    if "optrunner-venv" not in run_step(container, VENV_FOUND, what):
        return {}
    run_step(container, VENV_PROFILE, what)
    return venv_env(path)


def _checkout_history(container: Container, task: Task) -> str:
    """/testbed as a clone of the task's repository, HEAD detached at the base commit (GSO's layout)."""
    with tempfile.TemporaryFile() as archive:
        repository_tar(task, archive, "/.optrunner-mirror.git")
        archive.seek(0)
        container.put_archive("/", archive)
    return run_step(container, f"git clone -q --no-checkout /.optrunner-mirror.git {TESTBED} && cd {TESTBED} && "
                    f"git checkout -q --detach {shlex.quote(task.base_commit or '')} && git remote remove origin && "
                    "rm -rf /.optrunner-mirror.git && git rev-parse HEAD", f"task {task.id}: clone", env=GIT_ENV)


def base_commit_of(client: docker.DockerClient, tag: str) -> str:
    labels = client.images.get(tag).labels or {}
    if BASE_COMMIT_LABEL not in labels:
        raise ImageBuildError(f"image {tag} has no {BASE_COMMIT_LABEL} label: "
                              "rebuild it with 'optrunner build'")
    return labels[BASE_COMMIT_LABEL]
