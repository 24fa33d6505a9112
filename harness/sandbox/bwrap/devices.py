"""A sandbox's /dev: bwrap's, and the device nodes of its own GPUs.

bwrap's `--dev` binds the host's own /dev/null, /dev/zero, ... into the sandbox. They belong to host root,
which no sandbox maps (ids.py: run by root, a sandbox's root is host uid BASE), so a `chmod 600 /dev/null`
inside is refused and the host's nodes stay as they are. A sandbox given GPUs (harness.gpus) gets their
nodes and the driver's control nodes, bound the same way, and no other GPU's.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from harness.gpus import Gpu, device_nodes

SHM = ("--perms", "1777", "--tmpfs", "/dev/shm")  # /dev/shm as Docker's: a tmpfs anyone may write


def gpus(given: Sequence[Gpu]) -> list[str]:
    """bwrap's arguments binding the device nodes of the sandbox's own GPUs and the driver's control nodes
    (those present), and no other GPU's."""
    return [arg for node in device_nodes(given) if os.path.exists(node) for arg in ("--dev-bind", node, node)]
