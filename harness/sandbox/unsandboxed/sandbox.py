"""`HostSandbox`: the sandbox interface over plain processes of this host (no isolation: see __init__.py).

Guarantees it keeps: a command's timeout stops it (`timeout -k 5`, then its process group and its user's
processes killed from here); output decoded without failing and capped; files read capped, and only the
state's own (a path outside the fixed paths is refused, a link is not followed out of the state); closing
it (exit, signals, a later cleanup) leaves no process of its users, no file of theirs in the shared
folders and no folder of its own.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from harness.gpus import Gpu, visible_env
from harness.sandbox import live
from harness.sandbox.gitdiff import take_diff
from harness.layout import HIDDEN_DIR, SOLUTION_DIR
from harness.sandbox.interface import (BASE_COMMIT_LABEL, READ_CAP, TESTBED, ExecResult, FileTooLarge, OutputCapture,
                                       SandboxError, SandboxLimits, Stream, shell_flags)
from harness.sandbox.unsandboxed import state
from harness.sandbox.unsandboxed.state import LINKED

KILL_GRACE = 5  # seconds between TERM and KILL (timeout -k)
BACKSTOP_GRACE = 15  # extra seconds before a command that ignored its timeout is killed from here
PROVIDER = "unsandboxed"
# Root's commands make what they make group-writable: in the work tree (its folders' group the builder's) a
# folder or file a patch adds stays the builder's to build in; the fence takes group write off after the build.
ROOT_UMASK = 0o002
DIFF_FOLDER = "/tmp/.optrunner-diff."  # (gitdiff's: made by root, the one place outside the state read back)


@dataclass(frozen=True)
class Image:
    """A task's image over this host: its repository (`directory`/testbed) and what its shells start with."""
    name: str
    directory: Path
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


class HostSandbox:
    """A graded state (or an agent's workspace) as a folder of this host and two users of its own.
    Use `HostSandbox.start(image)`; always close()."""

    def __init__(self, directory: Path, image: Image, limits: SandboxLimits, slot: int, slot_fd: int) -> None:
        self.directory, self.image, self.limits = directory, image, limits
        self.files, self.home = directory / "files", directory / "home"
        self.workdir = TESTBED
        self.pins: dict[str, str] = {}
        self.base_commit = image.labels.get(BASE_COMMIT_LABEL)
        self.slot, self._slot_fd = slot, slot_fd
        self.run_uid, self.builder = state.users(slot)
        self.shared_dirs = state.shared_dirs()
        self.gpus: tuple[Gpu, ...] = ()
        self._cpus: str | None = None
        self._closed = False
        self._manifest: dict[str, tuple[int, int, int]] = {}

    @classmethod
    def start(cls, image: Image, limits: SandboxLimits | None = None, labels: dict[str, str] | None = None,
              gpus: Sequence[Gpu] = ()) -> "HostSandbox":
        state.make_root()
        slot, fd = state.take_slot()
        made = Path(tempfile.mkdtemp(prefix=".sbx-", dir=state.ROOT))
        directory = made.with_name("sbx-" + made.name.removeprefix(".sbx-"))
        box = cls(directory, image, limits or SandboxLimits(), slot, fd)
        box.gpus = tuple(gpus)
        try:
            made.chmod(0o711)
            (made / "files").mkdir(mode=0o711)
            record = {"owner": state.owner_id(), "labels": labels or {}, "image": image.name, "slot": slot}
            (made / state.META).write_text(json.dumps(record))
            made.rename(directory)  # (named once its record is in: cleanup never meets a nameless one)
        except BaseException:
            shutil.rmtree(made, ignore_errors=True)
            os.close(fd)
            raise
        live.track(PROVIDER, directory.name, box.close, sweep_mine)
        try:
            box._fill()
        except BaseException:
            box.close()
            raise
        return box

    def _fill(self) -> None:
        """The image's repository copied in: the work tree writable by the builder's group, the folder and
        .git root's (root's git trusts only a repository root owns)."""
        testbed = self.files / "testbed"
        shutil.copytree(self.image.directory / "testbed", testbed, symlinks=True)
        os.chown(testbed, 0, self.builder)
        testbed.chmod(0o2775)
        for folder, dirs, names in os.walk(testbed):
            if folder == str(testbed) and ".git" in dirs:
                dirs.remove(".git")
            for name in [*dirs, *names]:
                os.chown(os.path.join(folder, name), self.builder, self.builder, follow_symlinks=False)
        self.home.mkdir(mode=0o700)
        profile = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in self._env(None, True).items() if k != "HOME")
        (self.home / ".bash_profile").write_text(profile + '[ -f ~/.bashrc ] && . ~/.bashrc\n')
        for owned in (self.home, self.home / ".bash_profile"):
            os.chown(owned, self.builder, self.builder)
        self._manifest = _manifest(testbed)

    # -- commands

    def _env(self, env: Mapping[str, str] | None, login: bool) -> dict[str, str]:
        user = {"USER": "optrunner", "LOGNAME": "optrunner"} if login else {"USER": "root", "LOGNAME": "root"}
        return {"HOME": str(self.home), **user, **self.image.env, **visible_env(self.gpus), **(env or {})}

    def exec(self, cmd: str, timeout: float = 60, cwd: str | None = None,
             env: dict[str, str] | None = None, login: bool = True) -> ExecResult:
        """`cmd` as the builder (login: the agent's and the build's commands) or as root (the grader's own)."""
        if self._closed:
            raise SandboxError("sandbox is closed")
        argv = ["timeout", "-k", str(KILL_GRACE), f"{timeout:g}", "bash", *shell_flags(login), cmd]
        if self._cpus:
            argv = ["taskset", "-c", self._cpus, *argv]
        # (PWD: the shell's pwd is the sandbox's path, /testbed, not the state's folder the link leads to)
        user = self.builder if login else None  # (None: root, this process's own)
        capture = OutputCapture(self.limits.max_output_bytes)
        with state.pointed(self.files):
            started = time.monotonic()
            try:
                proc = subprocess.Popen(argv, cwd=cwd or self.workdir,
                                        env={**self._env(env, login), "PWD": cwd or self.workdir},
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True, user=user, group=user,
                                        extra_groups=[] if login else None, umask=-1 if login else ROOT_UMASK)
            except (FileNotFoundError, NotADirectoryError) as err:
                return ExecResult(f"bash: cd: {cwd or self.workdir}: {err.strerror}\n", 1, False, 0.0)
            assert proc.stdout is not None
            reader = threading.Thread(target=_drain, args=(proc.stdout, capture), daemon=True)
            reader.start()
            wedged = False
            try:
                code = proc.wait(timeout + KILL_GRACE + BACKSTOP_GRACE)
            except subprocess.TimeoutExpired:
                wedged, code = True, -1
            finally:  # no process of the command outlives it
                _kill_group(proc.pid)
                state.kill_user(self.builder)
                proc.wait()
            reader.join(5)
        duration = time.monotonic() - started
        if wedged:
            return ExecResult(capture.text() + "\n[exec wedged: its processes killed]", -1, True, duration,
                              capture.truncated)
        timed_out = code in (124, 137) and duration >= timeout * 0.98
        return ExecResult(capture.text(), code, timed_out, duration, capture.truncated)

    def open_stream(self, cmd: list[str], tty: bool = True, env: dict[str, str] | None = None,
                    workdir: str | None = None) -> Stream:
        """None here: a long-lived process would see the fixed paths pointed at other states between its
        commands. Callers that can fall back to exec do (FreshProcesses)."""
        raise NotImplementedError("the unsandboxed provider has no streams")

    # -- files (the state's own only)

    def _real(self, path: str) -> Path:
        """The state's file for sandbox path `path`; SandboxError for a path outside the fixed ones, or one
        whose folders lead out of the state through a link."""
        inside = PurePosixPath(path if path.startswith("/") else f"{self.workdir}/{path}")
        for fixed, name in LINKED.items():
            if inside == PurePosixPath(fixed) or PurePosixPath(fixed) in inside.parents:
                real = self.files / name / inside.relative_to(fixed)
                parent = os.path.realpath(real.parent)
                if parent != str(self.files) and not parent.startswith(str(self.files) + "/"):
                    raise SandboxError(f"unsandboxed: {path} leads out of the state through a link")
                return real
        top = inside.parents[0] if len(inside.parts) > 2 else None
        if top is not None and str(top).startswith(DIFF_FOLDER) and top.parent == PurePosixPath("/tmp"):
            st = os.lstat(top) if os.path.lexists(top) else None  # (the diff's own folder: root's, 0700)
            if st is not None and st.st_uid == 0 and st.st_mode & 0o170777 == 0o040700:
                return Path(inside)
        raise SandboxError(f"unsandboxed: {path} is this host's, not the state's (its files: "
                           f"{', '.join(LINKED)})")

    def read_file(self, path: str, max_bytes: int = READ_CAP) -> bytes:
        real = self._real(path)
        try:  # (no wait on a FIFO the agent's user left there)
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as err:
            if os.path.isdir(real):
                raise IsADirectoryError(path) from None
            raise FileNotFoundError(path) from err
        with os.fdopen(fd, "rb") as fh:
            kind = stat.S_IFMT(os.fstat(fd).st_mode)
            if kind == stat.S_IFDIR:
                raise IsADirectoryError(path)
            if kind != stat.S_IFREG:
                raise FileNotFoundError(f"{path} is no regular file")
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise FileTooLarge(path, max(len(data), os.path.getsize(real)), max_bytes, data[:max_bytes])
        return data

    def write_file(self, path: str, contents: str | bytes) -> None:
        self.write_files({path: contents})

    def write_files(self, files: Mapping[str, str | bytes]) -> None:
        for path, contents in files.items():
            real = self._real(path)
            try:
                self._make_parents(real.parent)
            except (FileExistsError, NotADirectoryError):
                raise NotADirectoryError(20, "Not a directory", path) from None
            data = contents.encode() if isinstance(contents, str) else contents
            if os.path.lexists(real) and not (real.is_file() and not real.is_symlink()) and not real.is_dir():
                real.unlink()  # (a link, a FIFO the agent's user left: replaced, never written through)
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            if self._in_work_tree(real):
                os.chown(real, self.builder, self.builder)

    def _make_parents(self, folder: Path) -> None:
        missing = []
        while not folder.is_dir():
            missing.append(folder)
            folder = folder.parent
        for made in reversed(missing):
            made.mkdir(mode=0o755)
            if self._in_work_tree(made):
                os.chown(made, self.builder, self.builder)

    def _in_work_tree(self, real: Path) -> bool:
        testbed = self.files / "testbed"
        return testbed in real.parents and (testbed / ".git") not in (real, *real.parents)

    def diff(self) -> str:
        return take_diff(self, self.base_commit, None)

    # -- Pinnable, Freezable

    def pin(self, cpuset: str) -> None:
        self._cpus = cpuset

    def restart(self) -> None:
        """Every process of the state's users ended (the grader's commands leave none of their own)."""
        for uid in (self.builder, self.run_uid):
            state.kill_user(uid)

    def processes(self) -> list[str]:
        lines = []
        for uid in (self.builder, self.run_uid):
            for pid in state.pids_of(uid):
                try:
                    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                lines.append(raw.replace(b"\0", b" ").decode(errors="replace").strip())
        return lines

    def read_tree(self, path: str) -> dict[str, bytes]:
        try:
            top = self._real(path)
        except SandboxError:
            return {}
        if not top.is_dir() or top.is_symlink():
            return {}
        out = {}
        for folder, _dirs, names in os.walk(top):
            for name in names:
                full = Path(folder) / name
                if full.is_file() and not full.is_symlink():
                    out[str(full.relative_to(top))] = full.read_bytes()
        return out

    def changed_paths(self) -> list[str]:
        """The repository's files changed since the state began, the files in its tests' and solution's folders,
        and its users' files in the shared folders."""
        now = _manifest(self.files / "testbed")
        changed = {f"{TESTBED}/{name}" for name in set(now) | set(self._manifest)
                   if now.get(name) != self._manifest.get(name)}
        for fixed in (HIDDEN_DIR, SOLUTION_DIR):  # (empty when the state began)
            changed |= {f"{fixed}/{name}" for name in _manifest(self.files / LINKED[fixed])}
        changed |= set(state.files_of((self.builder, self.run_uid)))
        return sorted(changed)

    # -- lifetime

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            state.clear_users(self.slot)
            shutil.rmtree(self.directory, ignore_errors=True)
        finally:
            os.close(self._slot_fd)
            live.untrack(PROVIDER, self.directory.name)
        state.release_links()

    def __enter__(self) -> "HostSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sweep_mine() -> int:
    return remove_states("mine")


def remove_states(scope: str, labels: dict[str, str] | None = None) -> int:
    """States of dead owners (orphans), of this process (mine) or all, narrowed to `labels`; their users'
    processes and files go with them. How many were removed."""
    me, removed = state.owner_id(), 0
    for folder, record in state.records():
        owner = str(record.get("owner", ""))
        if scope == "orphans" and state.owner_alive(owner):
            continue
        if scope == "mine" and owner != me:
            continue
        if labels and any(dict(record.get("labels") or {}).get(k) != v for k, v in labels.items()):  # type: ignore[call-overload]
            continue
        slot = record.get("slot")
        if isinstance(slot, int):
            state.clear_users(slot)
        shutil.rmtree(folder, ignore_errors=True)
        live.untrack(PROVIDER, folder.name)
        removed += 1
    if removed:
        state.release_links()
    return removed


def _manifest(top: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for folder, dirs, names in os.walk(top):
        if folder == str(top) and ".git" in dirs:
            dirs.remove(".git")
        for name in names:
            full = os.path.join(folder, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            out[os.path.relpath(full, top)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def _drain(pipe: IO[bytes], capture: OutputCapture) -> None:
    while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
        capture.add(chunk)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass

