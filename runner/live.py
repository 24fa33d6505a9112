"""A running rollout as the driver sees it (`Live`), and what it keeps of the attempts it discards.

An attempt is discarded when infrastructure failed under it (the sandbox's engine, the model provider) and
the rollout is tried again in a fresh sandbox. Nothing of it is lost: what it spent stays with the rollout
(`spent`: the run's cost cap counts it at once, the record's usage is the sum of every attempt's) and so does
its trajectory, where it got one (`discarded`, stored beside the rollout's own as `<i>.attempt<n>.json`).
"""
from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness.models.model import Model
from harness.models.records import Usage
from harness.sandbox.interface import Sandbox, close_quietly
from scaffolds.checkpoint import Checkpoints
from scaffolds.exits import ExitReason


@dataclass
class Live:
    """What the progress display and the cost cap see of a running rollout."""
    task_id: str
    index: int
    started_at: float = field(default_factory=time.time)
    attempt: int = 0  # this process's attempt (0: the first it runs), whatever came before a resume
    model: Model | None = None
    sandbox: Sandbox | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: ExitReason | None = None  # why the runner stopped it: interrupted, time or run cost limit
    spent: list[Usage] = field(default_factory=list)  # what the discarded attempts before this one used
    carried: Usage = field(default_factory=Usage)  # what the pieces before a checkpoint it continues used
    checkpoints: Checkpoints | None = None  # its episode's checkpointing, when it keeps checkpoints
    episode: dict[str, Any] | None = None  # the current attempt's trajectory, once its scaffold returned
    discarded: dict[int, dict[str, Any]] = field(default_factory=dict)  # attempt number -> its trajectory

    @property
    def steps(self) -> int:
        return self.model.calls if self.model else 0

    @property
    def cost(self) -> float:
        return (sum(u.cost_usd for u in self.spent) + self.carried.cost_usd
                + (self.model.usage.cost_usd if self.model else 0.0))

    def request_stop(self, reason: ExitReason) -> None:
        """Ask the rollout to end (from another thread or a signal handler). An interrupt also closes its
        sandbox at once, which ends the command in flight instead of waiting for its timeout."""
        if reason == ExitReason.INTERRUPTED or self.stop_reason is None:
            self.stop_reason = reason
        keep = self.checkpoints.now if self.checkpoints is not None else None
        if reason == ExitReason.INTERRUPTED and keep is not None:  # waiting on the model: keep the work so far
            try:
                keep()
            except Exception:  # noqa: BLE001 - the last periodic checkpoint is still there
                pass
        self.stop.set()
        box = self.sandbox
        if reason == ExitReason.INTERRUPTED and box is not None:
            threading.Thread(target=close_quietly, args=(box,), daemon=True).start()

    def snapshot(self) -> dict[str, Any]:
        """What the driver shows of a rollout running elsewhere (plain values)."""
        return {"task_id": self.task_id, "index": self.index, "started_at": self.started_at,
                "attempt": self.attempt, "steps": self.steps, "cost": self.cost}

    def discard_attempt(self, number: int) -> None:
        """The current attempt (`number`, counted across resumes from 1) is being retried: keep what it spent
        and its trajectory."""
        if self.model is not None:
            self.spent.append(copy.deepcopy(self.model.usage))
            self.model = None
        if self.episode is not None:
            self.discarded[number] = self.episode
            self.episode = None
