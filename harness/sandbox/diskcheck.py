"""Enough free disk before a run starts: a full disk halfway through a run fails rollouts as infrastructure
errors one after another (and a grader's timed runs with it), so it is refused at the start, in one line.

What needs room: the place a provider keeps sandboxes' writes (Docker's data root, where every container's
writable layer lives; the bwrap provider's state folder) at least `sandbox.disk` (what one sandbox may
write), and the run's output directory at least OUTPUT_RESERVE (trajectories, patches, reports). Places on
one file system add up. Standard library only.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.sandbox.interface import SandboxUnavailable, memory_bytes

OFF = "0"  # sandbox.disk=0: no free-disk check, no size limit
OUTPUT_RESERVE = 512 * 2**20  # bytes a run's output directory needs free: records, trajectories, reports


class NotEnoughDisk(SandboxUnavailable):
    """A place a run writes to has less free space than the run needs; the message is one line."""


@dataclass(frozen=True)
class Need:
    """`size` bytes must be free where `path` is (the nearest existing folder, for one not made yet)."""
    what: str  # what the place is, in words ("Docker's data root")
    path: Path
    size: int
    setting: str = ""  # the setting that asks for this much, to name in the refusal ("sandbox.disk=10g")


@dataclass(frozen=True)
class Space:
    device: int  # st_dev: places on one file system share its free space
    free: int  # bytes an unprivileged writer may still use (statvfs f_bavail)
    where: Path  # the folder measured


def space(path: Path) -> Space:
    """The free space of the file system `path` is (or will be) on."""
    probe = Path(os.path.abspath(path))
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    stats = os.statvfs(probe)
    return Space(os.stat(probe).st_dev, stats.f_bavail * stats.f_frsize, probe)


def size_text(size: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # (not reached)


def shortage(needs: Sequence[Need]) -> str | None:
    """One line naming the first file system with less free space than the needs on it add up to, or None."""
    by_device: dict[int, tuple[Space, list[Need]]] = {}
    for need in needs:
        found = space(need.path)
        by_device.setdefault(found.device, (found, []))[1].append(need)
    for found, on_it in by_device.values():
        wanted = sum(n.size for n in on_it)
        if found.free < wanted:
            parts = ", ".join(f"{n.what} {n.path} {size_text(n.size)}" + (f" ({n.setting})" if n.setting else "")
                              for n in on_it)
            lower = ", or lower sandbox.disk" if any(n.setting for n in on_it) else ""
            return (f"not enough free disk: {found.where} has {size_text(found.free)} free, the run needs "
                    f"{size_text(wanted)} there ({parts}); free some space{lower}")
    return None


def needs_for(disk: str, sandboxes: Sequence[tuple[str, Path]], output_dir: Path | None) -> list[Need]:
    """The needs of a run: `disk` (sandbox.disk) where each of `sandboxes` (what, path) keeps sandboxes'
    writes, OUTPUT_RESERVE in `output_dir`."""
    size = memory_bytes(disk)
    if size is None:
        raise NotEnoughDisk(f"sandbox.disk must be a size such as 10g or 500m, got {disk!r}")
    out = [Need(what, path, size, f"sandbox.disk={disk}") for what, path in sandboxes]
    if output_dir is not None:
        out.append(Need("the output directory", output_dir, OUTPUT_RESERVE))
    return out


def check_free(disk: str, sandboxes: Sequence[tuple[str, Path]], output_dir: Path | None = None) -> None:
    """Raise NotEnoughDisk (one line) when the places a run writes to lack the room it needs. `disk` "0"
    (sandbox.disk=0) turns the check off, and the containers' size limit with it."""
    if disk.strip() == OFF:
        return
    problem = shortage(needs_for(disk, sandboxes, output_dir))
    if problem is not None:
        raise NotEnoughDisk(problem)
