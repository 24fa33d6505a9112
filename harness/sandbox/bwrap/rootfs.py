"""Root file systems for bubblewrap sandboxes: a task image exported once to a directory.

On a machine with Docker, the Docker provider builds each task's image as it always does, and the image
is exported (its `export_files`: `docker export` of a container never started) to
ROOTFS/<image id>/rootfs, with the image's environment, working directory and labels beside it in
meta.json. The directory is keyed by the image's content id, so a rebuilt image gets a new one and both
providers run the same files. Names (the tags the
providers hand around) are looked up in ROOTFS/names/, so starting a sandbox needs no Docker at all.
With `sandbox.rootfs=host` a root file system is instead the host's system directories under a task's
layer (`host_rootfs`; the layer is built by hostfs.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from harness.sandbox.bwrap import ids
from harness.sandbox.interface import TESTBED, ImageBuildError, ImageConfig, SandboxError
from harness.sandbox.taskimage.contents import DEFAULT_PATH

if TYPE_CHECKING:
    from harness.sandbox.providers import SandboxProvider

ROOTFS = Path(os.environ.get("OPTRUNNER_ROOTFS_CACHE", Path.home() / ".cache" / "optrunner" / "rootfs"))
SYSTEM = ("usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin")  # the host's, never a home
OWN = ("testbed", "root", "tmp", "opt")  # the sandbox's own (the task layer's, then its writes)
ETC = "etc"  # made from an allow-list of the host's (hostetc.py), never the host's own
# More of the host, read-only, where a machine keeps its interpreter outside /usr (a GPU machine's
# /opt/torch/.venv): absolute paths, separated by ":".
HOST_DIRS = tuple(p for p in os.environ.get("OPTRUNNER_BWRAP_HOST_DIRS", "").split(":") if p)
ROOT = "_root"  # the layer's directory for / itself (what is written outside every other mount)
_exporting = threading.Lock()
CHECKPOINT = "checkpoint"  # meta.json's kind of a sandbox's kept files (checkpoints.py)


@dataclass(frozen=True)
class Mount:
    """One writable overlay of a sandbox: at `dest`, the `lowers` read-only underneath (the top one first)."""
    dest: str
    lowers: tuple[Path, ...]

    @property
    def key(self) -> str:
        """Its writable layer's name under the sandbox's upper directory."""
        return self.dest.strip("/").replace("/", "_") or "_root"


@dataclass(frozen=True)
class Rootfs:
    """What a sandbox's file system is made of, and what the image said about it. An exported image is one
    mount at /; the host's root is several (hostfs.py) over bwrap's own empty root."""
    name: str  # the image name it came from
    mounts: tuple[Mount, ...]
    env: dict[str, str] = field(default_factory=dict)  # the image's ENV
    workdir: str = "/"
    labels: dict[str, str] = field(default_factory=dict)
    symlinks: tuple[tuple[str, str], ...] = ()  # (target, path): the host's /bin -> usr/bin and the like
    binds: tuple[tuple[str, str], ...] = ()  # (host path, path): read-only binds of the host's (HOST_DIRS)

    def mount_of(self, path: str) -> tuple[Mount, str] | None:
        """The mount that holds `path`, and the path relative to it; None when none does."""
        for mount in sorted(self.mounts, key=lambda m: -len(m.dest)):
            if mount.dest == "/" or path == mount.dest or path.startswith(mount.dest + "/"):
                return mount, path[len(mount.dest.rstrip("/")):] or "/"
        return None


def name_file(name: str) -> Path:
    return ROOTFS / "names" / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".json")


def ident_of(name: str) -> str:
    """The directory (under ROOTFS) that image `name` is; OSError, ValueError or KeyError when none is named."""
    return str(json.loads(name_file(name).read_text())["id"])


def lookup(name: str) -> Rootfs:
    """The exported root file system of image `name`; SandboxError (one line) when there is none."""
    try:
        ident = ident_of(name)
        meta = json.loads((ROOTFS / ident / "meta.json").read_text())
    except (OSError, ValueError, KeyError):
        raise SandboxError(f"no root file system for {name!r} here; the bwrap provider exports it when it "
                           "prepares the task's images (run with sandbox.provider=bwrap on a machine with Docker "
                           "once, or use sandbox.rootfs=host)") from None
    if meta.get("kind") == "host":
        return host_rootfs(name, layer_chain(ident), meta)
    if meta.get("kind") == CHECKPOINT:
        return checkpoint_rootfs(name, ident, meta)
    return Rootfs(name, (Mount("/", (ROOTFS / ident / "rootfs",)),), meta.get("env") or {},
                  meta.get("workdir") or "/", meta.get("labels") or {})


def checkpoint_rootfs(name: str, ident: str, meta: dict[str, Any]) -> Rootfs:
    """A sandbox's kept files (checkpoints.py): the base image's file system with the kept layers on top."""
    base = lookup(str(meta["base"]))
    layers = [ROOTFS / ident / "layers" / str(i) for i in range(int(meta["layers"]))]
    mounts = tuple(Mount(m.dest, tuple(layer / m.key for layer in layers if (layer / m.key).is_dir()) + m.lowers)
                   for m in base.mounts)
    return Rootfs(name, mounts, base.env, base.workdir, {**base.labels, **(meta.get("labels") or {})},
                  base.symlinks, base.binds)


def layer_chain(ident: str) -> tuple[Path, ...]:
    """The layers over the host that ROOTFS/<ident> stands for, the top one first: itself, then its parents
    (a layer derived from another names it in its meta.json)."""
    chain: list[Path] = []
    while ident:
        if len(chain) > 16 or not (ROOTFS / ident / "meta.json").is_file():
            raise SandboxError(f"the layer {ident} over the host is incomplete; remove {ROOTFS} to rebuild it")
        chain.append(ROOTFS / ident)
        ident = json.loads((ROOTFS / ident / "meta.json").read_text()).get("parent") or ""
    return tuple(chain)


def empty_layer(path: Path) -> Path:
    """`path` made an empty layer over the host: a folder for each of its mounts, /tmp world-writable as an
    image's (the grader's fenced test processes write there)."""
    for top in (*SYSTEM, ETC, *OWN, ROOT):
        (path / top).mkdir(parents=True)
        ids.own(path / top)  # (as the sandbox's writes that replace them: ids.py)
    os.chmod(path / "tmp", 0o1777)
    return path


def host_rootfs(name: str, layers: tuple[Path, ...], meta: dict[str, Any]) -> Rootfs:
    """The host's system under a task's layers (each layer's <dir> above each host directory; the top
    first): its /usr and libraries, an /etc made from an allow-list (hostetc.py), and HOST_DIRS."""
    from harness.sandbox.bwrap import hostetc

    mounts, links, system = [Mount("/", tuple(layer / ROOT for layer in layers))], [], []
    for top in SYSTEM:
        host = Path("/") / top
        if host.is_symlink():
            links.append((os.readlink(host), f"/{top}"))
        elif host.is_dir():
            mounts.append(Mount(f"/{top}", (*(layer / top for layer in layers), host)))
            system.append(str(host))
    etc = hostetc.made(ROOTFS)
    mounts.append(Mount("/etc", (*(layer / ETC for layer in layers if (layer / ETC).is_dir()), etc)))
    mounts += [Mount(f"/{top}", tuple(layer / top for layer in layers)) for top in OWN]
    for path in HOST_DIRS:
        if not path.startswith("/") or not Path(path).is_dir():
            raise SandboxError(f"OPTRUNNER_BWRAP_HOST_DIRS: {path} is not a folder of this host (absolute paths, "
                               "separated by ':')")
    # (and the folders of the host's interpreter and CUDA its layers were built with: hostextras.py)
    for path in meta.get("binds") or []:
        if not Path(path).is_dir():
            raise SandboxError(f"{name} was built over this host with its folder {path}, which is gone; its layers "
                               "are built again when the task's images are prepared (optrunner setup)")
    # (the host's mounts under its system folders, such as a GPU host's driver folder under /usr, bound on top:
    # the overlays take those folders without them, ids.Views)
    under = mounts_under(system)
    binds = tuple((path, path) for path in dict.fromkeys([*HOST_DIRS, *(meta.get("binds") or []), *under]))
    return Rootfs(name, tuple(mounts), meta.get("env") or {}, meta.get("workdir") or TESTBED,
                  meta.get("labels") or {}, tuple(links), binds)


def mounts_under(folders: list[str], mountinfo: str = "/proc/self/mountinfo") -> list[str]:
    """The outermost mount points strictly under `folders` (a mount inside another one comes with it), but
    those marked unbindable (no view of them can be made; a recursive one left them out as well)."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return []
    # (mountinfo writes a space, tab, newline or backslash in a path as an octal escape: \040)
    points = sorted({re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
                     for fields in (line.split() for line in lines)
                     if "-" in fields[6:] and "unbindable" not in fields[6:fields.index("-", 6)]})
    found: list[str] = []
    for point in points:  # (sorted: a mount's parent comes before it)
        inside = any(point.startswith(folder.rstrip("/") + "/") for folder in folders)
        if inside and not any(point.startswith(outer + "/") for outer in found):
            found.append(point)
    return found


def current(name: str, image_id: str | None) -> bool:
    """Whether the directory named `name` is the export of the image with this id, whole (a tag rebuilt, or
    a directory removed or half-made, is not)."""
    try:
        ident = ident_of(name)
    except (OSError, ValueError, KeyError):
        return False
    return image_id is not None and ident == image_id.split(":")[-1] and (ROOTFS / ident / "meta.json").is_file()


def export(images: "SandboxProvider", name: str) -> Rootfs:
    """Export image `name` of the provider `images` (its files, by `export_files`) to a directory, once per
    image id, and name it."""
    with _exporting:  # one at a time: two threads asking for one image export it once
        image_id = images.image_id(name)
        if image_id is None:
            raise ImageBuildError(f"exporting {name} to a directory: {images.name} has no such image")
        ident = image_id.split(":")[-1]
        target = ROOTFS / ident
        if not (target / "meta.json").is_file():
            config = _unpack(images, name, target)
            env = {"PATH": DEFAULT_PATH, **config.env}
            meta = {"name": name, "env": env, "workdir": config.workdir or "/", "labels": config.labels}
            (target / "meta.json").write_text(json.dumps(meta, indent=1))  # last: a half-made one is not found
        return record_name(name, ident)


def record_name(name: str, ident: str) -> Rootfs:
    """Name the directory ROOTFS/<ident> `name` (a sandbox starting meanwhile sees the old name or the new)."""
    names = name_file(name)
    names.parent.mkdir(parents=True, exist_ok=True)
    partial = names.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"name": name, "id": ident}))
    partial.replace(names)
    return lookup(name)


def _unpack(images: "SandboxProvider", name: str, target: Path) -> ImageConfig:
    ROOTFS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=ROOTFS))
    try:
        (work / "rootfs").mkdir()
        # (tar's complaints go to a file: a pipe nobody reads while the files stream could fill and stall it)
        with tempfile.TemporaryFile() as errors:
            tar = subprocess.Popen(["tar", "-x", "--numeric-owner", "-C", str(work / "rootfs")],
                                   stdin=subprocess.PIPE, stderr=errors)
            assert tar.stdin is not None
            try:
                config = images.export_files(name, tar.stdin)
            except BrokenPipeError:  # tar gave up: its own message says why
                config = ImageConfig()
            finally:
                try:
                    tar.stdin.close()
                except BrokenPipeError:
                    pass
                code = tar.wait()
            if code != 0:
                errors.seek(0)
                said = errors.read().decode(errors="replace").strip()[-300:]
                raise ImageBuildError(f"exporting {name} to a directory failed: {said}")
        if target.exists():  # a half-made one from an earlier try
            shutil.rmtree(target, ignore_errors=True)
        work.rename(target)
        return config
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_files(name: str, out: IO[bytes]) -> ImageConfig:
    """The files of the exported image `name` as one tar written to `out`, and what its meta.json says
    (the bwrap provider's `export_files`). A layer over the host or a checkpoint has no files of its own
    alone: SandboxError."""
    found = lookup(name)
    if len(found.mounts) != 1 or found.mounts[0].dest != "/" or len(found.mounts[0].lowers) != 1:
        raise SandboxError(f"{name} is not an exported image (a layer over the host or a checkpoint): its files "
                           "are not all its own, and cannot be exported alone")
    with tempfile.TemporaryFile() as errors:
        tar = subprocess.Popen(["tar", "-c", "--numeric-owner", "-C", str(found.mounts[0].lowers[0]), "."],
                               stdout=subprocess.PIPE, stderr=errors)
        assert tar.stdout is not None
        shutil.copyfileobj(tar.stdout, out)
        if tar.wait() != 0:
            errors.seek(0)
            raise SandboxError(f"exporting the files of {name} failed: "
                               f"{errors.read().decode(errors='replace').strip()[-300:]}")
    return ImageConfig(dict(found.env), found.workdir, dict(found.labels))


# GNU tar, not tarfile: it keeps the overlay's own xattrs (an opaque directory of a layer hides what is
# below it) and the files' modes as they are, and defers the links it extracts until the end, so an
# archive cannot write through a link it made.
_TAR = ["--numeric-owner", "--xattrs", "--xattrs-include=user.overlay.*", "--xattrs-include=trusted.overlay.*"]


def pack(name: str) -> bytes:
    """The directory named `name`, with its meta and its name, as one tar (for another machine's cache)."""
    ident = ident_of(name)
    meta = json.loads((ROOTFS / ident / "meta.json").read_text())
    idents = [layer.name for layer in layer_chain(ident)] if meta.get("kind") == "host" else [ident]
    with tempfile.TemporaryDirectory(prefix="optrunner-pack-") as tmp:
        (Path(tmp) / "name.json").write_text(json.dumps({"name": name, "id": ident, "ids": idents}))
        # (a layer over the host travels with the layers it is made on)
        done = subprocess.run(["tar", "-c", *_TAR, "-C", tmp, "name.json", "-C", str(ROOTFS), *idents],
                              capture_output=True)
    if done.returncode != 0:
        raise SandboxError(f"packing {name} failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return done.stdout


def unpack(data: bytes) -> None:
    """Put a `pack`ed directory into this machine's cache and name it."""
    ROOTFS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".import-", dir=ROOTFS))
    try:
        done = subprocess.run(["tar", "-x", *_TAR, "-C", str(work)], input=data, capture_output=True)
        if done.returncode != 0:
            raise SandboxError(f"unpacking a root file system failed: "
                               f"{done.stderr.decode(errors='replace').strip()[-300:]}")
        named = json.loads((work / "name.json").read_text())
        for ident in named.get("ids") or [named["id"]]:
            if (ROOTFS / ident / "meta.json").is_file() or not (work / ident / "meta.json").is_file():
                continue
            if (ROOTFS / ident).exists():  # a half-made one from an earlier try
                shutil.rmtree(ROOTFS / ident, ignore_errors=True)
            (work / ident).rename(ROOTFS / ident)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record_name(named["name"], named["id"])
