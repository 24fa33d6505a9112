"""The sandbox interface: all that scaffolds and the grader know about where commands run.

A `Sandbox` runs commands against a task's /testbed (`exec`), moves files in and out, opens a byte
stream to a long-lived process (a persistent shell, a launcher loop), reports the diff against the base
commit and is closed once. A provider (`harness.sandbox.providers`) starts sandboxes from task images.

Documented errors: every failure of the machinery behind a sandbox (the engine, a container that died)
is a `SandboxError`; callers catch that one class and never a provider's own exceptions. A sandbox whose own
processes ended it (its keep-alive killed from inside, `pkill -KILL -x sleep` or `kill -9 -1`; its memory run
out) raises `SandboxKilledFromInside`, a SandboxError too, so code that only needs "the sandbox is gone" keeps
working; what decides between infrastructure and the agent's outcome (the runner, the episode's end) catches
it first: it is never retried. A missing file
is `FileNotFoundError`, a directory where a file was expected `IsADirectoryError`, a file a process inside
kept rewriting as it was read `FileChanged`. A command that fails is not an error: it is an `ExecResult` with
its exit code.

Standard library only: the runner's config and `--help` import this module.
"""
from __future__ import annotations

import fnmatch
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from harness.layout import TESTBED as TESTBED  # (re-exported: the providers' and the grader's name for it)
# Paths left out of every diff (tooling and build output, not source), as GSO and OpenHands do.
DIFF_EXCLUDES = (".venv", ".git", "__pycache__", "*.egg-info", "*.pyc")
# The same paths as globs over a repository-relative path (GSO's exclusions for patches).
EXCLUDED_GLOBS = tuple(g for p in DIFF_EXCLUDES for g in (p, f"{p}/*", f"*/{p}", f"*/{p}/*"))
DEFAULT_BASE_IMAGE = "debian:bookworm-slim"  # what task images build on; providers may fall back offline
# What a task image says about its task (labels every provider reads when it starts a sandbox from it).
BASE_COMMIT_LABEL = "optrunner.base_commit"  # the commit diffs are taken against
WORKDIR_LABEL = "optrunner.workdir"  # where the task's code is (/testbed; a Harbor task's WORKDIR)
GIT_DIR_LABEL = "optrunner.git_dir"  # the work tree's repository, when it is kept outside it
PINS_LABEL = "optrunner.pins"  # JSON: working-directory-relative path -> sha256
# The grader's own commands run with this PATH and nothing else of the sandbox's shell set-up: no profile,
# no rc file, no BASH_ENV/ENV start-up file, no task virtualenv first on PATH (a build can write there), so
# no file the agent or a patch's build wrote can hook them (`harness_exec`). The tools found on it are the
# ones the freeze checks unchanged (grader.freeze.TOOLS).
TRUSTED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TRUSTED_ENV = {"PATH": TRUSTED_PATH, "BASH_ENV": "", "ENV": "", "PYTHONPATH": "", "PYTHONSTARTUP": "",
               "LD_PRELOAD": "", "LD_LIBRARY_PATH": "", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
MAX_OUTPUT_BYTES = 1_000_000  # default cap on what one command's output keeps: the head and the tail halves


def is_excluded(path: str, extra: tuple[str, ...] = ()) -> bool:
    """True for a path no diff shows and no patch may touch: tooling and build output, not source, and
    the `extra` globs a task adds (GSO: data files)."""
    return any(fnmatch.fnmatch(path, glob) for glob in EXCLUDED_GLOBS + extra)


class SandboxError(RuntimeError):
    """The sandbox machinery failed (engine unreachable, container gone, exec wedged): infrastructure,
    not the agent's or the patch's doing. The message is one line saying what failed."""


class SandboxKilledFromInside(SandboxError):
    """The sandbox stopped because of what ran in it, not because of the machinery: its keep-alive killed from
    inside or out of memory, with no stop, kill or removal from outside. The agent's outcome (recorded
    `sandbox_killed`, never retried). A SandboxError subclass: the sandbox is gone all the same."""


class SandboxUnavailable(SandboxError):
    """This machine cannot start sandboxes (no engine, no access); the message says how to fix it, `reason`
    only what is wrong (for a caller that knows a better fix)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class NoPatch(Exception):
    """The sandbox's change cannot be read as a patch because of what was done inside it (its repository
    deleted or broken, git removed): the agent's outcome, not infrastructure. The message says what failed."""


class FileChanged(Exception):
    """`read_file` could not read a file whole, however often it tried: a process in the sandbox kept
    rewriting it as it was read. The sandbox's doing (a daemon the patch left), not infrastructure."""


READ_CAP = 64 * 1024 * 1024  # what a read from a sandbox takes in when its caller names no cap (bounded.py)


class FileTooLarge(Exception):
    """A file over its reader's cap. `size`: its size as the engine saw it, or at least cap + 1 where the
    bytes were counted here; `head`: its first `cap` bytes. The sandbox's doing, not infrastructure."""

    def __init__(self, path: str, size: int, cap: int, head: bytes = b"") -> None:
        super().__init__(f"{path} is over {cap} bytes ({size} bytes or more); not read whole")
        self.path, self.size, self.cap, self.head = path, size, cap, head


class PatchTooLarge(NoPatch):
    """The sandbox's change is over `max_patch_bytes` (a generated file in the work tree): recorded
    `patch_too_large`, never read whole."""


class ImageBuildError(SandboxError):
    """Building a task's image failed; the first line names what failed, the output tail follows."""


@dataclass(frozen=True)
class ExecResult:
    output: str  # stdout and stderr, interleaved as produced
    exit_code: int
    timed_out: bool
    duration: float
    truncated: bool = False


@dataclass(frozen=True)
class TaskImages:
    """A task's two images. They differ when the grading image holds what the agent must not see (GSO's
    prebuilt images keep the expert's commit and its eval script); otherwise both are one image."""
    agent: str  # what an agent's sandbox starts from
    grading: str  # what the expert's graded state starts from (and every state, when `base` is "")
    # what was changed to build the task's own image on this machine (a FROM image replaced by a local
    # substitute, an Ubuntu package made Debian's): empty when it was built as written
    adapted: tuple[str, ...] = ()
    # what the base's and the patches' graded states start from: the grading image with the history after
    # the base commit cut (GSO's images keep the expert's commit, which a patch's build could check out)
    base: str = ""


@dataclass(frozen=True)
class ImageConfig:
    """What an image says beside its files: what its sandboxes start with (a provider's `export_files`)."""
    env: dict[str, str] = field(default_factory=dict)  # its ENV
    workdir: str = "/"
    labels: dict[str, str] = field(default_factory=dict)


def memory_bytes(size: str) -> int | None:
    """Docker's memory size ("512m", "4g", "1.5G", "4gb", a plain number of bytes) in bytes; None if it is not one."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*", str(size).lower())
    if not match or float(match.group(1)) <= 0:
        return None
    return int(float(match.group(1)) * 1024 ** "bkmgt".index(match.group(2) or "b"))


@dataclass
class SandboxLimits:
    """Resources of one sandbox; also the Hydra schema of the `sandbox` config group (with base_image)."""
    cpus: float = 1.0
    memory: str = "4g"
    pids: int = 1024
    network: bool = False
    max_output_bytes: int = MAX_OUTPUT_BYTES  # per command, on every exec path
    max_patch_bytes: int = 5 * 2**20  # a larger change is recorded patch_too_large, never read whole
    # what one sandbox may write: its writable layer's size where the storage driver limits it (Docker:
    # devicemapper, btrfs, zfs, overlay2 over xfs with pquota), and the free space a run needs to start;
    # "0": neither (a machine whose disk is managed otherwise)
    disk: str = "10g"

    def problems(self) -> list[str]:
        """What is out of range, one line each, caught before any container starts."""
        out = []
        if not self.cpus > 0:
            out.append(f"cpus must be more than 0, got {self.cpus}")
        if memory_bytes(self.memory) is None:
            out.append(f"memory must be a size such as 512m or 4g, got {self.memory!r}")
        if self.pids < 1:
            out.append(f"pids must be at least 1, got {self.pids}")
        if self.max_output_bytes < 1:
            out.append(f"max_output_bytes must be at least 1, got {self.max_output_bytes}")
        if self.max_patch_bytes < 1:
            out.append(f"max_patch_bytes must be at least 1, got {self.max_patch_bytes}")
        if memory_bytes(self.disk) is None and self.disk.strip() != "0":  # (0: no limit, no free-disk check)
            out.append(f"disk must be a size such as 10g or 500m (0: none), got {self.disk!r}")
        return out

    def for_task(self, cpus: float | None, memory: str | None) -> "SandboxLimits":
        """These limits with a task's own CPUs and memory where it names them (CPUs capped at this machine's)."""
        return replace(self, cpus=min(cpus, float(os.cpu_count() or 1)) if cpus else self.cpus,
                       memory=memory or self.memory)


@runtime_checkable
class Stream(Protocol):
    """A byte stream to a long-lived process in the sandbox."""

    def send(self, data: bytes) -> None: ...

    def recv(self, timeout: float) -> bytes:
        """What arrived within `timeout` seconds (b"" if nothing did); EOFError once the process is gone."""
        ...

    def exit_code(self) -> int | None: ...

    def close(self) -> None: ...


class Sandbox(Protocol):
    limits: SandboxLimits
    workdir: str  # where the task's code is and the agent works (/testbed; a Harbor task's WORKDIR)
    pins: dict[str, str]  # files (workdir-relative) the agent may not change, with their sha256 in the image

    def exec(self, cmd: str, timeout: float = 60, cwd: str | None = None,
             env: dict[str, str] | None = None, login: bool = True) -> ExecResult:
        """`cmd` in bash as the sandbox's root. login=True: a login shell (`bash -lc`, what an agent's
        commands get: its profile scripts run); False: `bash --noprofile --norc -c`, nothing of the
        sandbox's profile or rc files (what the grader's own commands get: `harness_exec`)."""
        ...

    def read_file(self, path: str, max_bytes: int = READ_CAP) -> bytes:
        """The file's bytes; FileNotFoundError, IsADirectoryError, FileChanged; FileTooLarge (with the first
        `max_bytes`) past `max_bytes`, of which no more than that is taken in (harness/sandbox/bounded.py)."""
        ...

    def write_file(self, path: str, contents: str | bytes) -> None:
        """Missing parent directories are created; NotADirectoryError when a parent is a file."""
        ...

    def write_files(self, files: Mapping[str, str | bytes]) -> None:
        """Several files at once (path -> contents); missing parent directories are created."""
        ...

    def diff(self) -> str:
        """The change to the working directory since the base commit; raises NoPatch when the sandbox's
        repository or git cannot give one."""
        ...

    def open_stream(self, cmd: list[str], tty: bool = True, env: dict[str, str] | None = None,
                    workdir: str | None = None) -> Stream: ...

    def close(self) -> None: ...


@runtime_checkable
class Pinnable(Protocol):
    """A capability some sandboxes have: moving the running sandbox onto given CPUs (timing runs)."""

    def pin(self, cpuset: str) -> None: ...


@runtime_checkable
class Freezable(Protocol):
    """Capabilities the grader uses to freeze a built state: every process ended, and what changed."""

    def restart(self) -> None:
        """Kill every process in the sandbox (all its files kept) and start it again, ready for exec."""

    def processes(self) -> list[str]:
        """The command lines of the processes running in the sandbox (its own keep-alive left out), as seen
        from outside it."""
        ...

    def read_tree(self, path: str) -> dict[str, bytes]:
        """Every regular file under the directory `path` (name relative to it -> contents), read from
        outside the sandbox in one transfer; {} when there is no such directory."""
        ...

    def changed_paths(self) -> list[str]:
        """The deepest paths added, changed or deleted since the sandbox started from its image (not the
        directories above them), as seen from outside it (the sandbox's own tools are not asked)."""
        ...


@runtime_checkable
class SharesHost(Protocol):
    """A capability of sandboxes whose processes are the host's own (the opt-in unsandboxed provider): the
    grader's fence (harness.grader.isolation) acts on the user and the folders they name, never on the host's
    whole file system or on a user the host has."""
    run_uid: int  # the fenced test processes' user: this sandbox's own, no other process's
    shared_dirs: tuple[str, ...]  # the host's world-writable folders its processes can write (/tmp, /dev/shm)


@runtime_checkable
class Listenable(Protocol):
    """A capability some sandboxes have: a port on the sandbox's own loopback that this process serves."""

    def listen(self, port: int) -> socket.socket:
        """A socket listening on 127.0.0.1:`port` inside the sandbox, for this process to accept on: what
        connects is in the sandbox, and nothing outside it can reach the port (netns.py). SandboxError where
        the provider cannot (not root, a remote engine) or the port is taken there."""
        ...


@runtime_checkable
class Connectable(Protocol):
    """A capability some sandboxes have: this process reaching a server that listens inside the sandbox."""

    def connection_sockets(self, count: int = 1) -> list[socket.socket]:
        """`count` fresh, unconnected TCP sockets in the sandbox's network namespace: connected to
        127.0.0.1:PORT, each reaches what listens on the sandbox's own loopback (a service task's server,
        for the grader's client), and nothing else. SandboxError where the provider cannot (not root, a
        remote engine)."""
        ...


@runtime_checkable
class Checkpointable(Protocol):
    """A capability some sandboxes have: their file system kept as a point a fresh sandbox starts from."""

    def checkpoint(self, name: str, labels: dict[str, str] | None = None) -> str:
        """Every file the sandbox holds now, kept under `name` (e.g. `optrunner/checkpoint:<tag>`) with these
        labels, which the provider's `start` takes as an image; its processes are not kept. SandboxError when
        it cannot."""
        ...


@runtime_checkable
class Portable(Protocol):
    """A capability some Checkpointable sandboxes have: a checkpoint as bytes another machine's engine rebuilds
    it from (its provider's `import_checkpoint(name, base, archives, labels)`), e.g. for a Ray node continuing a
    rollout another node checkpointed."""

    def export_checkpoint(self, name: str) -> tuple[bytes, bool]:
        """Checkpoint `name`, just made by `checkpoint` with nothing run since, as one archive; and whether it
        stands alone (True) or holds only the changes since the checkpoint this sandbox started from, whose
        archives come before it (False)."""
        ...


def harness_exec(sandbox: "Sandbox", cmd: str, timeout: float = 60, cwd: str | None = None,
                 env: Mapping[str, str] | None = None) -> ExecResult:
    """One of the grader's own commands in `sandbox`: no login shell, TRUSTED_ENV (then `env`)."""
    return sandbox.exec(cmd, timeout=timeout, cwd=cwd, env={**TRUSTED_ENV, **(env or {})}, login=False)


def shell_flags(login: bool) -> list[str]:
    """bash's flags before the command: a login shell, or one that reads no start-up file."""
    return ["-lc"] if login else ["--noprofile", "--norc", "-c"]


def pin_if_possible(sandbox: object, cpuset: str) -> bool:
    """Pin `sandbox` to `cpuset` when its provider can; False when it cannot."""
    if isinstance(sandbox, Pinnable):
        sandbox.pin(cpuset)
        return True
    return False


def close_quietly(sandbox: Sandbox) -> None:
    """Close a sandbox whose failure no longer matters (it is gone already, or an exit hook removes it)."""
    try:
        sandbox.close()
    except SandboxError:
        pass


@dataclass
class OutputCapture:
    """Keeps the first and last `cap/2` bytes of a stream, counting what falls in between: the one
    head/tail capture every exec path uses."""
    cap: int = MAX_OUTPUT_BYTES
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

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes of output omitted ...]\n{tail}"
        return head + tail
