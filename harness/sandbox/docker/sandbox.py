"""`DockerSandbox`: the sandbox interface on a Docker container, through docker-py.

Guarantees:
- a command's timeout really stops it: it runs under the container's own `timeout -k 5`, which kills
  its whole process group; a host-side backstop kills the container if an exec wedges anyway;
- no network by default; CPU, memory (no swap) and pids limits; our labels on every container, and
  removal on close(), at exit and on signals (`containers`);
- output is decoded without ever failing on non-UTF-8 bytes and capped (head + tail kept) at
  `limits.max_output_bytes`;
- every docker-py or connection failure surfaces as `SandboxError` (one line), never as docker-py's own.
"""
from __future__ import annotations

import errno
import io
import json
import os
import tarfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

import docker
import docker.errors
import requests.exceptions
import docker.types
from docker.models.containers import Container

from harness.gpus import Gpu
from harness.sandbox.docker.containers import (LABEL, OWNER_LABEL, create_container,
                                               docker_client, hardening_options, owner_id, track, untrack)
from harness.sandbox.docker import deaths
from harness.sandbox.docker.ports import Ports
from harness.sandbox.docker.stream import DockerStream, run_exec
from harness.sandbox import kept, overlay
from harness.sandbox.archive import tar_of
from harness.sandbox.bounded import archive_member
from harness.sandbox.gitdiff import take_diff
from harness.sandbox.interface import (BASE_COMMIT_LABEL, GIT_DIR_LABEL, PINS_LABEL, READ_CAP, TESTBED, WORKDIR_LABEL,
                                       ExecResult, FileChanged, OutputCapture, SandboxError, SandboxLimits,
                                       close_quietly, shell_flags)

KILL_GRACE = 5  # seconds between TERM and KILL inside the container
BACKSTOP_GRACE = 15  # extra seconds the host waits before declaring an exec wedged
END = "\x1eoptrunner-exec-end\x1e"  # the last bytes of every exec's output (exec)
READ_TRIES = 5  # reads of a file that a process inside keeps rewriting, before FileChanged
ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.ConnectionError)


@contextmanager
def engine_errors() -> Iterator[None]:
    """docker-py's and the connection's exceptions, as the interface's one SandboxError."""
    try:
        yield
    except ENGINE_ERRORS as err:
        raise SandboxError(f"docker: {_first_line(err)}") from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return (text.splitlines()[0] if text else type(err).__name__)[:300]


def create_options(limits: SandboxLimits, labels: dict[str, str], workdir: str,
                   gpus: Sequence[Gpu] = ()) -> dict[str, Any]:
    """docker-py's container options for a sandbox: its limits, and `gpus` by UUID through the NVIDIA
    runtime's device request (the container sees those and no other)."""
    options: dict[str, Any] = dict(
        init=True, labels=labels, network_mode=None if limits.network else "none",
        mem_limit=limits.memory, memswap_limit=limits.memory, pids_limit=limits.pids,
        nano_cpus=int(limits.cpus * 1e9), working_dir=workdir,
        # a System V segment no process holds is removed: no cache across a grader's fenced runs
        sysctls={"kernel.shm_rmid_forced": "1"},
        **hardening_options(),  # the few capabilities the fence needs, no new privileges, a nofile limit
    )
    if gpus:
        options["device_requests"] = [docker.types.DeviceRequest(device_ids=[g.uuid for g in gpus],
                                                                 capabilities=[["gpu"]])]
    return options


class DockerSandbox(Ports):
    """A running container from a task image. Use `DockerSandbox.start(image)`; always `close()`."""

    def __init__(self, container: Container, client: docker.DockerClient, base_commit: str | None,
                 limits: SandboxLimits, labels: dict[str, str] | None = None) -> None:
        labels = labels or {}
        self.container = container
        self.base_commit = base_commit
        self.limits = limits
        self.workdir = labels.get(WORKDIR_LABEL, TESTBED)
        self.git_dir = labels.get(GIT_DIR_LABEL)  # the work tree's repository, when it is kept outside it
        self.pins: dict[str, str] = json.loads(labels.get(PINS_LABEL) or "{}")
        self._client = client
        self._closed = False
        self._overlay: list[str] | None = None  # its layers, once looked up (_layers)

    @classmethod
    def start(cls, image: str, limits: SandboxLimits | None = None, labels: dict[str, str] | None = None,
              client: docker.DockerClient | None = None, gpus: Sequence[Gpu] = ()) -> "DockerSandbox":
        limits = limits or SandboxLimits()
        with engine_errors():
            client = client or docker_client()
            image_labels = _image_labels(client, image)
            base_commit = image_labels.get(BASE_COMMIT_LABEL)
            workdir = image_labels.get(WORKDIR_LABEL, TESTBED)
            all_labels = {LABEL: "sandbox", OWNER_LABEL: owner_id(), **(labels or {})}
            container = create_container(client, image, ["sleep", "infinity"],
                                         create_options(limits, all_labels, workdir, gpus), limits.disk)
        # Tracked from its creation, not once it runs: when the engine goes away between create and start
        # (a daemon restart), the created container outlives the error and must still be removed.
        track(container)
        try:
            with engine_errors():  # (its events followed before it runs: how it stops tells whose doing it was)
                deaths.watcher(client).follow(container.id)
                container.start()
        except SandboxError:
            close_quietly(cls(container, client, base_commit, limits, image_labels))  # else still tracked
            raise
        return cls(container, client, base_commit, limits, image_labels)

    # -- exec

    def exec(self, cmd: str, timeout: float = 60, cwd: str | None = None,
             env: dict[str, str] | None = None, login: bool = True) -> ExecResult:
        if self._closed:
            raise SandboxError("sandbox is closed")
        # An end marker printed by a shell around the command: output cut short must not pass for a quiet command.
        inner = " ".join(["timeout", "-k", str(KILL_GRACE), f"{timeout:g}", "bash", *shell_flags(login)])
        argv = ["bash", "--noprofile", "--norc", "-c", f'{inner} "$1"; rc=$?; printf \'{END}\'; exit $rc', "exec", cmd]
        capture = OutputCapture(self.limits.max_output_bytes)
        outcome: dict[str, Any] = {}
        started = time.monotonic()

        def run() -> None:
            try:
                outcome["exit_code"] = run_exec(self._client.api, self.container.id, argv, capture.add,
                                                cwd or self.workdir, env)
            except (*ENGINE_ERRORS, SandboxError) as err:  # reported by the caller's thread
                outcome["error"] = _first_line(err).removeprefix("docker: ")
            except OSError as err:  # the connection to the engine broke mid-stream
                outcome["error"] = f"the connection to the engine broke: {err}"

        # A daemon thread, so a wedged exec can never hold up interpreter exit (and container removal).
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(timeout + KILL_GRACE + BACKSTOP_GRACE)
        if "error" in outcome:  # (an exec refused by a container its own processes stopped is theirs: deaths)
            raise deaths.failure(self, f"docker: {outcome['error']}")
        duration = time.monotonic() - started
        if worker.is_alive():  # the in-container timeout did not end it: stop the container itself
            self._kill()
            return ExecResult(capture.text() + "\n[exec wedged: container killed]", -1, True, duration,
                              capture.truncated)
        code = int(outcome.get("exit_code", -1))
        if code in (137, -1) and not self._running():  # killed with its container: infrastructure, unless its
            raise deaths.failure(self, "the container stopped while a command ran in it")  # processes did it
        text = capture.text()
        at = text.rfind(END)  # (processes the command left in the background may write after it)
        if at >= 0:
            text = text[:at] + text[at + len(END):]
        elif code != 126 and code < 128 and not capture.truncated:  # (no marker: killed; 126: shell not started)
            raise SandboxError(f"docker lost the output of a command (exit code {code}); run it again")
        # timeout(1) exits 124 (TERM worked) or 137 (needed KILL); an OOM kill is also 137, but early.
        timed_out = code in (124, 137) and duration >= timeout * 0.98
        return ExecResult(text, code, timed_out, duration, capture.truncated)

    def _running(self) -> bool:
        """Whether the container still runs commands: a probe, since a container being removed still
        reports `running` for a moment."""
        try:
            self.container.reload()
            if self.container.status != "running":
                return False
            api = self._client.api
            probe = api.exec_create(self.container.id, ["true"])["Id"]
            api.exec_start(probe)
            return api.exec_inspect(probe).get("ExitCode") == 0
        except ENGINE_ERRORS:
            return False  # removed, being removed, or the engine is gone

    def open_stream(self, cmd: list[str], tty: bool = True, env: dict[str, str] | None = None,
                    workdir: str | None = None) -> DockerStream:
        """Start `cmd` in the container with stdin attached and return a stream to it. The process lives
        until it exits or the container goes; closing the stream closes its stdin (and its tty)."""
        if self._closed:
            raise SandboxError("sandbox is closed")
        api = self._client.api
        with deaths.judged(self):
            exec_id = api.exec_create(self.container.id, cmd, stdin=True, tty=tty, environment=env,
                                      workdir=workdir or self.workdir)["Id"]
            sock = api.exec_start(exec_id, tty=tty, socket=True)
        return DockerStream(api, exec_id, sock, tty)

    def _kill(self) -> None:
        """Last resort for a wedged exec (a frozen or paused container): the container is lost."""
        try:
            self.container.reload()
            if self.container.status == "paused":
                self.container.unpause()
            self.container.kill()
        except docker.errors.APIError:
            with engine_errors():
                self.container.remove(force=True)

    # -- files

    def read_file(self, path: str, max_bytes: int = READ_CAP) -> bytes:
        for _ in range(READ_TRIES):
            try:
                stream, _stat = self.container.get_archive(path)
                try:  # (the archive's header gives the size: past the cap the rest is never fetched)
                    return archive_member(iter(stream), path, max_bytes)
                finally:
                    stream.close()
            except docker.errors.NotFound:
                raise FileNotFoundError(path) from None
            except ENGINE_ERRORS as err:
                raise SandboxError(f"docker: {_first_line(err)}") from None
            except tarfile.TarError:  # the engine's archive cut short: the file shrank as it was read
                time.sleep(0.05)
        raise FileChanged(f"{path} kept changing while it was read ({READ_TRIES} tries)")

    def _layers(self) -> list[str] | None:
        """The container's overlay2 layers (upper first) where this process can read them (a local engine,
        run as root): then what changed and the hidden files are read from them directly, milliseconds
        instead of an engine call each. None elsewhere (another storage driver, a remote or rootless engine)."""
        if self._overlay is None:
            data = (self.container.attrs.get("GraphDriver") or {}).get("Data") or {}
            upper, lowers = data.get("UpperDir") or "", data.get("LowerDir") or ""
            readable = bool(upper) and os.access(upper, os.R_OK | os.X_OK)
            self._overlay = [upper, *lowers.split(":")] if readable and lowers else []
        return self._overlay or None

    def read_tree(self, path: str) -> dict[str, bytes]:
        """Every regular file under the directory `path` (relative name -> contents), read from outside the
        container (`Freezable`): from its layers, else in one transfer from the engine; {} when there is no
        such directory."""
        layers = self._layers()
        if layers:
            return overlay.read_tree([Path(layer) for layer in layers], path)
        try:
            stream, _stat = self.container.get_archive(path)
            data = b"".join(stream)
        except docker.errors.NotFound:
            return {}
        except ENGINE_ERRORS as err:
            raise SandboxError(f"docker: {_first_line(err)}") from None
        out: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar:
                if member.isfile() and (extracted := tar.extractfile(member)) is not None:
                    name = member.name.split("/", 1)[1] if "/" in member.name else ""
                    if name:
                        out[name] = extracted.read()
        return out

    def _target(self, path: str) -> PurePosixPath:
        return PurePosixPath(path if path.startswith("/") else f"{self.workdir}/{path}")

    def write_file(self, path: str, contents: str | bytes) -> None:
        target = self._target(path)
        archive = tar_of({target.name: contents})
        try:
            self.container.put_archive(str(target.parent), archive)
        except docker.errors.NotFound:
            made = self.exec(f"mkdir -p '{target.parent}'", timeout=30)
            if made.exit_code != 0:  # a file where a directory should be: the caller's mistake, not the engine's
                raise NotADirectoryError(errno.ENOTDIR, made.output.strip() or "Not a directory", path) from None
            with engine_errors():
                self.container.put_archive(str(target.parent), archive)
        except docker.errors.APIError as err:
            if "not a directory" in str(err).lower():
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", path) from None
            raise SandboxError(f"docker: {_first_line(err)}") from None
        except ENGINE_ERRORS as err:
            raise SandboxError(f"docker: {_first_line(err)}") from None

    def write_files(self, files: Mapping[str, str | bytes]) -> None:
        """Several files in one transfer (one archive, unpacked at /); missing parent directories are created."""
        archive = tar_of({str(self._target(path)).lstrip("/"): contents for path, contents in files.items()})
        with deaths.judged(self):
            self.container.put_archive("/", archive)

    # -- patch

    def diff(self) -> str:
        """The change to the working directory since the base commit, as a patch `git apply` accepts
        (harness.sandbox.gitdiff: the agent's index, commits and git configuration do not count). A repository
        or git the agent broke gives NoPatch (its outcome), a lost container SandboxError."""
        return take_diff(self, self.base_commit, self.git_dir)

    def pin(self, cpuset: str) -> None:
        """Move the running container (and every process in it) onto these CPUs, e.g. "1" (`Pinnable`)."""
        with engine_errors():
            self.container.update(cpuset_cpus=cpuset)

    def _main_pid(self, what: str) -> int:
        """The host pid of the container's main process, whose namespaces are the container's (ports.py)."""
        if self._closed:
            raise SandboxError(f"cannot {what} inside the container: it is closed")
        with engine_errors():
            self.container.reload()
        pid = int((self.container.attrs.get("State") or {}).get("Pid") or 0)
        if pid <= 0:
            raise SandboxError(f"cannot {what} inside the container: it is not running")
        return pid

    def checkpoint(self, name: str, labels: dict[str, str] | None = None) -> str:
        """The container committed to the image `name` (`Checkpointable`): its files, not its processes (the
        container is paused while its layer is read, so no file is half-written in it)."""
        repository, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "latest")
        marks = {LABEL: "checkpoint", OWNER_LABEL: "", **kept.marks(labels)}  # (not the sandbox's owner)
        with engine_errors():
            self.container.commit(repository=repository, tag=tag, pause=True,
                                  changes=[f'LABEL {k}="{_quoted(v)}"' for k, v in marks.items()])
        return name

    def export_checkpoint(self, name: str) -> tuple[bytes, bool]:
        """`Portable`: what changed since the image it started from (harness.sandbox.docker.portable), so an
        archive of a sandbox started from a checkpoint needs that checkpoint's archives before it."""
        from harness.sandbox.docker.portable import export_changes
        with engine_errors():
            return export_changes(self.container), False

    def restart(self) -> None:
        """Every process killed, the container started again with its files (`Freezable`)."""
        with engine_errors():
            self.container.restart(timeout=0)
            self.container.reload()
        if self.container.status != "running":
            raise SandboxError(f"docker: the container did not come back after a restart ({self.container.status})")

    def processes(self) -> list[str]:
        """The command lines of the processes running in the container but its own keep-alive, listed by
        the engine (`Freezable`)."""
        with engine_errors():
            rows = self.container.top(ps_args="-o pid,args").get("Processes") or []
        return [row[-1] for row in rows if row[-1] not in ("sleep infinity", "/sbin/docker-init -- sleep infinity")]

    def changed_paths(self) -> list[str]:
        """The container's changes against its image, from outside (`Freezable`): its writable layer, else
        the engine's `docker diff`."""
        layers = self._layers()
        if layers:  # docker's init binary, mounted into every container started with init=True, is no change
            return [p for p in overlay.changed_paths(Path(layers[0])) if p != "/usr/sbin/docker-init"]
        with engine_errors():
            paths = sorted({change["Path"] for change in self.container.diff() or []})
        # the deepest paths only (a directory is listed as changed for what changed below it); docker's
        # init binary, mounted into every container started with init=True, is no change
        return [p for i, p in enumerate(paths) if p != "/usr/sbin/docker-init"
                and not (i + 1 < len(paths) and paths[i + 1].startswith(p.rstrip("/") + "/"))]

    # -- lifetime

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Untracked only once it is gone: when removal fails (the engine is restarting), the container
        # stays in this process's registry and the exit hook removes it (else it would be left behind).
        try:
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as err:
            if err.status_code != 409:  # 409: its removal is already in progress
                raise SandboxError(f"docker: {_first_line(err)}") from None
        except ENGINE_ERRORS as err:
            raise SandboxError(f"docker: {_first_line(err)}") from None
        untrack(self.container)
        deaths.watcher(self._client).forget(self.container.id)

    def __enter__(self) -> "DockerSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_label_cache: dict[str, dict[str, str]] = {}


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _image_labels(client: docker.DockerClient, image: str) -> dict[str, str]:
    if image not in _label_cache:
        _label_cache[image] = client.images.get(image).labels or {}
    return _label_cache[image]
