"""Our bubblewrap sandboxes on this machine: where their files live, and every way they are removed.

Each sandbox is a directory under STATE (its writable layer and `sandbox.json`: the process that started
it, the host pid of its init and its pid namespace, its labels). Killing the init ends every process of
the sandbox (they all live in its pid namespace); removing the directory removes its files. This process
closes its own sandboxes on close(), at interpreter exit and on SIGTERM/SIGINT when no other handler was
installed; `remove_sandboxes` is the one cleanup function (`cleanup`: those of dead processes, ours, all).
A runner killed with SIGKILL leaves its sandboxes to the next `cleanup` or run.

Whose doing a sandbox's end was (`killed_from_inside`): bwrap's init exits 128+9 both when its keep-alive is
killed from inside (`pkill -KILL -x sleep`, `kill -9 -1`) and when the init itself is killed from the host, so
every kill of ours says so first (the sandbox's own `_ending`; a cleanup marks the directory ENDED); a stopped
sandbox that no kill of ours ended was ended by its own processes. A kill -9 from outside our processes (a
person's) cannot be told from that and counts as the sandbox's doing.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from harness.sandbox import live
from harness.sandbox.bwrap import cgroups, ids, uplink
from harness.sandbox.bwrap.outside import exited, pids_in, state_folder

STATE = state_folder()
Scope = Literal["orphans", "mine", "all"]
META = "sandbox.json"
ENDED = "ended"  # made in a sandbox's directory before a cleanup kills it: its end is ours, not its processes'
GONE = ".gone-"  # a sandbox directory being deleted (remove_tree), named with the deleting process's pid


def make_state() -> None:
    """STATE made, and (run by root) checked open to a sandbox's root: SandboxUnavailable in one line."""
    if not ids.shifted():
        STATE.mkdir(parents=True, exist_ok=True)
        return
    if STATE.is_dir() and not STATE.stat().st_mode & 0o001:  # (its own: passed through, never listed, by the range)
        STATE.chmod(STATE.stat().st_mode | 0o711)
    ids.reachable(STATE)  # (before anything is made)
    for part in reversed((STATE, *STATE.parents)):  # the folders made here are open whatever the umask
        if not part.exists():
            part.mkdir(exist_ok=True)
            part.chmod(0o711)


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# ---------------------------------------------------------------- this process's live sandboxes
# (harness.sandbox.live: one registry for every provider, closed at exit and on signals)
def track(directory: Path, close: Callable[[], None]) -> None:
    live.track("bwrap", str(directory), close, _sweep)


def untrack(directory: Path) -> None:
    live.untrack("bwrap", str(directory))


def _sweep() -> None:
    """Every sandbox this process's record names: one whose close() another thread had begun (a worker
    closing its rollout's sandbox while the process exits) is no longer tracked, and only its record says
    whose it is (as Docker's labels do)."""
    try:
        remove_sandboxes("mine")
    except OSError:
        pass


# ---------------------------------------------------------------- ending one, by its record
def pidns_of(pid: int) -> int | None:
    """The pid namespace of a running process; None once it has exited (also a zombie not reaped yet)."""
    try:
        ns = os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None
    return None if exited(pid) else ns


def kill_init(pid: int, pidns: int, wait_s: float = 10.0) -> None:
    """SIGKILL the sandbox's init (and so every process in its pid namespace) if that pid is still it, and
    wait until the namespace is empty."""
    if pid > 0 and pidns_of(pid) == pidns:  # not a reused pid
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while pidns and any(True for _ in pids_in(pidns)) and time.monotonic() < deadline:
        time.sleep(0.005)


def killed_from_inside(directory: Path, keeper: "subprocess.Popen[bytes] | None", cgroup: Path | None) -> str | None:
    """How a stopped sandbox's own processes ended it (one line); None when a cleanup ended it (its directory
    marked ENDED, or gone). The caller rules out its own kills."""
    # (the marker first: a cleanup renames the directory away whole, marker and all, at any moment)
    if (directory / ENDED).exists() or not directory.is_dir():
        return None
    status = None
    if keeper is not None:
        try:
            status = keeper.wait(5)  # bwrap exits once its init has: with the keep-alive's status
        except subprocess.TimeoutExpired:
            pass
    if cgroups.oom_kills(cgroup):
        return f"its processes ran out of memory (bwrap exited with {status})"
    return f"a process inside it killed its keep-alive (bwrap exited with {status}), with no kill of ours"


def remove_tree(directory: Path) -> None:
    """Remove a sandbox's directory, also the unwritable directories a process inside (or the overlay's
    own work directory, mode 000) left. It is first renamed out of the way, in one step: a sandbox whose
    directory is half deleted (its ENDED marker gone, the rest not yet) would read as ended by its own
    processes (killed_from_inside) to the run using it."""
    gone = directory.with_name(f"{GONE}{directory.name}.{os.getpid()}")
    try:
        directory.rename(gone)
    except FileNotFoundError:
        return  # (another cleanup's, already)
    except OSError:
        gone = directory
    _delete(gone)


def _delete(directory: Path) -> None:
    tried: set[str] = set()

    def writable_then_retry(func: Callable[..., object], path: str, _exc: object) -> None:
        if path in tried:  # (made writable once and still failing: leave it, as the rest is removed)
            return
        tried.add(path)
        try:
            os.chmod(os.path.dirname(path), stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)
                shutil.rmtree(path, onerror=writable_then_retry)
            else:
                os.unlink(path)
        except OSError:
            pass

    shutil.rmtree(directory, onerror=writable_then_retry)


def note(directory: Path, **fields: object) -> None:
    """Add `fields` to a sandbox's record (what a later cleanup needs to end it). The record is replaced whole
    (a new file renamed over it): another process's cleanup reading it meanwhile would take a truncated one for
    a start that died half-way, remove the directory of a live sandbox and leave its processes running."""
    record = json.loads((directory / META).read_text())
    record.update(fields)
    fresh = directory / f".{META}.{os.getpid()}.{threading.get_ident()}"
    fresh.write_text(json.dumps(record))
    os.replace(fresh, directory / META)


def read_meta(directory: Path) -> dict[str, Any]:
    try:
        return json.loads((directory / META).read_text())
    except (OSError, ValueError):
        return {}


# ---------------------------------------------------------------- cleanup
def remove_sandboxes(scope: Scope = "orphans", labels: dict[str, str] | None = None) -> int:
    """Remove our sandboxes on this machine; returns how many were removed.

    orphans: those whose starting process is gone (a crash, a kill -9) and half-made ones it left;
    mine: those this process started; all: every one, also those of runs still going.
    `labels` narrows any scope to sandboxes that also carry these labels.
    """
    if not STATE.is_dir():
        return 0
    host, me = socket.gethostname(), owner_id()
    removed = 0
    for directory in sorted(STATE.glob("sbx-*")):
        meta = read_meta(directory)
        tags = meta.get("labels") or {}
        if any(tags.get(k) != v for k, v in (labels or {}).items()):
            continue
        owner = str(meta.get("owner") or "")
        if scope == "mine" and owner != me:
            continue
        if scope == "orphans" and not _orphaned(owner, host):
            continue
        try:
            (directory / ENDED).touch()
        except OSError:
            pass  # (half-made, or going already)
        kill_init(int(meta.get("init") or 0), int(meta.get("pidns") or 0))
        uplink.stop(int(meta.get("uplink") or 0))
        remove_tree(directory)
        removed += 1
    for gone in STATE.glob(f"{GONE}*"):  # deletions their process did not finish (it was killed meanwhile)
        pid = gone.name.rpartition(".")[2]
        if pid.isdigit() and exited(int(pid)):
            _delete(gone)
    return removed


def _orphaned(owner: str, host: str) -> bool:
    owner_host, _, pid = owner.rpartition(":")
    if not owner_host:
        return True  # no record yet: a start that died half-way
    if owner_host != host or not pid.isdigit():
        return False  # another machine's (a shared home directory): not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
