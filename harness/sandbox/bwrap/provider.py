"""The bubblewrap sandbox provider: sandboxes for machines where Docker cannot run.

Images: the Docker provider builds each task's images where an engine is reachable, and each is exported
once to a directory (rootfs.py) that sandboxes start from; starting a sandbox needs no engine. Docker is
reached by name through the provider registry and the provider contract only (ensure_images, image_id,
add_folder, export_files): nothing of harness/sandbox/docker/ is imported here.
"""
from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harness.gpus import Gpu
from harness.sandbox import diskcheck
from harness.sandbox.bwrap import registry, rootfs
from harness.sandbox.bwrap.binary import bwrap_path, usable
from harness.sandbox.bwrap.sandbox import BwrapSandbox
from harness.sandbox.interface import (DEFAULT_BASE_IMAGE, ImageBuildError, ImageConfig, SandboxError,
                                       SandboxLimits, SandboxUnavailable, TaskImages)
from harness.sandbox.providers import CleanupScope, Progress, SandboxProvider, provider

if TYPE_CHECKING:
    from harness.tasks.task import Task

# The provider whose images sandbox.rootfs=image runs: it builds them, this one runs their files.
IMAGES_FROM = "docker"


def image_provider() -> SandboxProvider:
    """The provider that builds the images bwrap's sandboxes run (sandbox.rootfs=image)."""
    return provider(IMAGES_FROM)


class BwrapProvider:
    name = "bwrap"

    def ensure_ready(self, disk: str | None = None, output_dir: Path | None = None) -> None:
        usable()
        if disk is not None:  # (sandbox.disk is not a limit here: a sandbox's layer is a folder on the host)
            diskcheck.check_free(disk, [("the bwrap sandboxes' folder", registry.STATE)], output_dir)

    def setup(self, progress: Progress = print) -> None:
        usable()
        progress(f"bubblewrap is ready ({bwrap_path()})")

    def ensure_images(self, tasks: Sequence["Task"], base_image: str = DEFAULT_BASE_IMAGE,
                      progress: Progress = print, base_map: Mapping[str, str] | None = None,
                      rootfs_from: str = "image") -> dict[str, TaskImages]:
        if rootfs_from == "host":  # no Docker at all: each task's layers over the host's own system
            from harness.sandbox.bwrap.hostfs import ensure_layers, refusal
            usable()
            for task in tasks:  # every task checked before any is built
                why = refusal(task)
                if why:
                    raise ImageBuildError(why)
            return {task.id: ensure_layers(task, progress) for task in tasks}
        builder = image_provider()
        try:
            builder.ensure_ready()
        except SandboxUnavailable as err:
            raise SandboxUnavailable(f"bwrap sandboxes take task images from {builder.name}: {err.reason}; start it "
                                     "('optrunner setup'), or run over this host's own system with no Docker: "
                                     "sandbox.rootfs=host (grading commands: --rootfs host)") from None
        images = builder.ensure_images(tasks, base_image, progress, base_map)
        names = sorted({name for found in images.values() for name in (found.agent, found.grading, found.base) if name})
        for name in names:
            _export(builder, name, progress)
        return images

    def start(self, image: str, limits: SandboxLimits | None = None, labels: dict[str, str] | None = None,
              gpus: Sequence[Gpu] = ()) -> BwrapSandbox:
        return BwrapSandbox.start(rootfs.lookup(image), limits, labels, gpus)

    def engine_version(self) -> str | None:
        try:
            done = subprocess.run([bwrap_path(), "--version"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired, SandboxUnavailable):
            return None
        return done.stdout.strip() or None

    def image_id(self, name: str) -> str | None:
        try:
            return rootfs.ident_of(name)
        except (OSError, ValueError, KeyError):
            return None

    def add_folder(self, image: str, source: Path, dest: str, kind: str, progress: Progress = print,
                   then: str = "") -> str:
        """`image` with this machine's folder `source` at `dest` (installed agents): the Docker image one
        layer up, exported like the task images. Over the host's system (sandbox.rootfs=host) there is no
        image to add to yet: refused in one line."""
        builder = image_provider()
        if builder.image_id(image) is None:
            raise SandboxUnavailable(f"{image} is not a {builder.name} image: installed agents on bwrap run in task "
                                     f"images from {builder.name} (sandbox.rootfs=image), not over the host's "
                                     "system yet")
        tag = builder.add_folder(image, source, dest, kind, progress, then)
        _export(builder, tag, progress)
        return tag

    # Moving root file systems between machines (runner.executors.ray): present here, or a tar of one.
    def has_image(self, name: str) -> bool:
        try:
            rootfs.lookup(name)
            return True
        except SandboxError:
            return False

    def export_image(self, name: str) -> Iterator[bytes]:
        yield rootfs.pack(name)  # (one piece: a root file system directory packed by tar)

    def import_image(self, pieces: Iterable[bytes]) -> None:
        rootfs.unpack(b"".join(pieces))

    def export_files(self, name: str, out: IO[bytes]) -> ImageConfig:
        """An exported image's directory as one tar (a layer over the host or a checkpoint: SandboxError)."""
        return rootfs.write_files(name, out)

    def remove_image(self, name: str) -> None:
        """A sandbox's kept files (a rollout's checkpoint) removed; an exported image is never removed here."""
        from harness.sandbox.bwrap.checkpoints import remove
        remove(name)

    def import_checkpoint(self, name: str, base: str, archives: Sequence[bytes],
                          labels: dict[str, str] | None = None) -> None:
        """A checkpoint from another machine (`Portable`): its last archive stands alone over `base`, which
        must be here already (the runner loads the task image first)."""
        from harness.sandbox.bwrap.checkpoints import relabel
        rootfs.unpack(archives[-1])
        relabel(name, labels)

    def cleanup_checkpoints(self, scope: CleanupScope = "orphans") -> int:
        """Rollout checkpoints no checkpoint file names any more (`all`: every one)."""
        from harness.sandbox.bwrap.checkpoints import remove_forgotten
        return remove_forgotten(everything=scope == "all")

    def cleanup(self, scope: CleanupScope = "orphans", labels: dict[str, str] | None = None) -> int:
        return registry.remove_sandboxes(scope, labels)


def _export(builder: SandboxProvider, name: str, progress: Progress) -> None:
    """Image `name` of `builder` exported to a directory, unless that directory is its export already."""
    if not rootfs.current(name, builder.image_id(name)):
        progress(f"bwrap: exporting {name} to a directory")
        rootfs.export(builder, name)


if TYPE_CHECKING:  # `make typecheck` holds this provider to the whole protocol
    def _conforms(made: BwrapProvider) -> SandboxProvider:
        return made
