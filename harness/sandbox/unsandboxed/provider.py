"""The unsandboxed provider (`sandbox=unsandboxed`, with `sandbox.rootfs=host`): see __init__.py.

A task's image is a folder of ROOT/images: its repository with one fresh commit, its set-up and install
commands run there by a builder user (never root), and the host's interpreter and CUDA for a task that needs
GPUs (harness.sandbox.hostextras: a `python3` wrapper first on PATH, CUDA's variables). Named
`unsandboxed/task-<id>:<digest>`, the digest covering its inputs and this host's identity.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harness.gpus import Gpu
from harness.sandbox import diskcheck, hostextras
from harness.sandbox.interface import (BASE_COMMIT_LABEL, DEFAULT_BASE_IMAGE, ImageBuildError, ImageConfig,
                                       SandboxError, SandboxLimits, SandboxUnavailable, TaskImages)
from harness.sandbox.providers import CleanupScope, Progress, SandboxProvider
from harness.sandbox.taskimage.contents import BASE_COMMIT, DEFAULT_PATH, GIT_ENV, IMAGE_ENV, repo_tar, task_image_tag
from harness.sandbox.unsandboxed import state
from harness.sandbox.unsandboxed.sandbox import PROVIDER, HostSandbox, Image, remove_states

if TYPE_CHECKING:
    from harness.tasks.task import Task

VERSION = "unsandboxed-1"  # bump when what an image holds changes
ENGINE = "none: plain processes of this host (sandbox=unsandboxed: no isolation)"
NO_SANDBOX = "no sandbox: each state runs as plain processes of this host (sandbox=unsandboxed)"


class UnsandboxedProvider:
    name = PROVIDER

    def ensure_ready(self, disk: str | None = None, output_dir: Path | None = None) -> None:
        if os.geteuid() != 0:
            raise SandboxUnavailable("sandbox=unsandboxed runs as root (each state's processes drop to users of "
                                     "their own): run it as root")
        if Path("/proc/sys/fs/protected_hardlinks").read_text().strip() == "0":
            raise SandboxUnavailable("sandbox=unsandboxed needs fs.protected_hardlinks=1 (most systems' default): "
                                     "else a state's user could link the host's files into folders root's "
                                     "commands change (sysctl -w fs.protected_hardlinks=1)")
        taken = state.refused_paths()
        if taken:
            raise SandboxUnavailable(f"sandbox=unsandboxed points {taken[0]} at each graded state, and it is this "
                                     "host's own: move it away")
        if disk is not None:
            state.make_root()
            diskcheck.check_free(disk, [("the unsandboxed states' folder", state.ROOT)], output_dir)

    def setup(self, progress: Progress = print) -> None:
        self.ensure_ready()
        progress("sandbox=unsandboxed needs nothing installed (it runs plain processes of this host)")

    def ensure_images(self, tasks: Sequence["Task"], base_image: str = DEFAULT_BASE_IMAGE,
                      progress: Progress = print, base_map: Mapping[str, str] | None = None,
                      rootfs_from: str = "image") -> dict[str, TaskImages]:
        if rootfs_from != "host":
            raise SandboxUnavailable("sandbox=unsandboxed runs over this host's own system: add sandbox.rootfs=host "
                                     "(grading commands: --rootfs host)")
        self.ensure_ready()
        for task in tasks:  # every task checked before any is built
            why = refusal(task)
            if why:
                raise ImageBuildError(why)
        return {task.id: _image(task, progress) for task in tasks}

    def start(self, image: str, limits: SandboxLimits | None = None, labels: dict[str, str] | None = None,
              gpus: Sequence[Gpu] = ()) -> HostSandbox:
        self.ensure_ready()
        return HostSandbox.start(lookup(image), limits, labels, gpus)

    def engine_version(self) -> str | None:
        return f"{ENGINE}, Linux {platform.release()}"

    def image_id(self, name: str) -> str | None:
        try:
            return lookup(name).directory.name
        except SandboxError:
            return None

    def add_folder(self, image: str, source: Path, dest: str, kind: str, progress: Progress = print,
                   then: str = "") -> str:
        raise SandboxUnavailable("installed agents run in task images (sandbox=docker or bwrap), not as plain "
                                 "processes of the host")

    def has_image(self, name: str) -> bool:
        return self.image_id(name) is not None

    def export_image(self, name: str) -> Iterator[bytes]:
        raise SandboxUnavailable("sandbox=unsandboxed runs on one machine: its images do not move to others")

    def import_image(self, pieces: Iterable[bytes]) -> None:
        raise SandboxUnavailable("sandbox=unsandboxed runs on one machine: its images do not move to others")

    def export_files(self, name: str, out: IO[bytes]) -> ImageConfig:
        raise SandboxError("sandbox=unsandboxed images are folders of this host, not image files")

    def import_checkpoint(self, name: str, base: str, archives: Sequence[bytes],
                          labels: dict[str, str] | None = None) -> None:
        raise SandboxError("sandbox=unsandboxed keeps no checkpoints")

    def remove_image(self, name: str) -> None:
        """No checkpoint is ever made here: nothing to remove."""

    def cleanup_checkpoints(self, scope: CleanupScope = "orphans") -> int:
        return 0

    def cleanup(self, scope: CleanupScope = "orphans", labels: dict[str, str] | None = None) -> int:
        return remove_states(scope, labels)


def refusal(task: "Task") -> str | None:
    """Why `task` cannot run unsandboxed (one line), or None when it can."""
    if task.environment is not None or task.reward_check is not None:
        return f"task {task.id} is built from its Dockerfile; sandbox=unsandboxed runs folder tasks only"
    if task.service is not None:
        return f"task {task.id} serves on its own loopback, which plain processes of this host do not have; " \
               "use a sandbox (sandbox=docker or bwrap)"
    if task.base_commit or task.prebuilt_image:
        return f"task {task.id} comes from a repository's history or an image; sandbox=unsandboxed runs folder " \
               "tasks only"
    return None


def lookup(name: str) -> Image:
    """The image `name` names (SandboxError when it is not built here)."""
    digest = name.rpartition(":")[2]
    folder = state.IMAGES / digest
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        raise SandboxError(f"unsandboxed: no image {name} on this host (built by ensure_images)") from None
    return Image(meta["name"], folder, dict(meta["env"]), dict(meta["labels"]))


def _image(task: "Task", progress: Progress) -> TaskImages:
    extra = hostextras.extras(needs_gpu=task.gpus > 0)
    parts = [VERSION, task_image_tag(task, "unsandboxed"), platform.machine(), platform.python_version(),
             _file_digest("/etc/os-release"), _file_digest("/usr/bin/python3"), extra.key()]
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    name = f"unsandboxed/task-{task.id.lower()}:{digest}"
    adapted = (NO_SANDBOX, *extra.adapted())
    final = state.IMAGES / digest
    if (final / "meta.json").is_file():
        return TaskImages(agent=name, grading=name, adapted=adapted)
    _check_others_run(task, extra.python or hostextras.SYSTEM_PYTHON)
    progress(f"[{task.id}] building its folder on this host (no sandbox)")
    state.make_root()
    work = Path(tempfile.mkdtemp(prefix=".img-", dir=state.IMAGES))
    try:
        work.chmod(0o755)
        env = {"PATH": DEFAULT_PATH, **IMAGE_ENV}
        if extra.python:  # (the wrapper's folder as it will be named once built: ours, first on PATH)
            (work / "bin").mkdir(mode=0o755)
            for wrapper in (Path(path).name for path in hostextras.WRAPPED):
                (work / "bin" / wrapper).write_text(extra.wrapper())
                (work / "bin" / wrapper).chmod(0o755)
            env["PATH"] = f"{final}/bin:{env['PATH']}"
        env = extra.apply(env)
        head = _repository(task, work / "testbed")
        labels = {BASE_COMMIT_LABEL: head, "optrunner.task": task.id}
        if task.setup_commands or task.install_steps:
            _build(task, Image(name, work, _at(env, final, work), labels), work / "testbed", progress)
        (work / "meta.json").write_text(json.dumps({"name": name, "env": env, "labels": labels}, indent=1))
        shutil.rmtree(final, ignore_errors=True)
        work.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return TaskImages(agent=name, grading=name, adapted=adapted)


def _check_others_run(task: "Task", python: str) -> None:
    """ImageBuildError (one line) when a user of no account cannot start the task's interpreter (and import torch
    for a GPU task): its tests run as such users here, and an interpreter under a private home (root's 0700
    /root) is out of their reach."""
    probe = "import torch" if task.gpus else "import sys"
    uid = state.UID_BASE + 2 * state.SLOTS  # (beyond every slot's users)
    try:
        done = subprocess.run([python, "-c", probe], user=uid, group=uid, extra_groups=[], capture_output=True,
                              text=True, cwd="/", env={"PATH": DEFAULT_PATH}, timeout=300)
        said = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired) as err:
        done, said = None, str(err)
    if done is None or done.returncode != 0:
        raise ImageBuildError(f"task {task.id}: {python} cannot be run by another user ({said[:200]}); tests run "
                              "as users of their own with sandbox=unsandboxed: give sandbox.host_python an "
                              "interpreter (and packages) every user can read")


def _repository(task: "Task", testbed: Path) -> str:
    """The task's repository at `testbed`, one commit (the same sha on every machine); that commit."""
    with tarfile.open(fileobj=io.BytesIO(repo_tar(task))) as tar:
        tar.extractall(testbed, filter="data")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", BASE_COMMIT], cwd=testbed, capture_output=True,
                          text=True, env={"PATH": DEFAULT_PATH, "HOME": str(testbed.parent), **GIT_ENV,
                                          "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})
    if done.returncode != 0:
        raise ImageBuildError(f"task {task.id}: git init failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return done.stdout.strip().splitlines()[-1]


def _build(task: "Task", image: Image, testbed: Path, progress: Progress) -> None:
    """The task's set-up and install commands, as a state's builder in a state of their own; its work tree
    is the image's then (root's)."""
    box = HostSandbox.start(image, SandboxLimits(network=True, memory="64g", pids=8192))
    try:
        for kind, commands in (("setup", task.setup_commands), ("install", task.install_steps)):
            for cmd in commands:
                progress(f"[{task.id}] {kind}: {cmd.splitlines()[0]}")
                done = box.exec(cmd, timeout=task.build_timeout)
                if done.exit_code != 0:
                    raise ImageBuildError(f"task {task.id}: {kind} command '{cmd}' failed on this host as an "
                                          f"unprivileged user (exit {done.exit_code})\n{done.output.strip()[-500:]}")
        shutil.rmtree(testbed)
        shutil.copytree(box.files / "testbed", testbed, symlinks=True)
    finally:
        box.close()
    for folder, dirs, names in os.walk(testbed):
        for entry in [folder, *(os.path.join(folder, n) for n in [*dirs, *names])]:
            os.chown(entry, 0, 0, follow_symlinks=False)


def _at(env: dict[str, str], final: Path, work: Path) -> dict[str, str]:
    """`env` with the image's own folder as it is named while it is built."""
    return {k: v.replace(str(final), str(work)) for k, v in env.items()}


def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "-"



if TYPE_CHECKING:  # `make typecheck` holds this provider to the whole protocol
    def _conforms(made: UnsandboxedProvider) -> SandboxProvider:
        return made
