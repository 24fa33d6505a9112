"""A run's rollout checkpoints: `<run>/checkpoints/<task>__<index>.json` beside the sandbox's file system kept by
its provider (Docker: an image `optrunner/checkpoint:<tag>`), so an interrupted rollout continues where its
last checkpoint left it (scaffolds/checkpoint.py says what a checkpoint holds).

Every answered call is also appended to `<task>__<index>.calls.jsonl` (its step and usage), so when a rollout
continues, the calls made after its checkpoint, whose work was lost with the kill, are still counted as spent
(`take_lost`): the record's cost is what the provider was paid.

A checkpoint is written after its image exists (atomically: a kill leaves the previous one whole), and the
previous image is removed once the new file names the new one. The driver removes both when the rollout's
record is stored; `harness cleanup` removes checkpoint images nothing names any more.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.atomic import write_json, write_text
from harness.models.records import CallRecord, Usage
from harness.sandbox.interface import Checkpointable, Sandbox, SandboxError
from scaffolds.checkpoint import FORMAT, Checkpoints, EpisodeState

IMAGE = "optrunner/checkpoint"
FILE_LABEL = "optrunner.checkpoint.file"  # (harness.sandbox.docker.containers reads it)


class CheckpointDir:
    def __init__(self, root: Path, run_id: str, remove_image: Callable[[str], None]) -> None:
        self.root, self.run_id, self.remove_image = Path(root), run_id, remove_image

    def path(self, task_id: str, index: int) -> Path:
        return self.root / f"{task_id}__{index}.json"

    def journal_path(self, task_id: str, index: int) -> Path:
        return self.root / f"{task_id}__{index}.calls.jsonl"

    def journal(self, task_id: str, index: int) -> Callable[[int, CallRecord], None]:
        """What the Recorder calls with each answered call: one line appended (and flushed) per call."""
        path = self.journal_path(task_id, index)

        def spent(step: int, record: CallRecord) -> None:
            self.root.mkdir(parents=True, exist_ok=True)
            with path.open("a") as out:
                out.write(json.dumps({"step": step, "call": record.to_dict()}) + "\n")

        return spent

    def take_lost(self, task_id: str, index: int, found: dict[str, Any] | None, count: bool = True) -> Usage:
        """The calls answered after the checkpoint `found` (None: all of them, the rollout starts again), whose
        work was lost, taken out of the journal so the new piece's calls take their places; their usage is
        returned and, when `count` and there is a checkpoint, added to its state's `details.lost_calls` (written
        back at once: a second kill does not forget them)."""
        done = len(found["state"]["steps"]) if found is not None else 0
        path = self.journal_path(task_id, index)
        lost, kept = Usage(), []
        try:
            lines = path.read_text().splitlines()
        except OSError:
            lines = []
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
            write_json(self.path(task_id, index), found)
        if lines:
            write_text(path, "".join(f"{line}\n" for line in kept))
        return lost

    def load(self, task_id: str, index: int) -> dict[str, Any] | None:
        """The rollout's last checkpoint ({image, state, written_at}), or None (none, unreadable, another format:
        the rollout starts again)."""
        try:
            data = json.loads(self.path(task_id, index).read_text())
        except (OSError, ValueError):
            return None
        ok = isinstance(data, dict) and isinstance(data.get("state"), dict) and data["state"].get("format") == FORMAT
        return data if ok and isinstance(data.get("image"), str) else None

    def saver(self, task_id: str, index: int, sandbox: Sandbox,
              started_from: str | None = None) -> Callable[[EpisodeState], None]:
        """What the Recorder calls with each new state: the sandbox kept, then the file, then the old image gone
        (but the one the sandbox started from, which it still runs on: removed with the rollout's record)."""
        if not isinstance(sandbox, Checkpointable):
            raise SandboxError("this sandbox provider cannot keep a sandbox's files (Checkpointable)")
        key = hashlib.sha1(f"{self.run_id}/{task_id}/{index}".encode()).hexdigest()[:16]

        def save(state: EpisodeState) -> None:
            before = self.load(task_id, index)
            # the file that will name it, so `harness cleanup` can tell a forgotten image from a kept one
            image = sandbox.checkpoint(f"{IMAGE}:{key}-{len(state.steps)}",
                                       {FILE_LABEL: str(self.path(task_id, index).resolve())})
            self.root.mkdir(parents=True, exist_ok=True)
            older = list(before.get("older") or []) if before is not None else []
            if before is not None and before["image"] == started_from and started_from not in older:
                older.append(started_from)
            write_json(self.path(task_id, index), {"image": image, "written_at": time.time(), "older": older,
                                                   "state": state.to_dict()})
            if before is not None and before["image"] not in (image, started_from):
                self._remove(before["image"])

        return save

    def resume_point(self, task_id: str, index: int, attempt: int, image_id: Callable[[str], str | None]
                     ) -> tuple[str, EpisodeState, Usage] | Usage:
        """The rollout's last checkpoint whose image is still there: its image, its state, and what the pieces
        before used (its usage and the calls lost with the kill). Without one, the usage of the calls answered
        before a kill (all lost: it starts from step 0)."""
        found = self.load(task_id, index)
        if found is not None and image_id(found["image"]) is None:
            found = None
        # calls answered after the checkpoint: their work is lost with the kill, what they cost is not (an
        # infrastructure retry's were counted when its attempt was discarded)
        lost = self.take_lost(task_id, index, found, count=attempt == 0)
        if found is None:
            return lost if attempt == 0 else Usage()
        state = EpisodeState.from_dict(found["state"])
        carried = Usage.total([state.used(), *(Usage(**u) for u in state.details.get("lost_calls", []))])
        return found["image"], state, carried

    def arguments(self, task_id: str, index: int, sandbox: Sandbox, every: int,
                  resume: EpisodeState | None, started_from: str | None = None) -> Checkpoints | None:
        """A scaffold run's checkpointing: where to save and journal (where the sandbox can be kept), what to
        continue; None when it neither keeps nor continues any."""
        if not every and resume is None:
            return None
        if resume is not None:
            done = len(resume.steps)
            resume.details.setdefault("pieces", [{"from_step": 0}]).append({"from_step": done,
                                                                              "started_at": time.time()})
            resume.details["resumed_from"] = done
        if every and not isinstance(sandbox, Checkpointable):  # (bwrap keeps none yet): it runs, saying so
            if resume is not None:
                resume.details["checkpoints"] = "this sandbox provider cannot keep a sandbox's files"
            return Checkpoints(resume=resume)
        if not every:
            return Checkpoints(resume=resume)
        return Checkpoints(every=every, save=self.saver(task_id, index, sandbox, started_from), resume=resume,
                           spent=self.journal(task_id, index))

    def discard(self, task_id: str, index: int) -> None:
        """The rollout is recorded: its checkpoint is no longer needed."""
        found = self.load(task_id, index)
        self.path(task_id, index).unlink(missing_ok=True)
        self.journal_path(task_id, index).unlink(missing_ok=True)
        if found is not None:
            for image in [found["image"], *(found.get("older") or [])]:
                self._remove(image)

    def _remove(self, image: str) -> None:
        try:
            self.remove_image(image)
        except SandboxError:
            pass  # the engine is away: `harness cleanup` removes it later


def checkpoint_dir(root: Path, run_id: str, sandboxes: object) -> CheckpointDir:
    """A run's checkpoints with its provider's way to remove a kept sandbox (none: nothing to remove)."""
    return CheckpointDir(root, run_id, getattr(sandboxes, "remove_image", lambda _name: None))
