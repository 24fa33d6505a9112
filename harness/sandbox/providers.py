"""Sandbox providers, registered by name: what starts sandboxes from task images.

A provider makes sure it can run (`ensure_ready`), builds or finds each task's image (`ensure_images`),
starts sandboxes (`start`), removes what a crashed run left behind (`cleanup`) and says which engine and
images it used (`engine_version`, `image_id`). Only the provider
knows its engine; callers see the interface of `harness.sandbox.interface` and its errors. Providers are
imported on first use, so naming one costs nothing. A run names its provider (`sandbox.provider`, the
harness commands' `--provider`) and every path of it (rollouts, grading, a Ray node) starts that one by name;
code outside harness/sandbox/ never asks which provider it has.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
import threading
from typing import IO, TYPE_CHECKING, Literal, Protocol, runtime_checkable

from harness.gpus import Gpu
from harness.sandbox import live
from harness.sandbox.interface import ImageBuildError, ImageConfig, Sandbox, SandboxLimits, TaskImages

if TYPE_CHECKING:
    from harness.tasks.task import Task

Progress = Callable[[str], None]
CleanupScope = Literal["orphans", "mine", "all"]
# name -> "module:class"; a provider's `name` attribute is its key here (a Ray node starts the same one by it).
PROVIDERS = {"docker": "harness.sandbox.docker.provider:DockerProvider",
             "bwrap": "harness.sandbox.bwrap.provider:BwrapProvider",  # bubblewrap: the `bwrap` extra
             # plain processes of this host, no isolation: opt-in, for hosts where no sandbox can start
             "unsandboxed": "harness.sandbox.unsandboxed.provider:UnsandboxedProvider"}
DEFAULT_PROVIDER = "docker"  # what a run or a harness command uses when it names none
# Where a sandbox's root filesystem comes from (`sandbox.rootfs`): the task image's (image) or the host's (host).
ROOTFS = ("image", "host")
# Which of those each provider starts sandboxes from: Docker runs task images only, unsandboxed the host only.
ROOTFS_OF = {"docker": ("image",), "bwrap": ("image", "host"), "unsandboxed": ("host",)}
# Providers whose sandboxes isolate nothing: agent rollouts refuse them unless sandbox.allow_unsandboxed is set.
NOT_ISOLATED = frozenset({"unsandboxed"})
# The interpreter a layer over the host runs as python3 (`sandbox.host_python`: a path, system or auto; read
# when a task's layers are built: harness.sandbox.hostextras).
HOST_PYTHON = "OPTRUNNER_HOST_PYTHON"


def rootfs_problem(name: str, rootfs: str) -> str | None:
    """One line (keys relative to `sandbox.`) when provider `name` cannot start sandboxes from `rootfs`,
    naming the provider that can; read from the config alone, before anything is built."""
    if rootfs in ROOTFS_OF.get(name, ROOTFS):
        return None
    if rootfs == "image":
        return f"rootfs=image is not something provider {name} starts (it runs over this host's own system): " \
               "add sandbox.rootfs=host (grading commands: --rootfs host)"
    able = [p for p, kinds in ROOTFS_OF.items() if rootfs in kinds]
    return (f"rootfs={rootfs} is not something provider {name} starts (it runs task images only): add "
            f"sandbox={able[0]} to the command (it needs no Docker)")


def isolates(name: str) -> bool:
    """Whether provider `name`'s sandboxes isolate what runs in them from the host (the unsandboxed one's do not)."""
    return name not in NOT_ISOLATED


class SandboxProvider(Protocol):
    name: str

    def ensure_ready(self, disk: str | None = None, output_dir: Path | None = None) -> None:
        """Raise SandboxUnavailable (one line, naming `optrunner setup` where that would help) when sandboxes
        cannot be started here. Never installs or starts anything. Given `disk` (sandbox.disk), also the
        pre-flight of harness.sandbox.diskcheck: NotEnoughDisk (a SandboxUnavailable, one line) when where
        the provider keeps sandboxes' writes has less than `disk` free, or `output_dir` (the run's
        directory, made or not) less than diskcheck.OUTPUT_RESERVE. Commands that free space (cleanup)
        call it without `disk`."""
        ...

    def setup(self, progress: Progress = print) -> None:
        """Install and start what this provider needs on this machine (`optrunner setup`, `make docker`);
        raise SandboxUnavailable (one line) when this machine cannot be set up automatically."""
        ...

    def ensure_images(self, tasks: Sequence["Task"], base_image: str, progress: Progress = print,
                      base_map: Mapping[str, str] | None = None, rootfs_from: str = "image") -> dict[str, TaskImages]:
        """Find, pull or build every task's images (the agent's and the grader's); `base_map` names local
        images for Dockerfile bases that cannot be pulled. `rootfs_from` (`sandbox.rootfs`): "image" (the
        task image's files) or "host" (the host's own system under a task layer, where the provider can).
        Raises ImageBuildError, or SandboxUnavailable for a `rootfs_from` the provider cannot use."""
        ...

    def start(self, image: str, limits: SandboxLimits | None = None, labels: dict[str, str] | None = None,
              gpus: Sequence[Gpu] = ()) -> Sandbox:
        """A sandbox from `image`; `gpus` (harness.gpus.GpuPool) are its own, the only ones it sees."""
        ...

    def engine_version(self) -> str | None:
        """The engine's own version (what the daemon reports, not the client's); None when it does not answer.
        Recorded with every run (harness.provenance), so a result names the engine that produced it."""
        ...

    def image_id(self, name: str) -> str | None:
        """The content id of the local image `name` (a tag can be rebuilt, the id cannot); None when the image
        is absent or the engine does not answer."""
        ...

    def add_folder(self, image: str, source: Path, dest: str, kind: str, progress: Progress = print,
                   then: str = "") -> str:
        """`image` with this machine's folder `source` at `dest`, one layer more, named by `kind` (installed
        agents); `then`: a command run over it once. Returns the new image's name."""
        ...

    # Moving an image from one machine's engine to another's (the Ray executor's nodes).
    def has_image(self, name: str) -> bool: ...

    def export_image(self, name: str) -> Iterator[bytes]:
        """The image as one archive, in pieces (an image is hundreds of MB: never whole in this process)."""
        ...

    def import_image(self, pieces: Iterable[bytes]) -> None:
        """An archive `export_image` made (on this or another machine), its pieces in order."""
        ...

    # Running one provider's images in another's sandboxes (bwrap runs the images Docker builds).
    def export_files(self, name: str, out: IO[bytes]) -> ImageConfig:
        """Every file of image `name` as one tar archive (its layers flattened, as a sandbox from it sees
        them) written to `out` as it is read, since an image may be gigabytes; and what the image says
        beside its files. SandboxError (one line) when the image is absent or cannot be exported."""
        ...

    # Rollout checkpoints (runner.checkpoints): kept sandboxes, rebuilt elsewhere, removed when nothing needs them.
    def import_checkpoint(self, name: str, base: str, archives: Sequence[bytes],
                          labels: dict[str, str] | None = None) -> None:
        """The checkpoint `name` rebuilt on this machine from `base` and the archives its sandboxes exported
        (`Portable`), in order."""
        ...

    def remove_image(self, name: str) -> None:
        """An image this project made (a sandbox's checkpoint) removed; gone already is fine."""
        ...

    def cleanup_checkpoints(self, scope: "CleanupScope" = "orphans") -> int:
        """Rollout checkpoints no checkpoint file names any more (`all`: every one); how many were removed."""
        ...

    def cleanup(self, scope: CleanupScope = "orphans", labels: dict[str, str] | None = None) -> int:
        """Remove our sandboxes: of dead processes (orphans), of this process (mine) or all; `labels`
        narrows that to sandboxes started with these labels."""
        ...


_made: dict[str, SandboxProvider] = {}  # the providers this process made, by name


@runtime_checkable
class WaitsReady(Protocol):
    """A provider whose engine can go away for a while (a Docker daemon restarting): the runner waits for it
    before retrying a rollout's infrastructure error."""

    def wait_ready(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """True once the engine answers again, False after `timeout_s` or once `stop` is set."""
        ...


@cache
def provider(name: str = DEFAULT_PROVIDER) -> SandboxProvider:
    if name not in PROVIDERS:
        raise ValueError(f"unknown sandbox provider {name!r}; known: {', '.join(PROVIDERS)}")
    module, _, cls = PROVIDERS[name].partition(":")
    made: SandboxProvider = getattr(importlib.import_module(module), cls)()
    _made[name] = made
    return made


def remove_mine() -> None:
    """Every sandbox this process started, of every provider it used, removed (a second Ctrl-C's cleanup:
    harness.signals): the live registry's (harness.sandbox.live), then the sweep of each provider it did not
    sweep, Docker's always (a container whose creation answer was lost was never tracked: its labels
    still say whose it is). Nothing raises: the process is exiting, and `harness cleanup` removes what is
    left."""
    swept = live.close_all()
    for name in sorted({"docker", *_made} - swept):
        try:
            provider(name).cleanup("mine")
        except Exception:  # noqa: BLE001 - the next provider still gets its turn
            pass


def ensure_each(sandboxes: SandboxProvider, tasks: Sequence["Task"], base_image: str, progress: Progress = print,
                base_map: Mapping[str, str] | None = None,
                rootfs_from: str = "image") -> tuple[dict[str, TaskImages], dict[str, str]]:
    """`ensure_images` task by task: the images of every task whose images could be made, and task id -> the
    first line of why for each whose could not (ImageBuildError: its build failed, its image cannot be
    pulled, its layers cannot go over the host). One broken task must not stop the others; the first
    error is raised when no task's images could be made (then nothing can run: a broken engine, say).
    SandboxUnavailable (the provider itself cannot work) is raised at once."""
    images: dict[str, TaskImages] = {}
    failed: dict[str, str] = {}
    first: ImageBuildError | None = None
    for task in tasks:
        try:
            images.update(sandboxes.ensure_images([task], base_image, progress, base_map, rootfs_from))
        except ImageBuildError as err:
            first = first or err
            why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            failed[task.id] = why.removeprefix(f"task {task.id}: ")
            progress(f"[{task.id}] skipped: {failed[task.id]}")
    if first is not None and not images:
        raise first
    return images, failed
