"""Our containers on the Docker engine: the shared client, labels, and every way they are removed.

Each container carries LABEL and OWNER_LABEL (host:pid of the process that started it). This process
keeps a registry of the containers it has running, removed on close(), at interpreter exit and on
SIGTERM/SIGINT when no other handler was installed. `remove_containers` is the one cleanup function:
`python -m harness cleanup` (orphans, or all) and the runner's second Ctrl-C (this process's own).

Every sandbox container is also hardened (`hardening_options`): all capabilities dropped but the few the
grader's fence needs, no new privileges, a file descriptor limit; and its writable layer is limited to
`sandbox.disk` where the engine's storage driver can do that (`create_container`; where it cannot, the
container's DISK_LABEL says why, and `engine_storage` tells anyone who asks).
"""
from __future__ import annotations

import os
import socket
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import docker
import docker.errors
import docker.types
import requests.exceptions
from docker.models.containers import Container

from harness.sandbox import kept
from harness.sandbox import live
from harness.sandbox.interface import memory_bytes

LABEL = "optrunner"  # every container and image we make carries this label
OWNER_LABEL = "optrunner.owner"  # host:pid of the process that started the container
Scope = Literal["orphans", "mine", "all"]


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@lru_cache(maxsize=1)
def docker_client() -> docker.DockerClient:
    """One client per process; docker-py clients are safe to share across threads."""
    return docker.from_env(max_pool_size=32, timeout=300)


# ---------------------------------------------------------------- hardening and storage
# Root in a sandbox keeps only what the grader's fence does as root (harness.grader.isolation): setpriv
# drops to an unprivileged user (SETUID, SETGID), chown hands a folder to it (CHOWN), chmod and rm of that
# user's files and folders (FOWNER, DAC_OVERRIDE), and stopping that user's processes (KILL: `timeout`);
# and NET_BIND_SERVICE, which a task's own service on a port below 1024 (a Harbor environment's web server
# on 80) needs and which reaches nothing outside the sandbox's network namespace. Docker's other defaults
# go: MKNOD, NET_RAW, SYS_CHROOT, SETPCAP, SETFCAP, FSETID, AUDIT_WRITE. Images are built with Docker's
# defaults (apt, pip, git run then, not here). The bwrap provider keeps the same set
# (harness.sandbox.bwrap.hardening.CAPS).
KEPT_CAPS = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE")
# Open files per process (soft and hard: a process cannot raise it, CAP_SYS_RESOURCE is gone). Builds and
# test suites stay far below; a runaway descriptor leak stops at it instead of at the host's table.
NOFILE = 16384
DISK_LABEL = "optrunner.disk"  # the size limit of the container's writable layer, or why it has none
# Storage drivers that limit a container's writable layer (`--storage-opt size=`); overlay2 does only over
# xfs mounted with project quotas (pquota), which `docker info` does not show: tried once, then known.
SIZE_DRIVERS = ("devicemapper", "btrfs", "zfs")


def hardening_options() -> dict[str, Any]:
    """docker-py's options that take from a sandbox's root what it does not need."""
    return dict(cap_drop=["ALL"], cap_add=list(KEPT_CAPS), security_opt=["no-new-privileges:true"],
                ulimits=[docker.types.Ulimit(name="nofile", soft=NOFILE, hard=NOFILE)])


@dataclass
class EngineStorage:
    """What an engine's storage can do, from `docker info` once per engine (and one refused try)."""
    driver: str
    backing: str  # the file system under the driver ("extfs", "xfs", ...), "" when not reported
    root_dir: str  # the engine's data root (its images and containers' layers), as the engine names it
    size_limits: bool | None  # whether `storage_opt={"size": ...}` works; None: not known until tried
    note: str = ""  # why it does not, in words

    def label(self, disk: str) -> str:
        """DISK_LABEL's value on a container: the limit applied, or why there is none."""
        return disk if self.size_limits is not False else f"none ({self.note})"


# By client: one client talks to one engine (every unix socket has the same base_url, so it cannot be the key).
_storage: weakref.WeakKeyDictionary[docker.DockerClient, EngineStorage] = weakref.WeakKeyDictionary()
_storage_lock = threading.Lock()


def engine_storage(client: docker.DockerClient) -> EngineStorage:
    """The engine's storage, asked once per client (the process's shared one: once) and remembered."""
    with _storage_lock:
        if client in _storage:
            return _storage[client]
    info = client.info()
    status = dict((str(k), str(v)) for k, v in (info.get("DriverStatus") or []) if k)
    driver, backing = str(info.get("Driver") or ""), status.get("Backing Filesystem", "")
    if driver in SIZE_DRIVERS:
        known: bool | None = True
    elif driver in ("overlay2", "overlay") and backing == "xfs":
        known = None  # only with project quotas: the first container says
    else:
        known = False
    note = "" if known is not False else f"the {driver or 'unknown'} storage driver" + \
        (f" over {backing}" if backing else "") + " cannot limit a container's size"
    found = EngineStorage(driver, backing, str(info.get("DockerRootDir") or ""), known, note)
    with _storage_lock:
        return _storage.setdefault(client, found)


def create_container(client: docker.DockerClient, image: str, command: Sequence[str], options: dict[str, Any],
                     disk: str) -> Container:
    """`client.containers.create` with the writable layer limited to `disk` where the engine can do that;
    elsewhere without a limit, recorded in the container's DISK_LABEL (a refusal of the engine to limit
    the size is remembered: asked once per engine, not once per container)."""
    storage = engine_storage(client)
    labels = dict(options.get("labels") or {})
    if disk.strip() == "0":  # sandbox.disk=0: no limit asked for
        return client.containers.create(image, list(command), **{**options, "labels": {
            **labels, DISK_LABEL: "none (sandbox.disk=0)"}})
    if storage.size_limits is not False:
        size = str(memory_bytes(disk) or disk)  # in bytes: every driver's size parser takes a plain number
        try:
            made = client.containers.create(image, list(command), **{
                **options, "storage_opt": {"size": size}, "labels": {**labels, DISK_LABEL: disk}})
            storage.size_limits = True
            return made
        except docker.errors.APIError as err:
            text = str(err.explanation or err)
            if storage.size_limits or not any(word in text.lower() for word in ("storage-opt", "storage_opt", "quota")):
                raise  # a real failure (a size below the image's, a missing image): not a missing feature
            storage.size_limits = False
            storage.note = (text.strip().splitlines() or ["refused"])[0][:200]
    return client.containers.create(image, list(command), **{**options, "labels": {**labels,
                                                                                  DISK_LABEL: storage.label(disk)}})


# ---------------------------------------------------------------- this process's live containers
# (harness.sandbox.live: one registry for every provider, closed at exit and on signals)
def track(container: Container) -> None:
    live.track("docker", container.id, lambda: _remove(container), _sweep)


def untrack(container: Container) -> None:
    live.untrack("docker", container.id)


def _remove(container: Container) -> None:
    try:
        container.remove(force=True)
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        pass  # already gone, or the engine is unreachable (nothing more can be done at exit)


def _sweep() -> None:
    """Every container carrying this process's owner label: one the engine created while its answer was
    lost (a daemon restart mid-request) was never tracked, and only its label still says whose it is."""
    try:
        remove_containers("mine")
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        pass


# ---------------------------------------------------------------- cleanup
def remove_containers(scope: Scope = "orphans", client: docker.DockerClient | None = None,
                      labels: dict[str, str] | None = None) -> int:
    """Remove containers carrying our label; returns how many were removed.

    orphans: those whose owning process on this host is gone (a crash, a kill -9) and stopped ones with no
             owner; containers of live processes, of other hosts (a shared engine) and running steps of
             image builds (no owner) are left alone;
    mine:    those this process started (the second Ctrl-C: no time for anything gentler);
    all:     every one of ours, also those of runs still going.
    `labels` narrows any scope to containers that also carry these labels (e.g. one run's).
    """
    client = client or docker_client()
    host, me = socket.gethostname(), owner_id()
    wanted = [LABEL, *(f"{k}={v}" for k, v in (labels or {}).items())]
    filters = {"label": [*wanted, f"{OWNER_LABEL}={me}"] if scope == "mine" else wanted}
    removed = 0
    owners: dict[str, str] = {}  # image id -> the owner label its containers inherit from it
    for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
        if scope == "orphans" and not _orphaned(container, host, _image_owner(client, container, owners)):
            continue
        try:
            container.remove(force=True)
            removed += 1
        except docker.errors.APIError:
            pass  # already gone, or its removal is already in progress
    return removed


def remove_checkpoints(scope: Scope = "orphans", client: docker.DockerClient | None = None) -> int:
    """Remove rollout checkpoint images (runner/checkpoints.py); returns how many were removed. orphans: those
    no checkpoint file of this host needs (harness.sandbox.kept); all: every one."""
    client = client or docker_client()
    removed = 0
    for image in client.images.list(filters={"label": f"{LABEL}=checkpoint"}):
        labels = image.labels or {}
        if scope == "orphans" and not kept.forgotten(labels, image.tags):
            continue
        try:
            client.images.remove(image.id, force=True)
            removed += 1
        except docker.errors.APIError:
            pass  # already gone
    return removed


def _image_owner(client: docker.DockerClient, container: Container, owners: dict[str, str]) -> str:
    """The owner label of the container's image: images committed from a build container carry the builder's
    (images made before commit_image cleared it), and a `docker build` step inherits it from its FROM image."""
    image_id = container.attrs.get("Image") or ""
    if image_id not in owners:
        try:
            owners[image_id] = (client.images.get(image_id).labels or {}).get(OWNER_LABEL, "")
        except docker.errors.APIError:
            owners[image_id] = ""
    return owners[image_id]


def _orphaned(container: Container, host: str, inherited: str = "") -> bool:
    owner = container.labels.get(OWNER_LABEL) or ""
    # an owner the container only inherited from its image is no owner: the process that built the image
    # ended long ago, while the container (a running build step) may be another run's work in progress
    # (a sandbox's owner is always its own: we set it)
    if owner == inherited and container.labels.get(LABEL) != "sandbox":
        owner = ""
    owner_host, _, pid = owner.rpartition(":")
    if not owner_host:
        # No owner: a running step of a `docker build` (it inherits our label from its FROM image, and the
        # engine removes it when the build ends or is cancelled) is left alone; any other is a leftover.
        return container.labels.get(LABEL) == "sandbox" or container.status != "running"
    if owner_host != host or not pid.isdigit():
        return False  # another machine's container: not ours to judge
    return not _process_alive(int(pid))


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
