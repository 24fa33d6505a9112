"""Atomic file writes: a reader never sees half a file, and a file is only ever replaced whole.

The one writer every output of the project goes through (the run store, the grader's reports). Temp
names carry the process and thread, so concurrent writers never share one. Durable, too: the temp file's
bytes reach the disk before the rename, and the rename itself (the directory) after it, so a power cut or
a crashed machine leaves the old file or the new one, never an empty or half-written file under the name.
"""
from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path
from typing import Any


def write_text(path: Path, text: str) -> None:
    _replace(path, "w", text)  # the encoding Path.write_text used: the readers' default


def write_bytes(path: Path, data: bytes) -> None:
    _replace(path, "wb", data)


def _replace(path: Path, mode: str, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, mode) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())  # the data first: a rename may reach the disk before unflushed data
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written temp file behind
        raise
    fsync_dir(path.parent)


# A directory that cannot be opened or synced on this file system (some network and FUSE mounts): the
# rename is done and visible, only its durability is the file system's own.
_NO_DIR_SYNC = (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES, errno.EPERM)


def fsync_dir(path: Path) -> None:
    """Make the entries of directory `path` (a rename into it) durable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as err:
        if err.errno in _NO_DIR_SYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in _NO_DIR_SYNC:
            raise
    finally:
        os.close(fd)


def write_json(path: Path, data: Any, indent: int = 1) -> None:
    write_text(path, json.dumps(data, indent=indent, default=str))


# Errors that say the output location cannot take more writes: reported in one line, not as a crash.
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def write_problem(err: OSError, where: str | None = None, example: str = "output_root=DIR") -> str | None:
    """One line for an error that means nothing more can be written there (at `where`, default the file the
    error names), or None for any other error. `example`: how this command picks its output location."""
    if err.errno not in WRITE_ERRNOS:
        return None
    where = where or err.filename or "the output directory"
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"cannot write to {where}: {err.strerror} (free some space)"
    return f"cannot write to {where}: {err.strerror} (make it writable or choose a writable location, e.g. {example})"


def check_writable(path: Path, example: str = "output_root=DIR") -> str | None:
    """Whether a directory can be created at `path` (tried in its nearest existing ancestor, then removed)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        test = probe / f".optrunner-write-test-{os.getpid()}"
        test.mkdir()
        test.rmdir()
    except OSError as err:
        if (problem := write_problem(err, str(probe), example)) is not None:
            return problem
        # /proc, /sys: a folder that exists but takes no new entries says "no such file" (ENOENT) or worse
        why = "it takes no new folders (a system folder)" if err.errno == errno.ENOENT else err.strerror
        return f"cannot create folders in {probe}: {why}; choose another location, e.g. {example}"
    return None


def read_json(path: Path) -> Any:
    """The parsed file, or None when it is missing or not (yet) valid JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def plain_name(name: object) -> bool:
    """A name that stays in the folder it is joined to (names read from files another run or tool wrote):
    no separator, not `.` or `..`, no NUL."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\x00" not in name
