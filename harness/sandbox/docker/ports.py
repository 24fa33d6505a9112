"""`Listenable` and `Connectable` for a Docker sandbox: sockets made in the container's network namespace
(harness.sandbox.netns), joined through its main process, which needs a local engine and root."""
from __future__ import annotations

import socket

from harness.sandbox import netns


class Ports:
    def _main_pid(self, what: str) -> int:
        """The host pid of the container's main process (DockerSandbox's); SandboxError when it has none."""
        raise NotImplementedError

    def listen(self, port: int) -> socket.socket:
        """127.0.0.1:`port` in the container's network namespace, served by this process (`Listenable`)."""
        return netns.listen_in(self._main_pid(f"open port {port}"), port)

    def connection_sockets(self, count: int = 1) -> list[socket.socket]:
        """Sockets in the container's network namespace, to reach a server listening in it (`Connectable`)."""
        return netns.sockets_in(self._main_pid("open a connection"), count)
