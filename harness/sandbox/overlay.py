"""An overlay file system read from the host: what changed in its writable layer, and merged reads.

Both providers' sandboxes are overlays (Docker's overlay2 containers, bubblewrap's mounts): the writes land
in an upper directory over read-only lower ones. So what changed is a walk of the upper layer (a deleted
file is a whiteout: a character device 0/0), and a file's current content is the topmost layer's copy.
Nothing here follows a symbolic link: a link the sandbox made stands for the file it replaced.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

_OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")  # a directory hiding the layers below it


def _whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(path: str) -> bool:
    for name in _OPAQUE:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def changed_paths(upper: Path) -> list[str]:
    """Every path the sandbox added, changed or deleted (its upper layer's entries), the deepest only."""
    paths: list[str] = []
    for root, dirs, files in os.walk(upper):
        rel = "/" + os.path.relpath(root, upper).removeprefix(".").lstrip("/")
        for name in files + dirs:
            paths.append(os.path.join(rel, name))
    paths.sort()
    return [p for i, p in enumerate(paths) if not (i + 1 < len(paths) and paths[i + 1].startswith(p + "/"))]


def _below(candidates: Sequence[str]) -> list[str]:
    """The directories that make up one merged directory: each layer's, top first, until a layer puts
    something else there (a file, a link, a whiteout) or one is opaque (hides those below)."""
    out = []
    for path in candidates:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            break
        out.append(path)
        if _opaque(path):
            break
    return out


def _merge(dirs: list[str], rel: str, out: dict[str, bytes]) -> None:
    names = sorted({name for d in dirs for name in os.listdir(d)})
    for name in names:
        here = [os.path.join(d, name) for d in dirs]
        for i, path in enumerate(here):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            child = f"{rel}/{name}" if rel else name
            if stat.S_ISDIR(st.st_mode):
                _merge(_below(here[i:]), child, out)
            elif stat.S_ISREG(st.st_mode):
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as fh:
                    out[child] = fh.read()
            break  # the topmost layer that has the name decides (a whiteout or a link: no file here)


def read_tree(layers: Sequence[Path], path: str) -> dict[str, bytes]:
    """Every regular file under directory `path` as the sandbox sees it (relative name -> contents),
    merged from `layers` (top first); {} when it is not a directory there."""
    dirs = [str(layer) for layer in layers]
    for part in [p for p in path.split("/") if p]:
        dirs = _below([os.path.join(d, part) for d in dirs])
    out: dict[str, bytes] = {}
    if dirs:
        _merge(dirs, "", out)
    return out
