"""A byte stream to a long-lived process in a Docker container, over the exec API's hijacked socket."""
from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Callable
from typing import Any, cast

import docker
import docker.errors

from harness.sandbox.interface import SandboxError


def _read_ahead(holder: object, sock: socket.socket) -> bytes:
    """The bytes of the stream that http.client's buffered reader took along with the response's headers.
    When the client reads the headers late (a busy machine), a quick command's whole output has arrived
    with them, and whoever reads the raw socket never sees it: seen as empty output with exit code 0 (a
    task's environment read as empty, then a valid patch run with no PATH). docker-py's own frame reader
    reads the raw socket too."""
    reader: Any = getattr(getattr(getattr(getattr(holder, "_response", None), "raw", None), "_fp", None), "fp", None)
    if not callable(getattr(reader, "peek", None)):
        return b""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # what is buffered, without waiting for more
    try:
        ahead = reader.peek(1 << 16)
        return reader.read(len(ahead)) if ahead else b""
    except OSError:
        return b""
    finally:
        sock.settimeout(timeout)


def run_exec(api: docker.APIClient, container_id: str, argv: list[str], add: Callable[[bytes], None],
             workdir: str | None = None, environment: dict[str, str] | None = None) -> int:
    """Run `argv` in the container, hand its output (stdout and stderr as they come) to `add`, and return
    its exit code (-1 if the engine never stops saying it runs). Read by DockerStream, never by docker-py's
    exec_run, which loses what http.client read ahead (_read_ahead)."""
    exec_id = api.exec_create(container_id, argv, workdir=workdir, environment=environment)["Id"]
    stream = DockerStream(api, exec_id, api.exec_start(exec_id, socket=True), tty=False)
    stream.drain(add)
    return stream.wait_exit()


class DockerStream:
    """A byte stream to a long-lived process in the container (a persistent shell, a REPL).

    Built on the exec API's hijacked socket, read with select, so one round trip costs a write and a
    read, not a new `docker exec`. With a tty, stdout and stderr arrive merged and raw; without one,
    Docker frames each chunk with an 8-byte header, which `recv` strips.
    """

    def __init__(self, api: docker.APIClient, exec_id: str, sock: object, tty: bool) -> None:
        self._api, self.exec_id, self._tty = api, exec_id, tty
        self._holder = sock  # keeps the HTTP response (and so the connection) alive
        # docker-py hands back the response's SocketIO (the socket is its `_sock`) or, on some transports,
        # the socket itself
        self._sock = cast(socket.socket, getattr(sock, "_sock", sock))
        self._frames = bytearray()  # undecoded multiplexed bytes (no tty)
        self._early = _read_ahead(sock, self._sock)  # the stream's first bytes, if http.client took them
        self.closed = False

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def recv(self, timeout: float) -> bytes:
        """What arrived within `timeout` seconds (b"" if nothing did). EOFError when the process is gone."""
        if self._early:
            early, self._early = self._early, b""
            if self._tty:
                return early
            self._frames += early
        if not self._tty and (data := self._demux(b"")):
            return data
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            ready, _, _ = select.select([self._sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return b""
            chunk = self._sock.recv(65536)
            if not chunk:
                raise EOFError("the process behind the stream has exited")
            if self._tty:
                return chunk
            data = self._demux(chunk)
            if data or time.monotonic() >= deadline:
                return data

    def drain(self, add: Callable[[bytes], None]) -> None:
        """Hand everything to `add` until the process's output ends, then close. (`docker exec` reads its
        output this way, not through docker-py's frame iterator, which takes a read that would block at a
        frame's start for the end of the stream: the rest of the output was lost.)"""
        try:
            while True:
                try:
                    add(self.recv(5.0))
                except (BlockingIOError, InterruptedError):
                    continue
                except EOFError:
                    return
        finally:
            self.close()

    def _demux(self, chunk: bytes) -> bytes:
        self._frames += chunk
        out = bytearray()
        while len(self._frames) >= 8:
            size = struct.unpack(">I", self._frames[4:8])[0]
            if len(self._frames) < 8 + size:
                break
            out += self._frames[8:8 + size]
            del self._frames[:8 + size]
        return bytes(out)

    def exit_code(self) -> int | None:
        """The process's exit code, or None while it runs."""
        try:
            info = self._api.exec_inspect(self.exec_id)
        except docker.errors.DockerException as err:
            raise SandboxError(f"docker: {str(err).splitlines()[0][:300]}") from None
        return None if info.get("Running") else info.get("ExitCode")

    def wait_exit(self, timeout: float = 10.0) -> int:
        """The exit code once the engine has it: it may still say `Running` a moment after the output
        ended (-1 if it never stops saying so)."""
        deadline = time.monotonic() + timeout
        while (code := self.exit_code()) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return -1 if code is None else int(code)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already disconnected
        self._sock.close()
