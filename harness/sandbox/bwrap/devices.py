"""A sandbox's /dev: bwrap's, and the device nodes of its own GPUs.

bwrap's `--dev` binds the host's own /dev/null, /dev/zero, ... into the sandbox. They belong to host root,
which no sandbox maps (ids.py: run by root, a sandbox's root is host uid BASE), so a `chmod 600 /dev/null`
inside is refused and the host's nodes stay as they are. A sandbox given GPUs (harness.gpus) gets their
nodes and the driver's control nodes, bound the same way, and no other GPU's. Where root's sandboxes map
the host's own ids (ids.py: no idmapped mounts here), root inside could change a bound node, so they get
copies made in their own folder instead (the same device numbers, owner and mode, so CUDA opens them as it
would the host's), as Docker makes a container's.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from harness.gpus import Gpu, device_nodes
from harness.sandbox.bwrap import ids

NODES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9), "tty": (5, 0)}
SHM = ("--perms", "1777", "--tmpfs", "/dev/shm")  # /dev/shm as Docker's: a tmpfs anyone may write


def _copies() -> bool:
    """Whether root inside is host root (ids.py's fallback), so nodes must be the sandbox's own copies."""
    return os.geteuid() == 0 and not ids.shifted()


def own(directory: Path) -> list[str]:
    """bwrap's arguments binding device nodes made under `directory` over the host's, where needed."""
    if not _copies():
        return []
    folder = directory / "dev"
    folder.mkdir(exist_ok=True)
    args = []
    for name, (major, minor) in NODES.items():
        node = folder / name
        if not node.exists():  # (a restart keeps them)
            os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(major, minor))
        os.chown(node, 0, 0)  # (past the umask, and whatever the sandbox did to it before a restart)
        os.chmod(node, 0o666)
        args += ["--dev-bind", str(node), f"/dev/{name}"]
    return args


def gpus(given: Sequence[Gpu], directory: Path) -> list[str]:
    """bwrap's arguments for the device nodes of the sandbox's own GPUs and the driver's control nodes
    (those present), and no other GPU's: the host's, or copies made under `directory` where needed."""
    nodes = [node for node in device_nodes(given) if os.path.exists(node)]
    if not _copies():
        return [arg for node in nodes for arg in ("--dev-bind", node, node)]
    folder = directory / "dev" / "gpu"
    folder.mkdir(parents=True, exist_ok=True)
    args = []
    for node in nodes:
        copy = folder / node.strip("/").replace("/", "_")
        _copy_node(Path(node), copy)
        args += ["--dev-bind", str(copy), node]
    return args


def _copy_node(node: Path, copy: Path) -> None:
    """A device node (or a folder of them, as /dev/nvidia-caps) made again at `copy`, as the host has it."""
    info = node.stat()
    if stat.S_ISDIR(info.st_mode):
        copy.mkdir(exist_ok=True)
        for member in node.iterdir():
            if member.is_char_device() or member.is_block_device():
                _copy_node(member, copy / member.name)
    elif not copy.exists():
        os.mknod(copy, stat.S_IFMT(info.st_mode) | 0o600, info.st_rdev)
    os.chown(copy, info.st_uid, info.st_gid)  # (again on a restart: whatever the sandbox did to it before)
    os.chmod(copy, stat.S_IMODE(info.st_mode))
