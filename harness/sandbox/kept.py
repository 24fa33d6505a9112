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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

HOST_LABEL = "optrunner.checkpoint.host"  # the host whose run made it
FILE_LABEL = "optrunner.checkpoint.file"  # the checkpoint file that names it on that host


def marks(labels: dict[str, str] | None = None) -> dict[str, str]:
    """The labels a provider stores with a kept sandbox: this host's name, and the caller's (FILE_LABEL)."""
    return {HOST_LABEL: socket.gethostname(), **(labels or {})}


# The checkpoint file is the runner's (its state, its archives, ...); these two keys are what this layer reads
# of it, so this layer writes them too (`naming`).
def naming(image: str, older: Iterable[str] = ()) -> dict[str, Any]:
    """The part of a checkpoint file that names kept sandboxes: the current one (`image`), and the older ones a
    sandbox still runs on (`older`), kept until its rollout is recorded."""
    return {"image": image, "older": list(older)}


def current(data: Mapping[str, Any]) -> str | None:
    """The kept sandbox a checkpoint file's data names as current (None: it names none)."""
    image = data.get("image")
    return image if isinstance(image, str) else None


def older(data: Mapping[str, Any]) -> list[str]:
    """The older kept sandboxes a checkpoint file's data keeps."""
    return [name for name in data.get("older") or [] if isinstance(name, str)]


def forgotten(labels: dict[str, str], names: Iterable[str]) -> bool:
    """Whether a kept sandbox known by `names` (an image's tags) is one no checkpoint file needs any more."""
    if labels.get(HOST_LABEL) != socket.gethostname():
        return False
    try:
        found = json.loads(Path(labels.get(FILE_LABEL, "")).read_text())
        needed = {current(found), *older(found)}
    except (OSError, ValueError, AttributeError, TypeError):
        return True
    return not needed & set(names)
