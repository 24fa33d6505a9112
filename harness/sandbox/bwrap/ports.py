"""`Listenable` and `Connectable` for a bwrap sandbox: sockets made in its network namespace (harness.sandbox.netns),
joined through its init. Never once it is closed: by then the init's pid may be another process's."""
from __future__ import annotations

import socket

from harness.sandbox import netns
from harness.sandbox.interface import SandboxError


class Ports:
    _init: int
    _closed: bool

    def _namespaces(self, what: str) -> int:
        if self._closed:
            raise SandboxError(f"cannot {what} inside the sandbox: it is closed")
        return self._init  # (netns says so when it is gone)

    def listen(self, port: int) -> socket.socket:
        """127.0.0.1:`port` in the sandbox's network namespace, served by this process (`Listenable`)."""
        return netns.listen_in(self._namespaces(f"open port {port}"), port)

    def connection_sockets(self, count: int = 1) -> list[socket.socket]:
        """Sockets in the sandbox's network namespace, to reach a server listening in it (`Connectable`)."""
        return netns.sockets_in(self._namespaces("open a connection"), count)
