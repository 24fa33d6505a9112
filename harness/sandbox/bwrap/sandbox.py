"""`BwrapSandbox`: the sandbox interface on a bubblewrap sandbox, for machines without Docker.

One sandbox is one long-lived `bwrap` process (its init, in new user, pid, ipc, uts, cgroup and network
namespaces; given the network, bwrap.uplink connects the last) over an overlay: the root file system
read-only underneath, a writable layer of its own above (a directory of ours: what changed is read from
outside, harness.sandbox.overlay). Every command joins those namespaces through a helper of the host's
(hardening.enter: it cuts root's powers before anything of the sandbox's runs), as root of the
sandbox's user namespace: a capability there is worth nothing on the host. Run by root, its uids 0-65535
are a range of host ids no one else has (ids.py: the grader's fence can drop to an unprivileged user, as on
Docker); run by another user, only that one (root inside).

Guarantees, as DockerSandbox's: a command's timeout stops it (`timeout -k 5` inside, a host backstop that
ends the sandbox if an exec wedges anyway); output decoded without failing and capped, files read capped; a
dead sandbox is a SandboxError; closing it (exit, signals, a later cleanup) leaves no process, mount or folder.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from harness.gpus import Gpu, visible_env
from harness.sandbox.archive import tar_of
from harness.sandbox.bounded import bounded_output
from harness.sandbox import overlay
from harness.sandbox.bwrap import cgroups, devices, hardening, ids, outside, registry, uplink
from harness.sandbox.bwrap.binary import bwrap_path, nsenter_path, usable
from harness.sandbox.bwrap.checkpoints import KeptLayers
from harness.sandbox.bwrap.ports import Ports
from harness.sandbox.bwrap.rootfs import Rootfs
from harness.sandbox.bwrap.stream import BwrapStream, drain
from harness.sandbox.gitdiff import take_diff
from harness.sandbox.interface import (BASE_COMMIT_LABEL, GIT_DIR_LABEL, PINS_LABEL, READ_CAP, TESTBED, WORKDIR_LABEL,
                                       ExecResult, OutputCapture, SandboxError, SandboxKilledFromInside,
                                       SandboxLimits, SandboxUnavailable, shell_flags)

KILL_GRACE = 5  # seconds between TERM and KILL inside the sandbox
BACKSTOP_GRACE = 15  # extra seconds the host waits before declaring an exec wedged
START_TIMEOUT = 30.0
_NOT_FOUND, _IS_DIR, _NOT_DIR = 44, 45, 46  # exit codes of the file helpers below


class BwrapSandbox(KeptLayers, Ports):
    """A running bubblewrap sandbox over a root file system. Use `BwrapSandbox.start(rootfs)`; always close()."""

    def __init__(self, directory: Path, rootfs: Rootfs, limits: SandboxLimits) -> None:
        labels = rootfs.labels
        self.directory, self.rootfs, self.limits = directory, rootfs, limits
        self.workdir = labels.get(WORKDIR_LABEL, TESTBED)
        self.git_dir = labels.get(GIT_DIR_LABEL)
        self.base_commit = labels.get(BASE_COMMIT_LABEL)
        self.pins: dict[str, str] = json.loads(labels.get(PINS_LABEL) or "{}")
        self.upper, self.work = directory / "upper", directory / "work"
        self._init = self._pidns = 0  # host pid of the sandbox's init (pid 1 inside), its pid namespace
        self._keeper: subprocess.Popen[bytes] | None = None
        self._uplink: uplink.Uplink | None = None  # for a sandbox given the network
        self._cgroup: Path | None = None
        self._cpus: str | None = None
        self._closed = self._ending = False  # _ending: a kill of ours ends it (not its own processes)
        self.gpus: tuple[Gpu, ...] = ()  # its own: their device nodes bound, CUDA shown only them

    @classmethod
    def start(cls, rootfs: Rootfs, limits: SandboxLimits | None = None,
              labels: dict[str, str] | None = None, gpus: Sequence[Gpu] = ()) -> "BwrapSandbox":
        usable()
        limits = limits or SandboxLimits()
        registry.make_state()
        # made under a hidden name and renamed once its record is in: cleanup never sees a nameless one
        made = Path(tempfile.mkdtemp(prefix=".sbx-", dir=registry.STATE))
        made.chmod(0o711)  # (passed through by the sandbox's root to its layers: ids.py)
        for part in ("upper", "work", "views"):
            (made / part).mkdir()
        record = {"owner": registry.owner_id(), "labels": labels or {}, "image": rootfs.name}
        (made / registry.META).write_text(json.dumps(record))
        directory = made.with_name("sbx-" + made.name.removeprefix(".sbx-"))
        made.rename(directory)
        box = cls(directory, rootfs, limits)
        box.gpus = tuple(gpus)
        registry.track(directory, box.close)
        try:
            box._cgroup = cgroups.create(directory.name, limits)
            box._launch()
        except BaseException:
            box.close()
            raise
        return box

    # -- the init process

    def _launch(self) -> None:
        """Start the sandbox's init over the overlay and wait until it runs its keep-alive."""
        self._ending = False
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        views = ids.views(self.directory / "views", [low for m in self.rootfs.mounts for low in m.lowers],
                          [source for source, _ in self.rootfs.binds])
        if ids.shifted():  # (root: the launch helper takes and maps the user namespace, bwrap runs in it)
            users = [*hardening.launch(str(views.folder), ids.BASE, ids.IDS, views.specs), bwrap_path()]
        else:
            users = [bwrap_path(), "--unshare-user", "--userns-block-fd", str(block_r)]
        argv = [*hardening.nofile(), *users,
                "--info-fd", str(info_w), "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
                *self._mounts(views),
                "--proc", "/proc", "--dev", "/dev", "--mqueue", "/dev/mqueue", *devices.own(self.directory),
                *devices.SHM, *devices.gpus(self.gpus, self.directory),
                *uplink.namespace(self.directory, self.limits.network), "--hostname", "optrunner", "--chdir", "/",
                *hardening.cap_args(), "--", "sleep", "infinity"]
        log = open(self.directory / "bwrap.log", "wb")
        try:
            self._keeper = subprocess.Popen(self._in_cgroup(argv), pass_fds=(info_w, block_r), stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=log, env=outside.host_env(), start_new_session=True)
        finally:
            log.close()
            os.close(info_w)
            os.close(block_r)
        try:
            info = self._read_info(info_r)
            self._init = int(info["child-pid"])
            self._pidns = registry.pidns_of(self._init) or 0
            # recorded at once: a runner killed from here on leaves a sandbox its cleanup can end
            registry.note(self.directory, init=self._init, pidns=self._pidns)
            if not ids.shifted():
                ids.map_caller(self._init)
                os.write(block_w, b"1")
        finally:
            os.close(info_r)
            os.close(block_w)
        self._wait_running()
        self._sysctl()
        if self.limits.network:
            self._uplink = uplink.start(self._init, self.directory)
            if self._uplink is not None:  # (recorded: a cleanup of this sandbox ends it too)
                registry.note(self.directory, uplink=self._uplink.pid)

    def _mounts(self, views: ids.Views) -> list[str]:
        """bwrap's arguments for the file system: each overlay over its own writable layer (the sandbox
        root's), then the links and the host's folders bound read-only; the host's files through `views`."""
        args: list[str] = []
        for mount in self.rootfs.mounts:
            upper, work = self.upper / mount.key, self.work / mount.key
            upper.mkdir(parents=True, exist_ok=True)
            work.mkdir(parents=True, exist_ok=True)
            ids.own(upper, work)
            # (bwrap stacks each --overlay-src above the ones before it: the top layer comes last)
            args += [arg for lower in reversed(mount.lowers) for arg in ("--overlay-src", views.of(lower))]
            args += ["--overlay", str(upper), str(work), mount.dest]
        for target, path in self.rootfs.symlinks:
            args += ["--symlink", target, path]
        made: set[PurePosixPath] = set()
        for source, path in self.rootfs.binds:  # (the folders above it, where new, open to every user: a
            for parent in reversed(PurePosixPath(path).parents[:-1]):  # test's uid reads a bound python)
                if parent not in made:
                    made.add(parent)
                    args += ["--perms", "0755", "--dir", str(parent)]  # (one already there keeps its mode)
            args += ["--ro-bind", views.of(source), path]
        return args

    def _read_info(self, fd: int) -> dict[str, Any]:
        data, deadline = b"", time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 4096)
                data += chunk
                try:
                    return json.loads(data)
                except ValueError:
                    if chunk:
                        continue
            if self._keeper is not None and self._keeper.poll() is not None:
                raise SandboxUnavailable(f"bwrap: the sandbox did not start: {self._log_line()}")
        raise SandboxError("bwrap: the sandbox did not start within 30 s")

    def _wait_running(self) -> None:
        """Until the init runs the keep-alive (its set-up, the mounts, is done by then)."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if any(outside.command_line(pid) == "sleep infinity" for pid in outside.pids_in(self._pidns)):
                return
            if self._keeper is not None and self._keeper.poll() is not None:
                raise SandboxUnavailable(f"bwrap: the sandbox did not start: {self._log_line()}")
            time.sleep(0.002)
        raise SandboxError("bwrap: the sandbox did not start within 30 s")

    def _sysctl(self) -> None:
        """A System V segment no process holds is removed (no cache across a grader's fenced runs), as on
        Docker; set from the host in the sandbox's own IPC namespace (root only; else left as it is)."""
        if os.geteuid() == 0:
            subprocess.run([nsenter_path(), "-t", str(self._init), "-i", "--", "sh", "-c",
                            "echo 1 > /proc/sys/kernel/shm_rmid_forced"], capture_output=True, env=outside.host_env())

    def _log_line(self) -> str:
        try:
            lines = (self.directory / "bwrap.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return (lines[-1] if lines else "no output")[:300]

    def _alive(self) -> bool:
        """Whether the init runs. (An init that is exiting keeps its pid namespace's link until its last
        process is reaped, but has already let go of its mount namespace: commands could no longer join.)"""
        return (self._init > 0 and registry.pidns_of(self._init) == self._pidns
                and os.path.exists(f"/proc/{self._init}/ns/mnt"))

    def _in_cgroup(self, argv: list[str]) -> list[str]:
        """`argv` started inside the sandbox's cgroup (before it runs anything), and on its CPUs."""
        if self._cpus:  # (host programs by their full path: a stream's child is exec'd without a search)
            argv = [shutil.which("taskset") or "taskset", "-c", self._cpus, *argv]
        if self._cgroup is not None:
            argv = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self._cgroup), *argv]
        return argv

    def _enter(self, cwd: str) -> list[str]:
        """The host command that runs what follows it in the sandbox, as its root, in `cwd`."""
        if self._closed:
            raise SandboxError("sandbox is closed")
        if not self._alive():
            raise self._lost("the sandbox's init is gone (the sandbox stopped)")
        return self._in_cgroup(hardening.enter(self._init, cwd))

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        return {"HOME": "/root", "HOSTNAME": "optrunner", **self.rootfs.env, **visible_env(self.gpus), **(env or {})}

    # -- exec

    def exec(self, cmd: str, timeout: float = 60, cwd: str | None = None,
             env: dict[str, str] | None = None, login: bool = True) -> ExecResult:
        argv = [*self._enter(cwd or self.workdir), "timeout", "-k", str(KILL_GRACE), f"{timeout:g}", "bash",
                *shell_flags(login), cmd]
        capture = OutputCapture(self.limits.max_output_bytes)
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=self._env(env), start_new_session=True)
        assert proc.stdout is not None
        reader = threading.Thread(target=drain, args=(proc.stdout, capture), daemon=True)
        reader.start()
        try:
            code = proc.wait(timeout + KILL_GRACE + BACKSTOP_GRACE)
        except subprocess.TimeoutExpired:  # the timeout inside did not end it: end the sandbox itself
            proc.kill()
            self._kill()
            reader.join(5)
            return ExecResult(capture.text() + "\n[exec wedged: sandbox killed]", -1, True,
                              time.monotonic() - started, capture.truncated)
        reader.join()
        duration = time.monotonic() - started
        if not self._alive():
            raise self._lost("the sandbox stopped while a command ran in it")
        timed_out = code in (124, 137) and duration >= timeout * 0.98
        return ExecResult(capture.text(), code, timed_out, duration, capture.truncated)

    def _call(self, inner: list[str], data: bytes | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
        """A helper command in the sandbox (root, from /), its whole output kept: for files."""
        try:
            done = subprocess.run([*self._enter("/"), *inner], input=data, capture_output=True, timeout=timeout,
                                  env=self._env(None))
        except subprocess.TimeoutExpired:
            raise SandboxError(f"bwrap: {inner[0]} in the sandbox took over {timeout:g} s") from None
        if not self._alive():
            raise self._lost("the sandbox stopped while a command ran in it")
        return done

    def _lost(self, message: str) -> SandboxError:
        """SandboxKilledFromInside when no kill of ours ended the stopped sandbox (registry.killed_from_inside)."""
        why = None if self._ending else registry.killed_from_inside(self.directory, self._keeper, self._cgroup)
        return SandboxKilledFromInside(f"the sandbox ended: {why}") if why else SandboxError(message)

    def open_stream(self, cmd: list[str], tty: bool = True, env: dict[str, str] | None = None,
                    workdir: str | None = None) -> BwrapStream:
        """Start `cmd` in the sandbox with its stdin attached and return a stream to it."""
        return BwrapStream([*self._enter(workdir or self.workdir), *cmd], self._env(env), tty)

    # -- files

    def _target(self, path: str) -> str:
        return str(PurePosixPath(path if path.startswith("/") else f"{self.workdir}/{path}"))

    def read_file(self, path: str, max_bytes: int = READ_CAP) -> bytes:
        script = f'[ -d "$0" ] && exit {_IS_DIR}; [ -e "$0" ] || exit {_NOT_FOUND}; exec cat -- "$0"'
        try:  # (bytes counted here: past the cap the reader is killed)
            code, data, err = bounded_output([*self._enter("/"), "sh", "-c", script, self._target(path)],
                                             self._env(None), max_bytes, timeout=120, path=path)
        except subprocess.TimeoutExpired:
            raise SandboxError(f"bwrap: reading {path} took over 120 s") from None
        if not self._alive():
            raise self._lost("the sandbox stopped while a command ran in it")
        if code in (_NOT_FOUND, _IS_DIR):
            raise (FileNotFoundError if code == _NOT_FOUND else IsADirectoryError)(path)
        if code != 0:
            raise SandboxError(f"bwrap: reading {path} failed: {err.decode(errors='replace').strip()[:200]}")
        return data

    def write_file(self, path: str, contents: str | bytes) -> None:
        data = contents.encode() if isinstance(contents, str) else contents
        script = f'mkdir -p -- "$(dirname -- "$0")" 2>/dev/null || exit {_NOT_DIR}; cat > "$0"'
        done = self._call(["sh", "-c", script, self._target(path)], data)
        if done.returncode == _NOT_DIR:
            raise NotADirectoryError(20, "Not a directory", path)
        if done.returncode != 0:
            raise SandboxError(f"bwrap: writing {path} failed: {done.stderr.decode(errors='replace').strip()[:200]}")

    def write_files(self, files: Mapping[str, str | bytes]) -> None:
        """Several files in one transfer (one archive, unpacked at /); missing parent directories are created."""
        archive = tar_of({self._target(path).lstrip("/"): contents for path, contents in files.items()})
        done = self._call(["tar", "-x", "-C", "/"], archive)
        if done.returncode != 0:
            raise SandboxError(f"bwrap: writing files failed: {done.stderr.decode(errors='replace').strip()[:200]}")

    def unpack(self, archive: bytes, path: str) -> None:
        """Unpack a tar archive at `path` (created if missing), its modes kept."""
        done = self._call(["sh", "-c", 'mkdir -p -- "$0" && exec tar -x -C "$0"', path], archive)
        if done.returncode != 0:
            raise SandboxError(f"bwrap: unpacking at {path} failed: {done.stderr.decode(errors='replace')[:200]}")

    # -- patch

    def diff(self) -> str:
        """The change to the working directory since the base commit (harness.sandbox.gitdiff)."""
        return take_diff(self, self.base_commit, self.git_dir)

    # -- Pinnable, Freezable

    def pin(self, cpuset: str) -> None:
        """Move the sandbox (every process in it, and all it starts later) onto these CPUs, e.g. "1"."""
        cpus = {int(c) for part in cpuset.split(",") for c in cgroups.cpu_range(part)}
        self._cpus = cpuset
        for pid in outside.pids_in(self._pidns):
            try:
                os.sched_setaffinity(pid, cpus)
            except OSError:
                pass  # gone meanwhile

    def restart(self) -> None:
        """Every process ended; the sandbox started again over the same files."""
        self._kill()
        self._launch()

    def processes(self) -> list[str]:
        """The command lines of the processes in the sandbox but its init and keep-alive, seen from the host."""
        lines = [(pid, outside.command_line(pid)) for pid in outside.pids_in(self._pidns) if pid != self._init]
        keeper = min((pid for pid, line in lines if line == "sleep infinity"), default=None)
        return [line for pid, line in lines if pid != keeper]

    def read_tree(self, path: str) -> dict[str, bytes]:
        found = self.rootfs.mount_of(path)
        if found is None:
            return {}
        mount, inner = found
        return overlay.read_tree([self.upper / mount.key, *mount.lowers], inner)

    def changed_paths(self) -> list[str]:
        points = ({mount.dest for mount in self.rootfs.mounts} | {path for _, path in self.rootfs.symlinks}
                  | {str(p) for _, b in self.rootfs.binds for p in (PurePosixPath(b), *PurePosixPath(b).parents)}
                  | {"/proc", "/dev"})
        return sorted(changed for mount in self.rootfs.mounts for path in overlay.changed_paths(self.upper / mount.key)
                      if (changed := mount.dest.rstrip("/") + path) not in points)  # (bwrap's mount points)

    # -- lifetime

    def _kill(self) -> None:
        self._ending = True
        registry.kill_init(self._init, self._pidns)
        if self._uplink is not None:
            self._uplink.stop()
            self._uplink = None
        if self._keeper is not None:
            try:
                self._keeper.wait(10)
            except subprocess.TimeoutExpired:
                self._keeper.kill()
        self._init = 0

    def stop(self) -> None:
        """End every process, keeping the files (a task layer is then taken from the writable layer)."""
        self._kill()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._kill()
        cgroups.remove(self._cgroup)
        registry.remove_tree(self.directory)
        registry.untrack(self.directory)

    def __enter__(self) -> "BwrapSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
