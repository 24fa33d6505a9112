"""A TCP port on a sandbox's own loopback, served by this process: the way in for a sandbox with no network.

An installed agent inside a sandbox must reach the run's model gateway, and nothing else may: not the
host's network, not another sandbox. Every sandbox has its own network namespace (Docker's
`network_mode=none`, bwrap's `--unshare-net`) whose only interface is its loopback. A socket created by a
thread that has joined that namespace (`setns(2)`) stays bound there after the thread leaves: so this
process listens on 127.0.0.1:PORT *inside* the sandbox and accepts its connections, while the port does not
exist on the host or in any other namespace. No forwarder runs in the sandbox and no route is opened.

Joining another network namespace needs CAP_SYS_ADMIN in this process's user namespace and in the one
owning the target (setns(2)): the runner as root, with a local engine. Elsewhere (an ordinary user, a
remote Docker engine) `listen_in` raises SandboxError saying so.
"""
from __future__ import annotations

import ctypes
import os
import socket
import threading
from collections.abc import Callable
from typing import TypeVar

from harness.sandbox.interface import SandboxError

CLONE_NEWNET = 0x40000000
T = TypeVar("T")
BACKLOG = 64


def _setns(fd: int) -> None:
    if hasattr(os, "setns"):  # Python 3.12+
        os.setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def listen_in(pid: int, port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:`port` in the network namespace of host process `pid` (a process of
    the sandbox, e.g. its init). The caller accepts on it; SandboxError when the namespace cannot be joined
    or the port is taken there."""
    def make() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(BACKLOG)
        except BaseException:
            sock.close()
            raise
        return sock

    return _made_in(pid, make, f"open port {port}")


def sockets_in(pid: int, count: int = 1) -> list[socket.socket]:
    """`count` fresh, unconnected TCP sockets in the network namespace of host process `pid`: connected to
    127.0.0.1:PORT each reaches a server listening inside the sandbox (the serving client's way in), and
    nothing outside it. Made in one visit, so a client can have them all before its clock starts.
    SandboxError when the namespace cannot be joined."""
    def make() -> list[socket.socket]:
        made: list[socket.socket] = []
        try:
            for _ in range(count):
                made.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        except BaseException:
            for sock in made:
                sock.close()
            raise
        return made

    return _made_in(pid, make, "open a connection")


def _made_in(pid: int, make: Callable[[], T], what: str) -> T:
    """`make()` run in the network namespace of process `pid`: the sockets it makes stay bound there."""
    result: list[T | BaseException] = []

    def inside() -> None:
        # A thread of its own: setns changes the calling thread only, and this one ends right after, so no
        # other work of this process ever runs in the sandbox's namespace.
        try:
            ns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(ns)
            finally:
                os.close(ns)
            result.append(make())
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            result.append(exc)

    thread = threading.Thread(target=inside, name=f"netns-{pid}", daemon=True)
    thread.start()
    thread.join()
    got = result[0] if result else SandboxError("the namespace's thread ended without a result")
    if not isinstance(got, BaseException):
        return got
    if isinstance(got, PermissionError):
        raise SandboxError(f"cannot {what} inside the sandbox: joining its network namespace needs root "
                           "(CAP_SYS_ADMIN) and a local engine") from None
    if isinstance(got, FileNotFoundError):
        raise SandboxError(f"cannot {what} inside the sandbox: process {pid} is gone") from None
    if isinstance(got, OSError):
        raise SandboxError(f"cannot {what} inside the sandbox: {got.strerror or got}") from None
    raise SandboxError(f"cannot {what} inside the sandbox: {got}")
