"""What every scaffold returns and how its loop ends: the episode record and the exceptions that end it.

A scaffold runs one task in one sandbox with one model and returns an `Episode`. Its loop ends by
raising an `EpisodeEnd` carrying the reason (mini-swe-agent style): the exception is the message that
ends the loop. The step bookkeeping and the one end path live in `recorder.py`.
"""
from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from harness.models.records import CallRecord, Usage
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits

if TYPE_CHECKING:
    from harness.models.model import Model
    from harness.sandbox.interface import Sandbox
    from harness.tasks.task import Task


class EpisodeEnd(Exception):
    """Raised to end the loop; `reason` is an ExitReason."""

    reason = ExitReason.ERROR

    def __init__(self, message: str = "", reason: ExitReason | None = None) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = ExitReason(reason)


class Submitted(EpisodeEnd):
    """The agent finished; `submission` is what it handed in (by default the message itself)."""
    reason = ExitReason.SUBMITTED

    def __init__(self, message: str = "", submission: str | None = None) -> None:
        super().__init__(message)
        self.submission = message if submission is None else submission


class LimitReached(EpisodeEnd):
    pass  # reason set per limit


class Stuck(EpisodeEnd):
    reason = ExitReason.STUCK


class FormatErrors(EpisodeEnd):
    reason = ExitReason.FORMAT_ERRORS


@dataclass
class Observation:
    text: str  # what the model was shown
    full_chars: int  # size before truncation
    exit_code: int | None = None
    duration_s: float = 0.0


@dataclass
class Step:
    index: int
    started_at: float
    call: CallRecord | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    ended_at: float | None = None
    diff_snapshot: str | None = None


@dataclass
class Episode:
    scaffold: str
    exit_reason: ExitReason
    exit_message: str
    steps: int  # model calls
    wall_time_s: float
    usage: Usage
    messages: list[dict[str, Any]]  # the conversation: the trajectory as the model saw it
    step_records: list[Step]
    submission: str = ""
    actions: int = 0  # actions executed (tool calls, commands, keystroke batches)
    # Scaffold-specific facts a study may group by: codeact's resolved mode and condensations, mini_swe's
    # patch source, ...
    details: dict[str, Any] = field(default_factory=dict)
    patch: str | None = None  # the submitted patch when the scaffold's rule says so; None: the container's diff
    # Calls answered after the episode ended (filled until the runner has waited for them): paid, not its steps.
    late_calls: list[CallRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Scaffold(Protocol):
    name: str

    def run(self, task: "Task", sandbox: "Sandbox", model: "Model", limits: Limits,
            stop: threading.Event | None = None) -> Episode: ...
