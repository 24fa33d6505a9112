"""A Docker sandbox's checkpoint as an archive another engine can rebuild it from (`Portable`): what a Ray node
sends its run's driver, so that any node can continue the rollout, also after this one is gone.

`docker save` of a checkpoint image would carry the task image's layers too (hundreds of MB, seconds to write),
so only what the container changed travels: the engine lists the paths its writable layer added, changed and
deleted (`container.diff()`), the added and changed ones are read out of the container in one tar (a path whose
parent was added travels with its parent), and the deleted ones are named. The archive is a tar of two members:

    deleted.json   the paths deleted since the image the container started from
    files.tar      the added and changed paths, named from / (what `put_archive("/")` takes)

Rebuilding (`build`) starts a sandbox from the task image, applies each archive in turn (deletions, then files)
and commits it under the checkpoint's name. A sandbox started from a checkpoint lists only what changed since
that checkpoint: its archive holds on to the ones before it (the runner keeps the chain).

Not kept, as with `commit`: processes, and a path replaced by one of another kind that has added children (a
file turned into a directory) keeps its old kind.
"""
from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from docker.models.containers import Container

from harness.sandbox.bounded import Chunks
from harness.sandbox.interface import SandboxError

ADDED, CHANGED, DELETED = 1, 0, 2  # the kinds of `container.diff()`
EXPORT_MAX_BYTES = 512 * 1024 * 1024  # an archive travels to the driver whole (a Ray object): bounded
RM_CHUNK = 500  # paths per `rm` command


def changed_paths(entries: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """From `container.diff()`: the paths to read out (top-most added ones and changed leaves) and the deleted
    ones. A changed directory that only holds other entries is left out: it exists in the image already."""
    kinds = {str(e["Path"]): int(e["Kind"]) for e in entries}
    parents = {str(parent) for path in kinds for parent in PurePosixPath(path).parents}
    added = {path for path, kind in kinds.items() if kind == ADDED}
    read: list[str] = []
    for path, kind in sorted(kinds.items()):
        if kind == DELETED or any(str(parent) in added for parent in PurePosixPath(path).parents):
            continue  # deleted, or it travels with a directory added above it
        if kind == ADDED or path not in parents:
            read.append(path)
    return read, sorted(path for path, kind in kinds.items() if kind == DELETED)


def export_changes(container: Container, max_bytes: int = EXPORT_MAX_BYTES) -> bytes:
    """What the container changed since its image, as one archive (module docstring). It must be idle. The
    files are streamed from the engine and counted by their tar headers: past `max_bytes` in all (a sparse
    file of gigabytes the agent left) SandboxError, and no checkpoint, rather than all of it in memory."""
    read, deleted = changed_paths(container.diff() or [])
    files = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=files, mode="w") as out:
        for path in read:
            stream, _ = container.get_archive(path)
            parent = str(PurePosixPath(path).parent).lstrip("/")
            try:
                with tarfile.open(fileobj=Chunks(iter(stream)), mode="r|") as part:  # type: ignore[call-overload]
                    for member in part:  # named from the path's own name: re-rooted at /
                        total += member.size if member.isreg() else 0
                        if total > max_bytes:
                            raise SandboxError(f"the sandbox's changes are over {max_bytes} bytes ({path}): no "
                                               "checkpoint is kept of it")
                        member.name = f"{parent}/{member.name}".lstrip("/")
                        out.addfile(member, part.extractfile(member) if member.isreg() else None)
            finally:
                stream.close()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as out:
        for name, data in (("deleted.json", json.dumps(deleted).encode()), ("files.tar", files.getvalue())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return archive.getvalue()


def _members(archive: bytes) -> tuple[list[str], bytes]:
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            deleted = tar.extractfile("deleted.json")
            files = tar.extractfile("files.tar")
            if deleted is None or files is None:
                raise KeyError("deleted.json or files.tar")
            return list(json.loads(deleted.read())), files.read()
    except (tarfile.TarError, KeyError, ValueError) as err:
        raise SandboxError(f"docker: not a checkpoint archive ({err})") from None


def apply(container: Container, archive: bytes) -> None:
    """One archive applied to a running container: its deletions, then its files."""
    deleted, files = _members(archive)
    for start in range(0, len(deleted), RM_CHUNK):
        done = container.exec_run(["rm", "-rf", "--", *deleted[start:start + RM_CHUNK]], user="root")
        if done.exit_code != 0:
            raise SandboxError(f"docker: could not remove what a checkpoint deleted: {done.output[-300:]!r}")
    if not container.put_archive("/", files):
        raise SandboxError("docker: the engine refused a checkpoint's files")
