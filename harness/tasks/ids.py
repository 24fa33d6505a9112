"""The one rule every task id obeys, whatever produced it (a task folder, a GSO row's `instance_id`, a Harbor
directory's name, a record read back from a run directory someone copied here).

An id becomes a path component (`rollouts/<id>/`, `trajectories/<id>/`, `pages/<id>/`), part of an image
name and a container label, and text in reports. So it is one plain name: no separator, no leading dot (no
`..`, no hidden file), no space or control character, nothing a shell or a URL would read differently.
"""
from __future__ import annotations

import re

from harness.tasks.task import TaskError

ID_RULE = "^[A-Za-z0-9][A-Za-z0-9._-]*$"
# fullmatch, never `$`: Python's `$` also matches before a final newline, which would let "x\n" through.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_ID_CHARS = 200  # a path component must stay under the file systems' 255 bytes with what is added to it


def id_problem(kind: str, value: object) -> str | None:
    """The one line saying why `value` is not a usable id (`kind` says where it came from), or None."""
    if not isinstance(value, str):
        return f"{kind}: a task id must be a string, got {type(value).__name__}"
    if len(value) > MAX_ID_CHARS:
        return f"{kind}: task id {value[:40]!r}... is {len(value)} characters long (at most {MAX_ID_CHARS})"
    if not _ID.fullmatch(value):
        # repr: a newline, a NUL or a space in the id is shown, not acted on, and the message stays one line
        return f"{kind}: task id {value!r} is not allowed: an id must match {ID_RULE} (it names files and images)"
    return None


def check_id(kind: str, value: object) -> str:
    """`value` when it is a usable task id; TaskError (one line naming it and where it came from) otherwise."""
    problem = id_problem(kind, value)
    if problem is not None:
        raise TaskError(problem)
    assert isinstance(value, str)
    return value
