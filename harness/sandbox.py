"""The sandbox: where an agent (or the grader) runs commands against a task's /testbed.

`Sandbox` is the whole interface the rest of the project sees: exec, read_file, write_file, diff,
close. `DockerSandbox` implements it with docker-py; nothing Docker-specific leaks past it.

Guarantees of the Docker implementation:
- a command's timeout really stops it: it runs under the container's own `timeout -k 5`, which kills
  its whole process group; a host-side backstop kills the container if an exec wedges anyway;
- no network by default; CPU, memory (no swap) and pids limits; a label on every container;
- removal on close(), on interpreter exit and on SIGTERM/SIGINT; `remove_labelled()` removes every
  container with our label (after a crash, `python -m harness cleanup`);
- output is decoded without ever failing on non-UTF-8 bytes and is capped in size (head + tail kept).
"""
from __future__ import annotations

import atexit
import io
import os
import select
import signal
import struct
import socket
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Protocol

import docker
import docker.errors
from docker.models.containers import Container

from harness.images import BASE_COMMIT_LABEL, LABEL

TESTBED = "/testbed"
KILL_GRACE = 5  # seconds between TERM and KILL inside the container
BACKSTOP_GRACE = 15  # extra seconds the host waits before declaring an exec wedged
OWNER_LABEL = "optrunner.owner"  # host:pid of the process that started the container
DIFF_EXCLUDES = (".venv", ".git", "__pycache__", "*.egg-info", "*.pyc")


@dataclass(frozen=True)
class ExecResult:
    output: str  # stdout and stderr, interleaved as produced
    exit_code: int
    timed_out: bool
    duration: float
    truncated: bool = False


@dataclass(frozen=True)
class SandboxLimits:
    cpus: float = 1.0
    memory: str = "4g"
    pids: int = 1024
    network: bool = False
    max_output_bytes: int = 1_000_000
    cpuset: str | None = None  # e.g. "1": pin the container to that CPU (timing runs)


class Sandbox(Protocol):
    def exec(self, cmd: str, timeout: float = 60, cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult: ...

    def read_file(self, path: str) -> bytes: ...

    def write_file(self, path: str, contents: str | bytes) -> None: ...

    def diff(self) -> str: ...

    def close(self) -> None: ...

    def open_stream(self, cmd: list[str], tty: bool = True, env: dict[str, str] | None = None,
                    workdir: str | None = None) -> "Stream": ...


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@lru_cache(maxsize=1)
def docker_client() -> docker.DockerClient:
    """One client per process; docker-py clients are safe to share across threads."""
    return docker.from_env(max_pool_size=32, timeout=300)


# ---------------------------------------------------------------- container bookkeeping

_live: dict[str, Container] = {}
_live_lock = threading.RLock()  # re-entrant: the signal handler may interrupt a holder
_hooks_installed = False


def _remove_live() -> None:
    with _live_lock:
        containers = list(_live.values())
        _live.clear()
    for container in containers:
        try:
            container.remove(force=True)
        except docker.errors.APIError:
            pass  # already gone


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


def remove_labelled(client: docker.DockerClient | None = None, everything: bool = False) -> int:
    """Remove containers carrying our label whose owning process is gone (a crash, a kill -9), and those
    with no owner; with `everything`, every one of ours, running or not. Returns how many were removed.
    Containers of live processes (another run, a benchmark) are left alone unless `everything`."""
    client = client or docker_client()
    host = socket.gethostname()
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        owner_host, _, pid = (container.labels.get(OWNER_LABEL) or "").rpartition(":")
        owned_here = owner_host == host and pid.isdigit()
        if not everything and owned_here and _process_alive(int(pid)):
            continue
        if not everything and owner_host and not owned_here:
            continue  # another machine's container (a shared engine): not ours to judge
        try:
            container.remove(force=True)
            removed += 1
        except docker.errors.APIError:
            pass  # already gone, or its removal is already in progress
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- output capture

@dataclass
class _Capture:
    """Keeps the first and last `cap/2` bytes of a stream, counting what falls in between."""
    cap: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, chunk: bytes) -> None:
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.cap // 2
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes of output omitted ...]\n{tail}"
        return head + tail


# ---------------------------------------------------------------- interactive streams

class Stream:
    """A byte stream to a long-lived process in the container (a persistent shell, a REPL).

    Built on the exec API's hijacked socket, read with select, so one round trip costs a write and a
    read, not a new `docker exec`. With a tty, stdout and stderr arrive merged and raw; without one,
    Docker frames each chunk with an 8-byte header, which `recv` strips.
    """

    def __init__(self, api: docker.APIClient, exec_id: str, sock: object, tty: bool) -> None:
        self._api, self.exec_id, self._tty = api, exec_id, tty
        self._holder = sock  # keeps the HTTP response (and so the connection) alive
        self._sock: socket.socket = getattr(sock, "_sock", sock)  # type: ignore[assignment]
        self._frames = bytearray()  # undecoded multiplexed bytes (no tty)
        self.closed = False

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def recv(self, timeout: float) -> bytes:
        """What arrived within `timeout` seconds (b"" if nothing did). EOFError when the process is gone."""
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
        info = self._api.exec_inspect(self.exec_id)
        return None if info.get("Running") else info.get("ExitCode")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already disconnected
        self._sock.close()


# ---------------------------------------------------------------- the Docker sandbox

class DockerSandbox:
    """A running container from a task image. Use `DockerSandbox.start(image)`; always `close()`."""

    def __init__(self, container: Container, client: docker.DockerClient, base_commit: str | None,
                 limits: SandboxLimits) -> None:
        self.container = container
        self.base_commit = base_commit
        self.limits = limits
        self._client = client
        self._closed = False

    @classmethod
    def start(cls, image: str, limits: SandboxLimits = SandboxLimits(), labels: dict[str, str] | None = None,
              client: docker.DockerClient | None = None) -> "DockerSandbox":
        client = client or docker_client()
        _install_hooks()
        base_commit = _image_labels(client, image).get(BASE_COMMIT_LABEL)
        all_labels = {LABEL: "sandbox", OWNER_LABEL: owner_id(), **(labels or {})}
        container = client.containers.run(
            image, ["sleep", "infinity"], detach=True, init=True, labels=all_labels,
            network_mode=None if limits.network else "none",
            mem_limit=limits.memory, memswap_limit=limits.memory, pids_limit=limits.pids,
            nano_cpus=int(limits.cpus * 1e9), cpuset_cpus=limits.cpuset, working_dir=TESTBED,
        )
        with _live_lock:
            _live[container.id] = container
        return cls(container, client, base_commit, limits)

    # -- exec

    def exec(self, cmd: str, timeout: float = 60, cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult:
        if self._closed:
            raise RuntimeError("sandbox is closed")
        argv = ["timeout", "-k", str(KILL_GRACE), f"{timeout:g}", "bash", "-lc", cmd]
        capture = _Capture(self.limits.max_output_bytes)
        outcome: dict[str, int] = {}
        started = time.monotonic()

        def run() -> None:
            api = self._client.api
            exec_id = api.exec_create(self.container.id, argv, workdir=cwd or TESTBED, environment=env)["Id"]
            for chunk in api.exec_start(exec_id, stream=True):
                capture.add(chunk)
            outcome["exit_code"] = api.exec_inspect(exec_id)["ExitCode"]

        # A daemon thread, so a wedged exec can never hold up interpreter exit (and container removal).
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(timeout + KILL_GRACE + BACKSTOP_GRACE)
        duration = time.monotonic() - started
        if worker.is_alive():  # the in-container timeout did not end it: stop the container itself
            self._kill()
            return ExecResult(capture.text() + "\n[exec wedged: container killed]", -1, True, duration,
                              capture.dropped > 0)
        code = outcome.get("exit_code", -1)
        # timeout(1) exits 124 (TERM worked) or 137 (needed KILL); an OOM kill is also 137, but early.
        timed_out = code in (124, 137) and duration >= timeout * 0.98
        return ExecResult(capture.text(), code, timed_out, duration, capture.dropped > 0)

    def open_stream(self, cmd: list[str], tty: bool = True, env: dict[str, str] | None = None,
                    workdir: str | None = None) -> Stream:
        """Start `cmd` in the container with stdin attached and return a stream to it. The process lives
        until it exits or the container goes; closing the stream closes its stdin (and its tty)."""
        if self._closed:
            raise RuntimeError("sandbox is closed")
        api = self._client.api
        exec_id = api.exec_create(self.container.id, cmd, stdin=True, tty=tty, environment=env,
                                  workdir=workdir or TESTBED)["Id"]
        sock = api.exec_start(exec_id, tty=tty, socket=True)
        return Stream(api, exec_id, sock, tty)

    def _kill(self) -> None:
        """Last resort for a wedged exec (a frozen or paused container): the container is lost."""
        try:
            self.container.reload()
            if self.container.status == "paused":
                self.container.unpause()
            self.container.kill()
        except docker.errors.APIError:
            self.container.remove(force=True)

    # -- files

    def read_file(self, path: str) -> bytes:
        try:
            stream, _stat = self.container.get_archive(path)
        except docker.errors.NotFound:
            raise FileNotFoundError(path) from None
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise IsADirectoryError(path)
            extracted = tar.extractfile(member)
            assert extracted is not None
            return extracted.read()

    def write_file(self, path: str, contents: str | bytes) -> None:
        data = contents.encode() if isinstance(contents, str) else contents
        target = PurePosixPath(path if path.startswith("/") else f"{TESTBED}/{path}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(target.name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        try:
            self.container.put_archive(str(target.parent), buf.getvalue())
        except docker.errors.NotFound:
            self.exec(f"mkdir -p '{target.parent}'", timeout=30)
            self.container.put_archive(str(target.parent), buf.getvalue())

    # -- patch

    def diff(self) -> str:
        """The change to /testbed since the base commit, as a patch `git apply` accepts.

        Uses a scratch index so the agent's own index and commits are irrelevant and untouched; binary
        files and build/tooling paths are left out, as GSO and OpenHands do.
        """
        if not self.base_commit:
            raise RuntimeError("image has no base commit label; build it with harness.images")
        excludes = " ".join(f"':(exclude,glob)**/{p}' ':(exclude,glob)**/{p}/**'" for p in DIFF_EXCLUDES)
        script = f"""set -e
export GIT_INDEX_FILE=$(mktemp)
trap 'rm -f "$GIT_INDEX_FILE"' EXIT
git read-tree {self.base_commit}
git add -A -- . {excludes}
git diff --cached --numstat --no-renames -z {self.base_commit} |
  while IFS=$'\\t' read -r -d '' added deleted name; do
    if [ "$added" = "-" ]; then git reset -q {self.base_commit} -- "$name"; fi
  done
git diff --cached --no-color --no-renames {self.base_commit} > /tmp/.optrunner.diff
"""
        done = self.exec(script, timeout=120, cwd=TESTBED)
        if done.exit_code != 0:
            raise RuntimeError(f"git diff failed in the sandbox: {done.output.strip()[-500:]}")
        return self.read_file("/tmp/.optrunner.diff").decode("utf-8", errors="replace")

    def pin(self, cpuset: str) -> None:
        """Move the running container (and every process in it) onto these CPUs, e.g. "1"."""
        self.container.update(cpuset_cpus=cpuset)

    # -- lifetime

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with _live_lock:
            _live.pop(self.container.id, None)
        try:
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass

    def __enter__(self) -> "DockerSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_label_cache: dict[str, dict[str, str]] = {}


def _image_labels(client: docker.DockerClient, image: str) -> dict[str, str]:
    if image not in _label_cache:
        _label_cache[image] = client.images.get(image).labels or {}
    return _label_cache[image]
