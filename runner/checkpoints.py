"""A run's rollout checkpoints: `<run>/checkpoints/<task>__<index>.json` beside the sandbox's file system kept by
its provider (Docker: an image `optrunner/checkpoint:<tag>`), so an interrupted rollout continues where its
last checkpoint left it (scaffolds/checkpoint.py says what a checkpoint holds).

Every answered call is also appended to `<task>__<index>.calls.jsonl` (its step and usage), so when a rollout
continues, the calls made after its checkpoint, whose work was lost with the kill, are still counted as spent
(`take_lost`): the record's cost is what the provider was paid.

A checkpoint is written after its image exists (atomically: a kill leaves the previous one whole), and the
previous image is removed once the new file names the new one. The driver removes both when the rollout's
record is stored; `harness cleanup` removes checkpoint images nothing names any more.

On a Ray node (`rebuild` given) the files are the driver's: its `Folder` runs as an actor there, which a node
reaches through runner.executors.ray_actors.RemoteFiles. Each checkpoint also travels there as an archive
(`<task>__<index>.<step>.tar`, harness.sandbox.interface.Portable): a node whose engine lacks the image, because
another node made it or that node is gone, rebuilds it from the task image and the archives, then continues.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from harness.atomic import plain_name, write_bytes
from harness.models.records import CallRecord, Usage
from harness.sandbox.interface import Checkpointable, Portable, Sandbox, SandboxError
from harness.sandbox.providers import SandboxProvider
from harness.sandbox import kept
from harness.sandbox.kept import FILE_LABEL  # the file that names a kept sandbox (harness cleanup reads it)
from scaffolds.checkpoint import FORMAT, Checkpoints, EpisodeState

IMAGE = "optrunner/checkpoint"
Rebuild = Callable[[str, str, Sequence[bytes], dict[str, str]], None]  # a provider's import_checkpoint


class Files(Protocol):
    """Where a run's checkpoint files live (`Folder`; on a Ray node, the driver's folder through an actor)."""

    def read(self, name: str) -> bytes | None: ...

    def write(self, name: str, data: bytes) -> None:
        """Replaced whole (a kill leaves the old file or the new one)."""
        ...

    def append(self, name: str, line: str) -> None: ...

    def remove(self, name: str) -> None: ...

    def where(self, name: str) -> str:
        """The file's path on the machine that holds it (what a kept sandbox's FILE_LABEL names)."""
        ...


class Folder:
    """The run's own checkpoints folder (`Files`)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, name: str) -> Path:
        """A file of the folder itself: names come from checkpoint files, which a copied run may have altered."""
        if not plain_name(name):
            raise ValueError(f"{name!r} is not a file name of the checkpoints folder")
        return self.root / name

    def read(self, name: str) -> bytes | None:
        try:
            return self._path(name).read_bytes()
        except OSError:
            return None

    def write(self, name: str, data: bytes) -> None:
        write_bytes(self._path(name), data)

    def append(self, name: str, line: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with self._path(name).open("a") as out:  # flushed on close: a kill loses at most this line
            out.write(line + "\n")

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def where(self, name: str) -> str:
        return str(self._path(name).resolve())


class CheckpointDir:
    def __init__(self, files: Path | Files, run_id: str, remove_image: Callable[[str], None],
                 rebuild: Rebuild | None = None) -> None:
        self.files: Files = Folder(files) if isinstance(files, Path) else files
        self.run_id, self.remove_image, self.rebuild = run_id, remove_image, rebuild
        self.chains: dict[tuple[str, int], list[str]] = {}  # archives of the checkpoint a rollout continues
        self.here: dict[tuple[str, int], set[str]] = {}  # the images this process made or rebuilt, per rollout

    @staticmethod
    def name(task_id: str, index: int, suffix: str = ".json") -> str:
        return f"{task_id}__{index}{suffix}"

    def journal(self, task_id: str, index: int) -> Callable[[int, CallRecord], None]:
        """What the Recorder calls with each answered call: one line appended per call."""
        name = self.name(task_id, index, ".calls.jsonl")

        def spent(step: int, record: CallRecord) -> None:
            self.files.append(name, json.dumps({"step": step, "call": record.to_dict()}))

        return spent

    def take_lost(self, task_id: str, index: int, found: dict[str, Any] | None, count: bool = True) -> Usage:
        """The calls answered after the checkpoint `found` (None: all of them, the rollout starts again), whose
        work was lost, taken out of the journal so the new piece's calls take their places; their usage is
        returned and, when `count` and there is a checkpoint, added to its state's `details.lost_calls` (written
        back at once: a second kill does not forget them)."""
        done = len(found["state"]["steps"]) if found is not None else 0
        name = self.name(task_id, index, ".calls.jsonl")
        lost, kept = Usage(), []
        lines = (self.files.read(name) or b"").decode().splitlines()
        for line in lines:
            try:
                entry = json.loads(line)
                step, call = int(entry["step"]), CallRecord(**entry["call"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by the kill
            if step >= done:
                lost.add(call)
            else:
                kept.append(line)
        if count and lost.calls and found is not None:
            found["state"].setdefault("details", {}).setdefault("lost_calls", []).append(lost.to_dict())
            self._write(task_id, index, found)
        if lines:
            self.files.write(name, "".join(f"{line}\n" for line in kept).encode())
        return lost

    def load(self, task_id: str, index: int) -> dict[str, Any] | None:
        """The rollout's last checkpoint ({image, state, written_at, older, [base, archives]}), or None (none,
        unreadable, another format: the rollout starts again)."""
        try:
            data = json.loads(self.files.read(self.name(task_id, index)) or b"")
        except ValueError:
            return None
        ok = isinstance(data, dict) and isinstance(data.get("state"), dict) and data["state"].get("format") == FORMAT \
            and isinstance(data.get("archives") or [], list) and all(plain_name(a) for a in data.get("archives") or [])
        return data if ok and kept.current(data) is not None else None

    def _write(self, task_id: str, index: int, found: dict[str, Any]) -> None:
        self.files.write(self.name(task_id, index), json.dumps(found, indent=1, default=str).encode())

    def saver(self, task_id: str, index: int, sandbox: Sandbox, started_from: str | None = None,
              base: str = "") -> Callable[[EpisodeState], None]:
        """What the Recorder calls with each new state: the sandbox kept (and, on a Ray node, its archive sent),
        then the file, then the old image gone (but the one the sandbox started from, which it still runs on:
        removed with the rollout's record). `base`: the task image, the one a rebuild starts from."""
        if not isinstance(sandbox, Checkpointable):
            raise SandboxError("this sandbox provider cannot keep a sandbox's files (Checkpointable)")
        portable = sandbox if self.rebuild is not None and isinstance(sandbox, Portable) else None  # (it travels)
        key = hashlib.sha1(f"{self.run_id}/{task_id}/{index}".encode()).hexdigest()[:16]
        chain = self.chains.get((task_id, index), [])  # (the archives of the checkpoint it started from)

        def save(state: EpisodeState) -> None:
            before = self.load(task_id, index)
            # the file that will name it, so `harness cleanup` can tell a forgotten image from a kept one
            image = sandbox.checkpoint(f"{IMAGE}:{key}-{len(state.steps)}",
                                       {FILE_LABEL: self.files.where(self.name(task_id, index))})
            self.here.setdefault((task_id, index), set()).add(image)
            found: dict[str, Any] = {**kept.naming(image), "written_at": time.time()}
            if portable is not None:
                data, alone = portable.export_checkpoint(image)
                archive = self.name(task_id, index, f".{len(state.steps)}.tar")
                self.files.write(archive, data)
                found.update(base=base, archives=[*([] if alone else chain), archive])
            older = kept.older(before) if before is not None else []
            if started_from and before is not None and kept.current(before) == started_from \
                    and started_from not in older:
                older.append(started_from)
            self._write(task_id, index, {**found, **kept.naming(image, older), "state": state.to_dict()})
            if before is not None:
                for archive in set(before.get("archives") or []) - set(found.get("archives") or []):
                    self.files.remove(archive)
                if kept.current(before) not in (image, started_from):
                    self._remove(before["image"])

        return save

    def resume_point(self, task_id: str, index: int, attempt: int, image_id: Callable[[str], str | None]
                     ) -> tuple[str, EpisodeState, Usage] | Usage:
        """The rollout's last checkpoint whose image is here or can be rebuilt here: its image, its state, and
        what the pieces before used (its usage and the calls lost with the kill). Without one, the usage of the
        calls answered before a kill (all lost: it starts from step 0)."""
        found = self.load(task_id, index)
        if found is not None and image_id(found["image"]) is None and not self._rebuilt(task_id, index, found):
            found = None
        # calls answered after the checkpoint: their work is lost with the kill, what they cost is not (an
        # infrastructure retry's were counted when its attempt was discarded)
        lost = self.take_lost(task_id, index, found, count=attempt == 0)
        if found is None:
            self.chains.pop((task_id, index), None)
            return lost if attempt == 0 else Usage()
        self.chains[(task_id, index)] = list(found.get("archives") or [])
        state = EpisodeState.from_dict(found["state"])
        carried = Usage.total([state.used(), *(Usage(**u) for u in state.details.get("lost_calls", []))])
        return found["image"], state, carried

    def _rebuilt(self, task_id: str, index: int, found: dict[str, Any]) -> bool:
        """The checkpoint's image made here from the archives it travelled as (another node made it)."""
        if self.rebuild is None or not found.get("archives") or not found.get("base"):
            return False
        archives = [self.files.read(name) for name in found["archives"]]
        if any(data is None for data in archives):
            return False
        try:
            self.rebuild(found["image"], found["base"], archives,  # type: ignore[arg-type]  # (no None: checked)
                         {FILE_LABEL: self.files.where(self.name(task_id, index))})
        except SandboxError:
            return False
        self.here.setdefault((task_id, index), set()).add(found["image"])
        return True

    def arguments(self, task_id: str, index: int, sandbox: Sandbox, every: int, resume: EpisodeState | None,
                  started_from: str | None = None, base: str = "") -> Checkpoints | None:
        """A scaffold run's checkpointing: where to save and journal (where the sandbox can be kept), what to
        continue; None when it neither keeps nor continues any."""
        if not every and resume is None:
            return None
        if resume is not None:
            done = len(resume.steps)
            resume.details.setdefault("pieces", [{"from_step": 0}]).append({"from_step": done,
                                                                              "started_at": time.time()})
            resume.details["resumed_from"] = done
        if every and not isinstance(sandbox, Checkpointable):  # a provider that keeps none: it runs, saying so
            if resume is not None:
                resume.details["checkpoints"] = "this sandbox provider cannot keep a sandbox's files"
            return Checkpoints(resume=resume)
        if not every:
            return Checkpoints(resume=resume)
        return Checkpoints(every=every, save=self.saver(task_id, index, sandbox, started_from, base), resume=resume,
                           spent=self.journal(task_id, index))

    def discard(self, task_id: str, index: int) -> None:
        """The rollout is recorded: its checkpoint is no longer needed."""
        found = self.load(task_id, index)
        for name in [self.name(task_id, index), self.name(task_id, index, ".calls.jsonl"),
                     *((found or {}).get("archives") or [])]:
            self.files.remove(name)
        if found is not None:
            for image in [found["image"], *kept.older(found)]:
                self._remove(image)

    def drop_local(self, task_id: str, index: int) -> None:
        """A Ray node's piece of the rollout is over: the images it made or rebuilt go (the archives on the
        driver keep the checkpoint, for whichever node continues it)."""
        for image in self.here.pop((task_id, index), set()):
            self._remove(image)

    def _remove(self, image: str) -> None:
        try:
            self.remove_image(image)
        except SandboxError:
            pass  # the engine is away: `harness cleanup` removes it later


def checkpoint_dir(files: Path | Files, run_id: str, sandboxes: SandboxProvider,
                   travel: bool = False) -> CheckpointDir:
    """A run's checkpoints with its provider's way to remove a kept sandbox and, where they `travel` (Ray), to
    rebuild one from its archives."""
    return CheckpointDir(files, run_id, sandboxes.remove_image, sandboxes.import_checkpoint if travel else None)
