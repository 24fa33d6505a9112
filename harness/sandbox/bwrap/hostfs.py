"""`sandbox.rootfs=host`: sandboxes over the host's own system, for machines with no Docker at all.

A sandbox sees the host's system directories (/usr, /etc, /opt, /lib*, and the links /bin -> usr/bin of
a merged /usr), each as an overlay: read-only underneath, writable into the sandbox's own layer. It sees
nothing else of the host: no home directory, no /tmp, no /var, no /mnt; the password hashes are masked.
A task's own layer (its repository at /testbed, what its set-up and install commands changed) is built
once per task in such a sandbox and cached like an image (ROOTFS/host-<hash>), named `host/task-<id>:<hash>`
with the inputs' hash and the host's identity in it. Only tasks whose recipe is a folder and commands can
be built this way; the others (a Dockerfile, a repository's history, a prebuilt image) are refused in
one line naming what they need.
"""
from __future__ import annotations

import hashlib
import json
import platform
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from harness.sandbox.bwrap import rootfs
from harness.sandbox.bwrap.rootfs import OWN, ROOT, ROOTFS, SYSTEM, Rootfs, host_rootfs
from harness.sandbox.interface import BASE_COMMIT_LABEL, ImageBuildError, SandboxLimits
from harness.sandbox.providers import Progress

if TYPE_CHECKING:
    from harness.tasks.task import Task

GIT_ENV = {"GIT_AUTHOR_NAME": "optrunner", "GIT_AUTHOR_EMAIL": "optrunner@localhost",
           "GIT_COMMITTER_NAME": "optrunner", "GIT_COMMITTER_EMAIL": "optrunner@localhost"}


def host_identity() -> str:
    """What a task layer built over this host depends on: its system and its python."""
    parts = [platform.machine(), platform.python_version()]
    for path in ("/etc/os-release", "/usr/bin/python3"):
        try:
            parts.append(hashlib.sha256(Path(path).read_bytes()).hexdigest())
        except OSError:
            parts.append("-")
    return "\n".join(parts)


def refusal(task: "Task") -> str | None:
    """Why `task` cannot be built over the host (one line), or None when it can."""
    if task.environment is not None:
        return f"task {task.id} is built from a Dockerfile ({task.environment}), which sandbox.rootfs=host cannot run"
    if task.base_commit:
        return f"task {task.id} is a commit of a repository's history, built in an image; use sandbox.rootfs=image"
    if task.prebuilt_image:
        return f"task {task.id} comes as a prebuilt image ({task.prebuilt_image}); use sandbox.rootfs=image"
    return None


def ensure_layer(task: "Task", progress: Progress = print) -> str:
    """The name of `task`'s layer over this host, built when it is not cached."""
    from harness.sandbox.docker.images import IMAGE_ENV, repo_tar, task_image_tag

    why = refusal(task)
    if why:
        raise ImageBuildError(why)
    digest = hashlib.sha256((task_image_tag(task, "host") + host_identity()).encode()).hexdigest()[:16]
    name = f"host/task-{task.id.lower()}:{digest}"
    ident = f"host-{digest}"
    if (ROOTFS / ident / "meta.json").is_file():
        return rootfs.record_name(name, ident).name
    progress(f"[{task.id}] building its layer over this host")
    ROOTFS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".host-", dir=ROOTFS))
    try:
        for top in (*SYSTEM, *OWN, ROOT):
            (work / top).mkdir()
        env = {"PATH": rootfs.DEFAULT_PATH, **IMAGE_ENV}  # what a task image's shells get
        base_commit = _build(task, host_rootfs(name, work, {"env": env}), repo_tar(task), work, progress)
        meta = {"kind": "host", "name": name, "workdir": "/testbed", "env": env,
                "labels": {BASE_COMMIT_LABEL: base_commit, "optrunner.task": task.id}}
        (work / "meta.json").write_text(json.dumps(meta, indent=1))
        target = ROOTFS / ident
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        work.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rootfs.record_name(name, ident).name


def _build(task: "Task", base: Rootfs, repository: bytes, layer: Path, progress: Progress) -> str:
    """Run the task's recipe in a sandbox over `base`; its writes become `layer`. Returns the base commit."""
    from harness.sandbox.bwrap.sandbox import BwrapSandbox

    box = BwrapSandbox.start(base, SandboxLimits(network=True, memory="64g", pids=8192))
    try:
        box.unpack(repository, "/testbed")
        done = box.exec("git init -q && git add -A && git commit -q -m 'base commit' && git rev-parse HEAD",
                        timeout=600, cwd="/testbed", env=GIT_ENV)
        if done.exit_code != 0:
            raise ImageBuildError(f"task {task.id}: git init failed\n{done.output.strip()[-500:]}")
        base_commit = done.output.strip().splitlines()[-1]
        for kind, commands in (("setup", task.setup_commands), ("install", task.install_steps)):
            for cmd in commands:
                progress(f"[{task.id}] {kind}: {cmd.splitlines()[0]}")
                done = box.exec(cmd, timeout=task.build_timeout, cwd="/testbed")
                if done.exit_code != 0:
                    raise ImageBuildError(f"task {task.id}: {kind} command '{cmd}' failed over the host\n"
                                          f"{done.output.strip()[-500:]}")
        box.stop()
        for mount in base.mounts:  # the sandbox's writes are the layer
            written = box.upper / mount.key
            if written.is_dir():
                shutil.rmtree(layer / mount.key)
                written.rename(layer / mount.key)
    finally:
        box.close()
    return base_commit
