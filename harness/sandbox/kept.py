"""Kept sandboxes (a rollout's checkpoints, runner/checkpoints.py): the labels each provider stores with one, and
which of them nothing needs any more (`harness cleanup`), the same rule for every provider.

A kept sandbox names the host whose run made it and the checkpoint file there that names it back. It is forgotten
when that file is gone, unreadable, or names neither it (`image`) nor keeps it for a sandbox still running on it
(`older`): a run directory removed, a rollout recorded while the engine was away, a runner killed between a new
checkpoint and the removal of the one before. Another host's is never judged here: its file is not ours to read.
"""
from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from pathlib import Path

HOST_LABEL = "optrunner.checkpoint.host"  # the host whose run made it
FILE_LABEL = "optrunner.checkpoint.file"  # the checkpoint file that names it on that host


def marks(labels: dict[str, str] | None = None) -> dict[str, str]:
    """The labels a provider stores with a kept sandbox: this host's name, and the caller's (FILE_LABEL)."""
    return {HOST_LABEL: socket.gethostname(), **(labels or {})}


def forgotten(labels: dict[str, str], names: Iterable[str]) -> bool:
    """Whether a kept sandbox known by `names` (an image's tags) is one no checkpoint file needs any more."""
    if labels.get(HOST_LABEL) != socket.gethostname():
        return False
    try:
        found = json.loads(Path(labels.get(FILE_LABEL, "")).read_text())
        needed = {found.get("image"), *(found.get("older") or [])}
    except (OSError, ValueError, AttributeError, TypeError):
        return True
    return not needed & set(names)
