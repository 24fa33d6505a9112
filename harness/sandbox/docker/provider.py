"""The Docker sandbox provider: the engine, the task images, containers and their cleanup."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import docker

from harness.gpus import Gpu
from harness.sandbox import diskcheck
from harness.sandbox.docker.containers import (LABEL, OWNER_LABEL, docker_client, engine_storage, owner_id,
                                               remove_containers)
from harness.sandbox.docker import engine
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.sandbox import ENGINE_ERRORS, DockerSandbox, engine_errors
from harness.sandbox.docker.task_images import ensure_images
from harness.sandbox.interface import ImageConfig, SandboxLimits, SandboxUnavailable, TaskImages
from harness.sandbox.providers import CleanupScope, Progress, SandboxProvider

if TYPE_CHECKING:
    from harness.tasks.task import Task

IMAGE_PIECE = 32 * 1024 * 1024  # bytes of `docker save` per piece moved between machines


class DockerProvider:
    name = "docker"

    def ensure_ready(self, disk: str | None = None, output_dir: Path | None = None) -> None:
        engine.ensure_engine(start=False)
        if disk is not None:
            diskcheck.check_free(disk, self.storage_places(), output_dir)

    def storage_places(self) -> list[tuple[str, Path]]:
        """Where the engine keeps containers' writable layers, when that is a folder on this machine (an
        engine on another machine, or in a VM, is its own: it cannot be measured from here)."""
        with engine_errors():
            client = docker_client()
            root = engine_storage(client).root_dir
        local = str(client.api.base_url).startswith("http+docker://local")  # a unix socket, not tcp or ssh
        return [("Docker's data root", Path(root))] if local and root and Path(root).is_dir() else []

    def setup(self, progress: Progress = print) -> None:
        progress(engine.setup())

    def wait_ready(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """Wait until the engine answers (at most `timeout_s`, or until `stop` is set); True when it does.
        Why: a daemon restart takes the engine away for seconds; a rollout retried at once would fail again
        immediately, use up its retries and then every queued rollout's, all recorded as infra errors.
        Each probe uses a fresh client: the shared one's kept-alive connections still reach a daemon that
        is shutting down (it answers there, while new connections already fail); two answers in a row."""
        deadline = time.monotonic() + timeout_s
        answered = 0
        while answered < 2:
            try:
                probe = docker.DockerClient.from_env(timeout=10)
                try:
                    probe.ping()
                    answered += 1
                finally:
                    probe.close()
            except ENGINE_ERRORS:
                answered = 0
            if answered >= 2:
                break
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                return False
            (stop or threading.Event()).wait(0.5)
        return True

    def ensure_images(self, tasks: Sequence["Task"], base_image: str = BaseImageSpec.base,
                      progress: Progress = print, base_map: Mapping[str, str] | None = None,
                      rootfs_from: str = "image") -> dict[str, TaskImages]:
        if rootfs_from != "image":
            raise SandboxUnavailable(f"sandbox.rootfs={rootfs_from} needs sandbox.provider=bwrap (grading commands: "
                                     "--provider bwrap); Docker runs task images only")
        with engine_errors():
            return ensure_images(docker_client(), list(tasks), BaseImageSpec(base=base_image), progress, base_map)

    # Provenance (harness.provenance): best-effort, so a daemon restarting while a report is written costs
    # the report a null, never the report itself.
    def engine_version(self) -> str | None:
        try:
            return str(docker_client().version()["Version"])  # /version: the daemon's, not docker-py's
        except (*ENGINE_ERRORS, KeyError):
            return None

    def image_id(self, name: str) -> str | None:
        try:
            return docker_client().images.get(name).id
        except ENGINE_ERRORS:  # ImageNotFound is a DockerException
            return None

    def add_folder(self, image: str, source: Path, dest: str, kind: str, progress: Progress = print,
                   then: str = "") -> str:
        """`image` with this machine's folder `source` at `dest`, one layer more (installed agents)."""
        from harness.sandbox.docker.layers import with_folder
        with engine_errors():
            return with_folder(docker_client(), image, source, dest, kind, progress, then)

    # Moving images between engines (runner.executors.ray: a node that lacks a task image gets it from the
    # driver's engine, `docker save` there and `docker load` here).
    def has_image(self, name: str) -> bool:
        with engine_errors():
            try:
                docker_client().images.get(name)
                return True
            except docker.errors.ImageNotFound:
                return False

    def export_image(self, name: str) -> Iterator[bytes]:
        with engine_errors():  # `docker save`, streamed, regrouped into pieces of IMAGE_PIECE bytes (the
            piece = bytearray()  # engine's stream comes in socket reads of ~32 kB: an object each would crawl)
            for chunk in docker_client().images.get(name).save(chunk_size=IMAGE_PIECE, named=True):
                piece += chunk
                if len(piece) >= IMAGE_PIECE:
                    yield bytes(piece)
                    piece.clear()
            if piece:
                yield bytes(piece)

    def import_image(self, pieces: Iterable[bytes]) -> None:
        with engine_errors():  # `docker load` of a streamed body (sent chunked, never joined here)
            docker_client().images.load(iter(pieces))

    def export_files(self, name: str, out: IO[bytes]) -> ImageConfig:
        """`docker export` of a container of `name` never started (the image's files, flattened), streamed."""
        with engine_errors():
            client = docker_client()
            config = client.images.get(name).attrs.get("Config") or {}
            container = client.containers.create(name, ["true"], network_disabled=True,
                                                 labels={LABEL: "build", OWNER_LABEL: owner_id()})
            try:
                for chunk in container.export():
                    out.write(chunk)
            finally:
                container.remove(force=True)
        env = dict(pair.split("=", 1) for pair in config.get("Env") or [] if "=" in pair)
        return ImageConfig(env, config.get("WorkingDir") or "/", config.get("Labels") or {})

    def import_checkpoint(self, name: str, base: str, archives: Sequence[bytes],
                          labels: dict[str, str] | None = None) -> None:
        """The checkpoint `name` rebuilt on this engine from `base` and the archives its sandboxes exported
        (`Portable`, harness.sandbox.docker.portable), in order."""
        from harness.sandbox.docker.portable import apply
        with DockerSandbox.start(base) as box:
            for archive in archives:
                with engine_errors():
                    apply(box.container, archive)
            box.checkpoint(name, labels)

    def cleanup_checkpoints(self, scope: CleanupScope = "orphans") -> int:
        """Rollout checkpoint images no checkpoint file needs any more (`all`: every one)."""
        from harness.sandbox.docker.containers import remove_checkpoints
        with engine_errors():
            return remove_checkpoints(scope)

    def remove_image(self, name: str) -> None:
        """An image this project made (a sandbox's checkpoint) removed; gone already is fine."""
        with engine_errors():
            try:
                docker_client().images.remove(name, force=True)
            except docker.errors.ImageNotFound:
                pass

    def start(self, image: str, limits: SandboxLimits | None = None, labels: dict[str, str] | None = None,
              gpus: Sequence[Gpu] = ()) -> DockerSandbox:
        return DockerSandbox.start(image, limits, labels, gpus=gpus)

    def cleanup(self, scope: CleanupScope = "orphans", labels: dict[str, str] | None = None) -> int:
        with engine_errors():
            return remove_containers(scope, labels=labels)


if TYPE_CHECKING:  # `make typecheck` holds this provider to the whole protocol
    def _conforms(made: DockerProvider) -> SandboxProvider:
        return made
