"""Where unsandboxed states live, the lock that points the fixed paths at one of them, and their users.

ROOT holds the task images (images/<digest>: a repository and a meta.json), the states (sbx-*: `files/`,
one folder per fixed path, `home/`, `sandbox.json`), one lock file per user slot and the host-wide lock.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.layout import HIDDEN_DIR, PATCH_PATH, RUNS_DIR, SOLUTION_DIR, TESTBED, WARM_DIR
from harness.sandbox.interface import SandboxError

ROOT = Path(os.environ.get("OPTRUNNER_UNSANDBOXED_DIR", "/var/lib/optrunner-unsandboxed"))
IMAGES = ROOT / "images"
META = "sandbox.json"
# The fixed paths of a graded state, each a link to the state's own (a folder, but the patch: a file).
LINKED = {TESTBED: "testbed", HIDDEN_DIR: "hidden_tests", SOLUTION_DIR: "solution", RUNS_DIR: "runs",
          WARM_DIR: "warm", PATCH_PATH: "patch"}
FILES = (PATCH_PATH,)
# The host's folders every user can write: the fence lists them, a closed state's users' files there go.
SHARED = ("/tmp", "/var/tmp", "/dev/shm")
# User and group ids no account has: slot n's fenced user is BASE + 2n, its builder BASE + 2n + 1.
UID_BASE = int(os.environ.get("OPTRUNNER_UNSANDBOXED_UIDS", "1900000000"))
SLOTS = 1024


def shared_dirs() -> tuple[str, ...]:
    return tuple(d for d in SHARED if os.path.isdir(d) and not os.path.islink(d))


def make_root() -> None:
    for folder in (ROOT, IMAGES, ROOT / "slots"):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o711)  # (a state's users pass through to their own folders; they list nothing)


def refused_paths() -> list[str]:
    """The fixed paths that are this host's own files or folders (not our links): never replaced."""
    return [path for path in LINKED if os.path.lexists(path) and not os.path.islink(path)]


@contextmanager
def pointed(files: Path) -> Iterator[None]:
    """The host-wide lock held, every fixed path a link into `files` (a state's), for one command; after
    it, what the command did to a path is carried into the state: a path it removed is emptied there, a
    folder or file it made in the link's place replaces the state's."""
    with _locked(wait=True):
        for path, name in LINKED.items():
            _point(path, files / name, path in FILES)
        try:
            yield
        finally:
            for path, name in LINKED.items():
                _adopt(path, files / name)


@contextmanager
def _locked(wait: bool) -> Iterator[bool]:
    """The host-wide lock held for the block (True); without `wait`, False when another holds it."""
    make_root()
    fd = os.open(ROOT / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _point(path: str, target: Path, is_file: bool) -> None:
    if not is_file and not target.is_dir():
        target.mkdir(mode=0o755)
    if os.path.islink(path):
        if os.readlink(path) == str(target):
            return
        os.unlink(path)
    elif os.path.lexists(path):
        raise SandboxError(f"unsandboxed: {path} is this host's own; the provider points it at each graded "
                           "state: move it away")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def _adopt(path: str, target: Path) -> None:
    if os.path.islink(path):
        return
    _remove(target)
    if os.path.lexists(path):  # (made by the command where the link was: the state's now)
        shutil.move(path, target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink()


def release_links() -> None:
    """The links removed (the last state gone): the host's paths as they were. Not waited for: a command
    holds the lock (maybe this process's own, a state closed on a signal mid-command), and the next state
    points them anew, the next release removes them."""
    with _locked(wait=False) as held:
        if held and not any(ROOT.glob("sbx-*")):
            for path in LINKED:
                if os.path.islink(path) and os.readlink(path).startswith(str(ROOT) + "/"):
                    os.unlink(path)


# -- users


def take_slot() -> tuple[int, int]:
    """A free user slot and the open file whose lock holds it for this process (closed: free again). Its
    users' processes and files in the shared folders, a crashed owner's, are removed first."""
    make_root()
    for slot in range(SLOTS):
        fd = os.open(ROOT / "slots" / str(slot), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        clear_users(slot)
        return slot, fd
    raise SandboxError(f"unsandboxed: all {SLOTS} user slots are in use")


def users(slot: int) -> tuple[int, int]:
    """(fenced user, builder) of a slot."""
    return UID_BASE + 2 * slot, UID_BASE + 2 * slot + 1


def pids_of(uid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def kill_user(uid: int) -> None:
    """Every process of `uid` killed (by that user's own kill -1: none escapes by forking meanwhile)."""
    for _ in range(20):
        if not pids_of(uid):
            return
        subprocess.run(["bash", "--noprofile", "--norc", "-c", "kill -KILL -1"], user=uid, group=uid,
                       extra_groups=[], capture_output=True, env={"PATH": "/usr/bin:/bin"}, cwd="/")
        time.sleep(0.02)
    for pid in pids_of(uid):  # (what its own kill could not reach)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def files_of(uids: tuple[int, ...], limit: int = 10_000) -> list[str]:
    """The paths the users own in the shared folders (deepest first)."""
    found: list[str] = []
    for top in shared_dirs():
        for folder, dirs, names in os.walk(top, topdown=False):
            for name in [*names, *dirs]:
                path = os.path.join(folder, name)
                try:
                    if os.lstat(path).st_uid in uids:
                        found.append(path)
                except OSError:
                    pass
                if len(found) >= limit:
                    return found
    return found


def clear_users(slot: int) -> None:
    """A slot's users' processes killed and their files in the shared folders removed."""
    uids = users(slot)
    for uid in uids:
        kill_user(uid)
    for path in files_of(uids):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            pass


# -- owners


def owner_id(pid: int | None = None) -> str:
    """A process named so that a reused pid is not taken for it: pid and start time."""
    pid = pid or os.getpid()
    try:
        start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        start = "?"
    return f"{pid}:{start}"


def owner_alive(owner: str) -> bool:
    pid = owner.partition(":")[0]
    return pid.isdigit() and owner_id(int(pid)) == owner


def records() -> Iterator[tuple[Path, dict[str, object]]]:
    for folder in sorted(ROOT.glob("sbx-*")):
        try:
            yield folder, json.loads((folder / META).read_text())
        except (OSError, ValueError):
            yield folder, {}
