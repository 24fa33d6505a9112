"""Tar archives of regular files: how files travel into a sandbox in one transfer (every provider)."""
from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Mapping


def tar_of(members: Mapping[str, str | bytes]) -> bytes:
    """A tar of regular files (name -> contents, mode 644)."""
    buf, now = io.BytesIO(), int(time.time())
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, contents in members.items():
            data = contents.encode() if isinstance(contents, str) else contents
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, now
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
