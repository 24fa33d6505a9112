"""An episode's state at a step boundary, so a long rollout that is interrupted continues from there instead of
starting again (issue 35).

A checkpoint is taken just before a model call, every `budget.checkpoint_every` steps: what the scaffold holds
then is exactly what the model would be sent next (the conversation and the scaffold's counters), what the
Recorder holds is every step so far (call records, actions, observations), the usage and cost and the wall
time used. Together with the sandbox's file system, kept by its provider (`Checkpointable`: Docker commits the
container to an image), that is enough to continue the episode in a fresh sandbox with the same result as if
it had never stopped, for a model that answers the same conversation the same way (the scripted models do).

What cannot be kept: processes running in the sandbox (a server the agent started, a command in flight)
and anything in memory outside the scaffold's state. The runner says so in the record (`details.pieces`).

`EpisodeState` is plain JSON (a Ray node may continue another node's checkpoint); `Checkpoints` is what a
scaffold's run is given: the state to continue from, if any, and where to hand new states.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.models.records import CallRecord, Usage
from scaffolds.episode import Observation, Step

FORMAT = 1  # the version of the state's JSON; a checkpoint of another version is not continued


@dataclass
class EpisodeState:
    scaffold: str  # the scaffold that wrote it (only that scaffold continues it)
    state: dict[str, Any]  # the scaffold's own: the conversation as the model sees it next, its counters
    steps: list[dict[str, Any]]  # the step records so far (Step as plain values)
    usage: dict[str, Any]  # Usage so far
    elapsed_s: float  # wall time used so far, every piece's
    details: dict[str, Any] = field(default_factory=dict)  # the Recorder's details so far
    format: int = FORMAT

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EpisodeState":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def step_records(self) -> list[Step]:
        return [step_from_dict(s) for s in self.steps]

    def used(self) -> Usage:
        return Usage(**self.usage)


def step_to_dict(step: Step) -> dict[str, Any]:
    return dataclasses.asdict(step)


def step_from_dict(data: dict[str, Any]) -> Step:
    call = data.get("call")
    return Step(index=data["index"], started_at=data["started_at"],
                call=CallRecord(**call) if isinstance(call, dict) else None,
                actions=list(data.get("actions") or []),
                observations=[Observation(**o) for o in data.get("observations") or []],
                ended_at=data.get("ended_at"), diff_snapshot=data.get("diff_snapshot"))


@dataclass
class Checkpoints:
    """A scaffold run's checkpointing: `every` steps (0: never) the Recorder hands `save` the episode's state;
    `resume` is the state to continue from (None: a fresh episode); `spent` hears of every call as soon as it is
    answered (its step index and record), so what calls after the last checkpoint cost is known after a kill."""
    every: int = 0
    save: Callable[[EpisodeState], None] | None = None
    resume: EpisodeState | None = None
    spent: Callable[[int, CallRecord], None] | None = None
    # set by the episode's Recorder: keep a checkpoint now if the episode waits on a model call (a stop signal
    # came); True when one is kept
    now: Callable[[], bool] | None = None
