"""Our containers on the Docker engine: the shared client, labels, and every way they are removed.

Each container carries LABEL and OWNER_LABEL (host:pid of the process that started it). This process
keeps a registry of the containers it has running, removed on close(), at interpreter exit and on
SIGTERM/SIGINT when no other handler was installed. `remove_containers` is the one cleanup function:
`python -m harness cleanup` (orphans, or all) and the runner's second Ctrl-C (this process's own).
"""
from __future__ import annotations

import atexit
import os
import signal
import socket
import sys
import threading
from functools import lru_cache
from typing import Literal

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import Container

LABEL = "optrunner"  # every container and image we make carries this label
OWNER_LABEL = "optrunner.owner"  # host:pid of the process that started the container
Scope = Literal["orphans", "mine", "all"]


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@lru_cache(maxsize=1)
def docker_client() -> docker.DockerClient:
    """One client per process; docker-py clients are safe to share across threads."""
    return docker.from_env(max_pool_size=32, timeout=300)


# ---------------------------------------------------------------- this process's live containers
_live: dict[str, Container] = {}
_live_lock = threading.RLock()  # re-entrant: the signal handler may interrupt a holder
_hooks_installed = False


def track(container: Container) -> None:
    _install_hooks()
    with _live_lock:
        _live[container.id] = container


def untrack(container: Container) -> None:
    with _live_lock:
        _live.pop(container.id, None)


def _remove_live() -> None:
    with _live_lock:
        containers = list(_live.values())
        _live.clear()
    for container in containers:
        try:
            container.remove(force=True)
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            pass  # already gone, or the engine is unreachable (nothing more can be done at exit)
    # Then every container carrying this process's owner label: one the engine created while its answer was
    # lost (a daemon restart mid-request) was never tracked, and only its label still says whose it is.
    try:
        remove_containers("mine")
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        pass


def _on_signal(signum: int, _frame: object) -> None:
    _remove_live()
    # Then behave as the default would: Ctrl-C raises, SIGTERM exits with the conventional code.
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    sys.exit(128 + signum)


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_remove_live)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(sig, _on_signal)


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
    for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
        if scope == "orphans" and not _orphaned(container, host):
            continue
        try:
            container.remove(force=True)
            removed += 1
        except docker.errors.APIError:
            pass  # already gone, or its removal is already in progress
    return removed


def _orphaned(container: Container, host: str) -> bool:
    owner_host, _, pid = (container.labels.get(OWNER_LABEL) or "").rpartition(":")
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
