"""Memory, CPU and pids limits for bubblewrap sandboxes through cgroup v2, where this process may use it.

A sandbox gets a cgroup of its own under ours (cgroup v2 mounted at /sys/fs/cgroup, the controllers
delegated to us: true for root on a cgroup-v2 host and in most delegated systemd scopes). Every process
started in the sandbox is put into it before it runs. Where that is not possible (cgroup v1, no
delegation), sandboxes run without those limits and the run says so once.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from harness.sandbox.interface import SandboxLimits, memory_bytes

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("cpu", "memory", "pids")
_said = threading.Event()


def _own() -> Path | None:
    """This process's cgroup v2 directory; None where cgroup v2 is not what is mounted."""
    try:
        line = next(li for li in Path("/proc/self/cgroup").read_text().splitlines() if li.startswith("0::"))
    except (OSError, StopIteration):
        return None
    path = ROOT / line[3:].lstrip("/")
    return path if (ROOT / "cgroup.controllers").is_file() and path.is_dir() else None


def _enable(parent: Path) -> bool:
    try:
        available = set((parent / "cgroup.controllers").read_text().split())
        if not set(CONTROLLERS) <= available:
            return False
        (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
        return True
    except OSError:
        return False


def create(name: str, limits: SandboxLimits) -> Path | None:
    """A cgroup with `limits` for one sandbox; None (said once) where limits cannot be enforced."""
    own = _own()
    group = None
    if own is not None:
        # our own cgroup may hold processes (then it cannot delegate): sandboxes go in a sibling's subtree
        parent = own.parent / "optrunner-sandboxes" if own != ROOT else ROOT / "optrunner-sandboxes"
        try:
            parent.mkdir(exist_ok=True)
            if _enable(parent.parent) and _enable(parent):
                group = parent / name
                group.mkdir()
                memory = memory_bytes(limits.memory) or 0
                (group / "memory.max").write_text(str(memory))
                (group / "memory.swap.max").write_text("0")
                (group / "pids.max").write_text(str(limits.pids))
                (group / "cpu.max").write_text(f"{int(limits.cpus * 100_000)} 100000")
        except OSError:
            group = None
    if group is None and not _said.is_set():
        _said.set()
        print("bwrap: memory, CPU and pids limits are not enforced on this machine (no delegated cgroup v2); "
              "sandboxes run without them", file=sys.stderr)
    return group


def remove(group: Path | None) -> None:
    if group is None:
        return
    try:
        (group / "cgroup.kill").write_text("1")
    except OSError:
        pass
    try:
        os.rmdir(group)
    except OSError:
        pass  # still emptying: the next cleanup takes it


def oom_kills(group: Path | None) -> int:
    """How many of the cgroup's processes the kernel killed for memory (0 without a cgroup)."""
    try:
        events = (group / "memory.events").read_text().split() if group is not None else []
    except OSError:
        return 0
    return next((int(n) for key, n in zip(events, events[1:]) if key == "oom_kill"), 0)


def available() -> bool:
    """Whether sandboxes here get memory, CPU and pids limits."""
    own = _own()
    return own is not None and os.access(own.parent if own != ROOT else ROOT, os.W_OK)


def cpu_range(part: str) -> range:
    """One part of a cpuset ("3" or "2-5") as the CPUs it names."""
    low, _, high = part.partition("-")
    return range(int(low), int(high or low) + 1)
