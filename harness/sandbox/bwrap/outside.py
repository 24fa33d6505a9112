"""A running bubblewrap sandbox's processes seen from the host (its files: harness.sandbox.overlay), the
environment of the host programs that start them, and the host folder they keep their state in."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def state_folder() -> Path:
    """Where bwrap's sandboxes (registry) and the host's helpers for them (hardening) live:
    OPTRUNNER_BWRAP_STATE, else root's /var/lib/optrunner/bwrap (a root-run sandbox's own root, host uid
    ids.BASE, passes through it to its layers: not root's closed home), else ~/.cache/optrunner/bwrap."""
    return Path(os.environ.get("OPTRUNNER_BWRAP_STATE") or ("/var/lib/optrunner/bwrap" if os.geteuid() == 0 else
                                                            Path.home() / ".cache" / "optrunner" / "bwrap"))


def pids_in(pidns: int) -> Iterator[int]:
    """The host pids of the processes in pid namespace `pidns` (not those that have exited, see `exited`)."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.stat(f"/proc/{entry.name}/ns/pid").st_ino == pidns and not exited(int(entry.name)):
                    yield int(entry.name)
            except OSError:
                continue  # gone meanwhile


def exited(pid: int) -> bool:
    """Whether `pid` has exited: gone, or a zombie its parent has not reaped. (A sandbox's init whose parent,
    bwrap, exited is reparented to the host's pid 1, which on some machines, containers among them, never
    reaps: its /proc entry, namespaces included, stays.)"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[:1] in ([b"Z"], [b"X"], [])
    except OSError:
        return True


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def host_env() -> dict[str, str]:
    """What the host programs we start get: a path, nothing of ours (no secret reaches a sandbox)."""
    return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LANG": "C.UTF-8"}
