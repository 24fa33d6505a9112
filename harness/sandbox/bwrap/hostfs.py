"""`sandbox.rootfs=host`: sandboxes over the host's own system, for machines with no Docker at all.

A sandbox sees the host's system directories (/usr, /lib*, and the links /bin -> usr/bin of a merged
/usr) and an /etc made from an allow-list of the host's (hostetc.py), each as an overlay: read-only
underneath, writable into the sandbox's own layer. It sees nothing else of the host: not its /etc or
/opt, no home directory, no /tmp, no /var, no /mnt (OPTRUNNER_BWRAP_HOST_DIRS adds folders, read-only).
A task's own layer is built once in such a sandbox (with the network, through slirp4netns) and cached like an
image (ROOTFS/host-<hash>, named `host/<kind>-<id>:<hash>`, the hash covering its inputs and the host's
identity). What goes into it, per kind of task:
- a folder task: its repository at /testbed, one fresh commit, its set-up and install commands;
- a GSO row: /testbed cloned from the row's repository at the base commit (all history, for grading),
  then two thin layers above, as the Docker provider's images: the history after the base commit cut
  (where graded base and patch states start) and the agent's (hidden paths removed, the venv every
  shell's python);
- a Harbor task: its Dockerfile's instructions over the host (recipe.py), then the working directory
  snapshotted into a git directory outside it, as the Docker provider's workspace layer.
A prebuilt image cannot be made this way: refused in one line, as is a Dockerfile step that cannot.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.sandbox import hostextras
from harness.sandbox.bwrap import ids, recipe, rootfs
from harness.sandbox.hostextras import HostExtras
from harness.sandbox.bwrap.rootfs import ROOTFS, empty_layer, host_rootfs, layer_chain
from harness.sandbox.interface import (BASE_COMMIT_LABEL, GIT_DIR_LABEL, PINS_LABEL, TESTBED, WORKDIR_LABEL,
                                       ImageBuildError, SandboxLimits, TaskImages)
from harness.sandbox.providers import Progress
from harness.sandbox.taskimage.contents import (ADAPTED, BASE_COMMIT, CUT_HISTORY, DEFAULT_PATH, GIT_ENV, IMAGE_ENV,
                                                VENV_FOUND, VENV_PROFILE, repo_tar, task_image_tag, venv_env)
from harness.sandbox.taskimage.history import repository_tar
from harness.sandbox.taskimage.workspace import GIT_DIR, PINS, SNAPSHOT, parse_pins, pins_command

if TYPE_CHECKING:
    from harness.sandbox.bwrap.sandbox import BwrapSandbox
    from harness.tasks.task import Task

VERSION = "hostfs-4"  # bump when what a layer holds changes
Build = Callable[["BwrapSandbox"], tuple[dict[str, str], dict[str, str], str]]  # -> ENV, labels, WORKDIR


def host_identity() -> str:
    """What a task layer built over this host depends on: its system, its python, and whose ids its files
    carry (ids.py)."""
    parts = [platform.machine(), platform.python_version(), str(ids.BASE if ids.shifted() else os.geteuid())]
    for path in ("/etc/os-release", "/usr/bin/python3"):
        try:
            parts.append(hashlib.sha256(Path(path).read_bytes()).hexdigest())
        except OSError:
            parts.append("-")
    return "\n".join(parts)


def refusal(task: "Task") -> str | None:
    """Why `task` cannot be built over the host (one line), or None when it can."""
    if task.environment is not None:
        try:
            recipe.read(task.environment)
        except recipe.NotReplayable as why:
            return f"task {task.id}: {why}"
        return None
    if task.prebuilt_image and not task.base_commit:
        return f"task {task.id} comes as a prebuilt image ({task.prebuilt_image}); use sandbox.rootfs=image"
    if task.reward_check is not None:
        return f"task {task.id} has no Dockerfile to build its environment from; use sandbox.rootfs=image"
    return None


def ensure_layers(task: "Task", progress: Progress = print) -> TaskImages:
    """`task`'s layers over this host (built when not cached), named as the Docker provider's images are."""
    extra = hostextras.extras(needs_gpu=task.gpus > 0)  # the host's python3 and CUDA, when it has them
    if task.environment is not None:  # (its recipe's refusals come from reading it, in _harbor)
        return _harbor(task, progress, extra)
    why = refusal(task)
    if why:
        raise ImageBuildError(why)
    inputs, adapted = task_image_tag(task, "host"), tuple(extra.adapted())
    if task.base_commit:
        grading = _layer(task, "task", inputs, None, f"[{task.id}] building its layer over this host",
                         lambda box: _from_history(task, box, progress), progress, extra)
        if not (task.opt_commit or task.agent_hides):
            return TaskImages(agent=grading, grading=grading, adapted=adapted)
        cut = _layer(task, "cut", CUT_HISTORY, grading, f"[{task.id}] history after the base commit cut",
                     lambda box: _cut(task, box), progress, extra)
        agent = _layer(task, "agent", "\n".join(task.agent_hides), cut, f"[{task.id}] agent layer",
                       lambda box: _agent(task, box), progress, extra)
        return TaskImages(agent=agent, grading=grading, base=cut if task.opt_commit else "", adapted=adapted)
    name = _layer(task, "task", inputs, None, f"[{task.id}] building its layer over this host",
                  lambda box: _from_folder(task, box, repo_tar(task), progress), progress, extra)
    return TaskImages(agent=name, grading=name, adapted=adapted)


def _layer(task: "Task", kind: str, inputs: str, parent: str | None, say: str, build: Build,
           progress: Progress, extra: HostExtras) -> str:
    """The name of a layer over the host (on `parent`'s layers, if any), built by `build` when not cached;
    the first layer writes the host interpreter's wrappers (hostextras.py), every one binds its folders."""
    from harness.sandbox.bwrap.sandbox import BwrapSandbox

    parent_ident = rootfs.ident_of(parent) if parent else ""
    parts = [VERSION, kind, inputs, host_identity(), parent_ident] + ([extra.key()] if extra.key() else [])
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    name, ident = f"host/{kind}-{task.id.lower()}:{digest}", f"host-{digest}"
    if (ROOTFS / ident / "meta.json").is_file():
        return rootfs.record_name(name, ident).name
    progress(say)
    ROOTFS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".host-", dir=ROOTFS))
    try:
        empty_layer(work)
        under = rootfs.lookup(parent) if parent else None
        layers = (work, *(layer_chain(parent_ident) if parent else ()))  # (work: empty until the build is done)
        base_env = under.env if under else extra.apply({"PATH": DEFAULT_PATH})
        base = host_rootfs(name, layers, {"env": base_env, "workdir": under.workdir if under else "/",
                                          "labels": under.labels if under else {}, "binds": list(extra.binds)})
        box = BwrapSandbox.start(base, SandboxLimits(network=True, memory="64g", pids=8192))
        try:
            if parent is None and extra.setup():
                _run(task, box, extra.setup(), "putting in the host's python3 and CUDA", cwd="/")
            env, labels, workdir = build(box)
            env = extra.apply(env)
            box.stop()
            for mount in base.mounts:  # the sandbox's writes are the layer
                written = box.upper / mount.key
                if written.is_dir():
                    shutil.rmtree(work / mount.key)
                    written.rename(work / mount.key)
        finally:
            box.close()
        meta = {"kind": "host", "name": name, "parent": parent_ident, "workdir": workdir, "env": env,
                "labels": {"optrunner.task": task.id, **labels}, "binds": list(extra.binds)}
        (work / "meta.json").write_text(json.dumps(meta, indent=1))  # last: a half-made layer is not found
        if (ROOTFS / ident).exists():
            shutil.rmtree(ROOTFS / ident, ignore_errors=True)
        work.rename(ROOTFS / ident)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rootfs.record_name(name, ident).name


def _run(task: "Task", box: "BwrapSandbox", cmd: str, what: str, cwd: str = TESTBED,
         env: dict[str, str] | None = None) -> str:
    done = box.exec(cmd, timeout=task.build_timeout, cwd=cwd, env=env)
    if done.exit_code != 0:
        raise ImageBuildError(f"task {task.id}: {what} failed over this host's system (exit {done.exit_code})\n"
                              f"{done.output.strip()[-500:]}")
    return done.output


def _commands(task: "Task", box: "BwrapSandbox", progress: Progress) -> None:
    for kind, commands in (("setup", task.setup_commands), ("install", task.install_steps)):
        for cmd in commands:
            progress(f"[{task.id}] {kind}: {cmd.splitlines()[0]}")
            _run(task, box, cmd, f"{kind} command '{cmd}'")


def _image_env(box: "BwrapSandbox", task: "Task") -> dict[str, str]:
    """What a task image's shells get (IMAGE_ENV), with the task's venv first when it has one."""
    env = {"PATH": DEFAULT_PATH, **IMAGE_ENV}
    if "optrunner-venv" in _run(task, box, VENV_FOUND, "venv activation", cwd="/"):
        _run(task, box, VENV_PROFILE, "venv activation", cwd="/")
        env.update(venv_env(DEFAULT_PATH))
    return env


def _from_folder(task: "Task", box: "BwrapSandbox", repository: bytes,
                 progress: Progress) -> tuple[dict[str, str], dict[str, str], str]:
    box.unpack(repository, TESTBED)
    head = _run(task, box, BASE_COMMIT, "git init", env=GIT_ENV)
    _commands(task, box, progress)
    return _image_env(box, task), {BASE_COMMIT_LABEL: head.strip().splitlines()[-1]}, TESTBED


def _from_history(task: "Task", box: "BwrapSandbox",
                  progress: Progress) -> tuple[dict[str, str], dict[str, str], str]:
    """/testbed as a clone of the row's repository at the base commit, all history kept (GSO's layout)."""
    with tempfile.TemporaryFile() as archive:
        repository_tar(task, archive, "/.optrunner-mirror.git")
        archive.seek(0)
        box.unpack(archive.read(), "/")
    head = _run(task, box, f"git clone -q --no-checkout /.optrunner-mirror.git {TESTBED} && cd {TESTBED} && "
                f"git checkout -q --detach {shlex.quote(task.base_commit or '')} && git remote remove origin && "
                "rm -rf /.optrunner-mirror.git && git rev-parse HEAD", "clone", cwd="/", env=GIT_ENV)
    _commands(task, box, progress)
    # (no venv on the path: as the Docker provider's grading image, the agent's layer activates it)
    return {"PATH": DEFAULT_PATH, **IMAGE_ENV}, {BASE_COMMIT_LABEL: head.strip().splitlines()[-1]}, TESTBED


def _cut(task: "Task", box: "BwrapSandbox") -> tuple[dict[str, str], dict[str, str], str]:
    head = _run(task, box, CUT_HISTORY, "history cut").strip().splitlines()[-1]
    if task.opt_commit and box.exec(f"git cat-file -e {shlex.quote(task.opt_commit)}", timeout=60).exit_code == 0:
        raise ImageBuildError(f"task {task.id}: history cut: the expert's commit {task.opt_commit[:12]} is "
                              "still reachable")
    return dict(box.rootfs.env), {BASE_COMMIT_LABEL: head}, TESTBED


def _agent(task: "Task", box: "BwrapSandbox") -> tuple[dict[str, str], dict[str, str], str]:
    if task.agent_hides:
        _run(task, box, f"rm -rf {' '.join(shlex.quote(p) for p in task.agent_hides)}", "agent layer", cwd="/")
    env = _image_env(box, task)
    return env, {BASE_COMMIT_LABEL: box.rootfs.labels[BASE_COMMIT_LABEL]}, TESTBED


def _harbor(task: "Task", progress: Progress, extra: HostExtras) -> TaskImages:
    """A Harbor task: its Dockerfile's steps over the host, then its working directory snapshotted."""
    assert task.environment is not None
    try:
        steps = recipe.read(task.environment)
    except recipe.NotReplayable as why:
        raise ImageBuildError(f"task {task.id}: {why}") from None
    pinned = task.reward_check.pinned if task.reward_check else ()
    context = sorted(p for p in task.environment.rglob("*") if p.is_file())
    inputs = hashlib.sha256(b"".join([SNAPSHOT.encode(), PINS.encode(), json.dumps([pinned, steps.adapted]).encode()]
                                     + [str(p.relative_to(task.environment)).encode() + p.read_bytes()
                                        for p in context])).hexdigest()
    if steps.workdir == "/":
        raise ImageBuildError(f"task {task.id}: the Dockerfile works in / (no WORKDIR); the agent's working "
                              "directory must be a folder of its own")

    def build(box: "BwrapSandbox") -> tuple[dict[str, str], dict[str, str], str]:
        for change in steps.adapted:
            progress(f"[{task.id}] over the host: {change}")
        env = {"PATH": DEFAULT_PATH, **steps.env}
        for step in steps.steps:
            progress(f"[{task.id}] {step.text[:100]}")
            if step.kind == "copy":
                box.unpack(step.archive, "/")
                continue
            # (exported after the login shell's profile, which resets PATH: a RUN sees the recipe's ENV, as in
            # Docker, whose RUN is no login shell)
            exports = "".join(f"export {name}={shlex.quote(value)}; " for name, value in step.env)
            done = box.exec(exports + step.command, timeout=task.build_timeout, cwd=step.workdir)
            if done.exit_code != 0:
                tail = done.output.strip()[-500:]
                raise ImageBuildError(f"task {task.id}: '{step.text[:120]}' failed over this host's system (exit "
                                      f"{done.exit_code}); a step that needs what the host lacks cannot be built "
                                      f"with sandbox.rootfs=host: use sandbox.rootfs=image\n{tail}")
        what = "the workspace snapshot"
        head = _run(task, box, SNAPSHOT.format(git_dir=GIT_DIR, workdir=shlex.quote(steps.workdir)), what, cwd="/",
                    env=GIT_ENV).strip().splitlines()[-1]
        pins = parse_pins(_run(task, box, pins_command(steps.workdir, pinned), what, cwd="/"), what) if pinned else {}
        return env, {BASE_COMMIT_LABEL: head, WORKDIR_LABEL: steps.workdir, GIT_DIR_LABEL: GIT_DIR,
                     PINS_LABEL: json.dumps(pins, sort_keys=True), ADAPTED: json.dumps(steps.adapted)}, steps.workdir

    name = _layer(task, "harbor", inputs, None, f"[{task.id}] building its environment over this host", build,
                  progress, extra)
    return TaskImages(agent=name, grading=name, adapted=(*steps.adapted, *extra.adapted()))
