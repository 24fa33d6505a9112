"""Root file systems for bubblewrap sandboxes: a task image exported once to a directory.

On a machine with Docker, the Docker provider builds each task's image as it always does, and the image
is exported (`docker export` of a container never started) to ROOTFS/<image id>/rootfs, with the image's
environment, working directory and labels beside it in meta.json. The directory is keyed by the image's
content id, so a rebuilt image gets a new one and both providers run the same files. Names (the tags the
providers hand around) are looked up in ROOTFS/names/, so starting a sandbox needs no Docker at all.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.sandbox.interface import ImageBuildError, SandboxError

ROOTFS = Path(os.environ.get("OPTRUNNER_ROOTFS_CACHE", Path.home() / ".cache" / "optrunner" / "rootfs"))
_exporting = threading.Lock()
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Rootfs:
    """A directory to start sandboxes from (read-only underneath), and what the image said about it."""
    name: str  # the image name it came from
    layers: tuple[Path, ...]  # lower directories, the top one first
    env: dict[str, str] = field(default_factory=dict)  # the image's ENV
    workdir: str = "/"
    labels: dict[str, str] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        return {"name": self.name, "env": self.env, "workdir": self.workdir, "labels": self.labels}


def name_file(name: str) -> Path:
    return ROOTFS / "names" / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".json")


def lookup(name: str) -> Rootfs:
    """The exported root file system of image `name`; SandboxError (one line) when there is none."""
    try:
        ident = json.loads(name_file(name).read_text())["id"]
        meta = json.loads((ROOTFS / ident / "meta.json").read_text())
    except (OSError, ValueError, KeyError):
        raise SandboxError(f"no root file system for {name!r} here; the bwrap provider exports it when it "
                           "prepares the task's images (run with sandbox.provider=bwrap on a machine with Docker "
                           "once, or use sandbox.rootfs=host)") from None
    return Rootfs(name, (ROOTFS / ident / "rootfs",), meta.get("env") or {}, meta.get("workdir") or "/",
                  meta.get("labels") or {})


def current(name: str, image_id: str | None) -> bool:
    """Whether the directory named `name` is the export of the image with this id (a tag rebuilt is not)."""
    try:
        return image_id is not None and json.loads(name_file(name).read_text())["id"] == image_id.split(":")[-1]
    except (OSError, ValueError, KeyError):
        return False


def _env(pairs: list[str] | None) -> dict[str, str]:
    env = dict(pair.split("=", 1) for pair in (pairs or []) if "=" in pair)
    env.setdefault("PATH", DEFAULT_PATH)
    return env


def export(client: Any, name: str) -> Rootfs:
    """Export image `name` from the Docker engine `client` (once per image id) and name it."""
    with _exporting:  # one at a time: two threads asking for one image export it once
        return _export(client, name)


def _export(client: Any, name: str) -> Rootfs:
    image = client.images.get(name)
    ident = image.id.split(":")[-1]
    target = ROOTFS / ident
    if not (target / "meta.json").is_file():
        _unpack(client, name, target)
        config = image.attrs.get("Config") or {}
        meta = {"name": name, "env": _env(config.get("Env")), "workdir": config.get("WorkingDir") or "/",
                "labels": config.get("Labels") or {}}
        (target / "meta.json").write_text(json.dumps(meta, indent=1))  # last: a half-made one is not found
    names = name_file(name)
    names.parent.mkdir(parents=True, exist_ok=True)
    partial = names.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"name": name, "id": ident}))
    partial.replace(names)  # whole or not at all, for a sandbox starting meanwhile
    return lookup(name)


def _unpack(client: Any, name: str, target: Path) -> None:
    ROOTFS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=ROOTFS))
    container = client.containers.create(name, ["true"], network_disabled=True)
    try:
        (work / "rootfs").mkdir()
        tar = subprocess.Popen(["tar", "-x", "--numeric-owner", "-C", str(work / "rootfs")],
                               stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        assert tar.stdin is not None
        try:
            for chunk in container.export():
                tar.stdin.write(chunk)
        finally:
            tar.stdin.close()
        errors = tar.stderr.read().decode(errors="replace") if tar.stderr else ""
        if tar.wait() != 0:
            raise ImageBuildError(f"exporting {name} to a directory failed: {errors.strip()[-300:]}")
        if target.exists():  # a half-made one from an earlier try
            shutil.rmtree(target, ignore_errors=True)
        work.rename(target)
    finally:
        container.remove(force=True)
        shutil.rmtree(work, ignore_errors=True)
