"""A bubblewrap sandbox's files kept as a root file system a fresh sandbox starts from (`Checkpointable`).

A sandbox writes only into its writable layers (one per mount, `<sandbox>/upper/<key>`, overlayfs: a deleted file
is a whiteout there). A checkpoint copies those layers (`cp -a`: whiteouts, modes, owners and extended
attributes kept) to ROOTFS/<ident>/layers/0 and names the directory like an exported image; a sandbox started
from it mounts each layer above the image's own lowers, so it sees the files as they were. A sandbox that itself
started from a checkpoint copies that checkpoint's layers too (layers/1, 2, ...): a checkpoint never depends on
another, which the runner removes once a newer one exists. Processes are not kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from harness.sandbox import kept
from harness.sandbox.bwrap import rootfs
from harness.sandbox.bwrap.rootfs import CHECKPOINT, ROOTFS, Rootfs
from harness.sandbox.interface import SandboxError


def _ident(name: str) -> str:
    return "ckpt-" + hashlib.sha256(name.encode()).hexdigest()[:24]


def keep(started_from: Rootfs, upper: Path, name: str, labels: dict[str, str] | None = None) -> str:
    """The sandbox's writable layers (under `upper`) kept under `name`, over the image it started from."""
    base, inherited = _base_of(started_from.name)
    ident = _ident(name)
    target = ROOTFS / ident
    partial = ROOTFS / f".{ident}.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    layers = [upper, *inherited]
    try:
        for i, layer in enumerate(layers):
            (partial / "layers").mkdir(parents=True, exist_ok=True)
            done = subprocess.run(["cp", "-a", str(layer), str(partial / "layers" / str(i))], capture_output=True,
                                  text=True)
            if done.returncode != 0:
                raise SandboxError(f"bwrap: could not keep the sandbox's files: {done.stderr.strip()[-300:]}")
        meta = {"kind": CHECKPOINT, "name": name, "base": base, "layers": len(layers), "labels": kept.marks(labels)}
        (partial / "meta.json").write_text(json.dumps(meta, indent=1))
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    rootfs.record_name(name, ident)
    return name


class KeptLayers:
    """A BwrapSandbox's `Checkpointable` and `Portable` sides: its writable layers (`upper`) over `rootfs`."""
    rootfs: Rootfs
    upper: Path

    def checkpoint(self, name: str, labels: dict[str, str] | None = None) -> str:
        """Its writable layers kept as a root file system `name`: files, not processes."""
        return keep(self.rootfs, self.upper, name, labels)

    def export_checkpoint(self, name: str) -> tuple[bytes, bool]:
        """A checkpoint holds the layers it inherited, so its packed directory stands alone."""
        return rootfs.pack(name), True


def relabel(name: str, labels: dict[str, str] | None) -> None:
    """A checkpoint brought from another machine (rootfs.unpack) labelled as this host's: its cleanup judges it."""
    meta_file = ROOTFS / rootfs.ident_of(name) / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["labels"] = kept.marks(labels)
    meta_file.write_text(json.dumps(meta, indent=1))


def _base_of(name: str) -> tuple[str, list[Path]]:
    """The image a root file system comes from, and the checkpoint layers above it (the top one first)."""
    try:
        ident = rootfs.ident_of(name)
        meta = json.loads((ROOTFS / ident / "meta.json").read_text())
    except (OSError, ValueError, KeyError):
        return name, []
    if meta.get("kind") != CHECKPOINT:
        return name, []
    return str(meta["base"]), [ROOTFS / ident / "layers" / str(i) for i in range(int(meta["layers"]))]


def remove(name: str) -> None:
    """A checkpoint removed (gone already is fine); an exported image is never removed here."""
    try:
        ident = rootfs.ident_of(name)
    except (OSError, ValueError, KeyError):
        return
    if not ident.startswith("ckpt-"):
        return
    shutil.rmtree(ROOTFS / ident, ignore_errors=True)
    rootfs.name_file(name).unlink(missing_ok=True)


def remove_forgotten(everything: bool = False) -> int:
    """Checkpoints no checkpoint file of this host needs any more (harness.sandbox.kept) removed, or every one;
    returns how many. A half-copied one (`.ckpt-*.<pid>`, its copier killed) goes too once that process is gone."""
    removed = 0
    for directory in sorted(ROOTFS.glob("ckpt-*")):
        try:
            meta = json.loads((directory / "meta.json").read_text())
        except (OSError, ValueError):
            continue  # not one of ours whole: unpack() makes them whole before naming them
        if everything or kept.forgotten(meta.get("labels") or {}, [meta.get("name", "")]):
            remove(str(meta.get("name", "")))
            shutil.rmtree(directory, ignore_errors=True)  # (a name recorded for another directory)
            removed += 1
    for partial in ROOTFS.glob(".ckpt-*.*"):
        pid = partial.name.rpartition(".")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(partial, ignore_errors=True)
    return removed
