"""An image one layer above another holding a folder of this machine: how an installed agent's program
gets into a task's image (scaffolds.installed) without the task's own files changing.

The folder is copied in as it is (one archive, owned by root, read-only to the sandbox's users), nothing
runs in the image, and the result is tagged by the parent's id and the folder's name: an agent's folder
is named after its version and the interpreter it was installed for, so a new version is a new layer and
an unchanged one is reused.
"""
from __future__ import annotations

import tarfile
import tempfile
from typing import IO
from pathlib import Path

import docker

from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.images import Progress, commit_image, image_exists, run_step, scratch_container
from harness.sandbox.interface import ImageBuildError
from harness.sandbox.taskimage.contents import RECIPE_VERSION, content_hash


def folder_tar(source: Path, dest: str, buf: IO[bytes]) -> None:
    """`source`'s tree under `dest` (an absolute path), as a tar rooted at /, written to `buf` (a file: an
    agent's folder is hundreds of MB): files keep their mode without group/other write, owned by root; links
    are kept as links (a wheel's tree has none that leave it)."""

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode &= ~0o022
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(source, arcname=dest.lstrip("/"), filter=owned_by_root)


def with_folder(client: docker.DockerClient, parent: str, source: Path, dest: str, kind: str,
                progress: Progress = print, then: str = "") -> str:
    """`parent` with the folder `source` at `dest`, and `then` (a shell command, e.g. compiling what was
    added with the image's own interpreter) run after it: built once per parent image, folder name and
    command."""
    image = client.images.get(parent)
    digest = content_hash(RECIPE_VERSION.encode(), image.id.encode(), source.name.encode(), dest.encode(),
                          then.encode())
    tag = f"optrunner/{kind}:{digest}"
    if image_exists(client, tag):
        return tag
    progress(f"adding {source.name} to {parent}")
    container = scratch_container(client, parent, network=False)
    try:
        with tempfile.TemporaryFile() as archive:  # streamed to the engine, never whole in memory
            folder_tar(source, dest, archive)
            archive.seek(0)
            if not container.put_archive("/", archive):
                raise ImageBuildError(f"could not copy {source} into {parent}")
        if then:
            run_step(container, then, f"adding {source.name}")
        config = image.attrs.get("Config") or {}
        # the parent's labels stay (its commit label included) except what says which kind of image it is
        commit_image(container, tag, {}, {LABEL: kind}, workdir=config.get("WorkingDir") or "/")
    finally:
        container.remove(force=True)
    return tag
