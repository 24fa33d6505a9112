"""What every scaffold shares: the protocol, limits, the episode record and the step recorder.

A scaffold runs one task in one sandbox with one model and returns an `Episode`. Its loop ends by
raising an `EpisodeEnd` carrying the reason (mini-swe-agent style): the exception is the message that
ends the loop. `Recorder` does the bookkeeping all loops need, so each scaffold module is only its
action interface: it checks limits before every model call, turns model errors into exit reasons,
timestamps every step (call record, actions, observations with their full size) and snapshots the
workspace diff every `snapshot_every` steps, so a study can grade the rollout as it stood at step S.
"""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import jinja2

from harness.sandbox import Sandbox
from harness.tasks import Task
from scaffolds.model import CallRecord, Model, ModelError, ModelReply, Usage

EXIT_REASONS = ("submitted", "step_limit", "cost_limit", "time_limit", "stuck", "format_errors",
                "context_window", "model_error", "provider_error", "interrupted", "error")
# provider_error: the provider kept failing after retries (an outage); the runner retries such rollouts.


@dataclass(frozen=True)
class Limits:
    max_steps: int | None = 100  # model calls
    max_cost_usd: float | None = None
    wall_clock_s: float | None = None
    command_timeout_s: float = 1200.0  # hard cap on one action (GSO: 20 min)
    snapshot_every: int = 10  # steps between diff snapshots; 0 = never


class EpisodeEnd(Exception):
    """Raised to end the loop; `reason` is one of EXIT_REASONS."""

    reason = "error"

    def __init__(self, message: str = "", reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason


class Submitted(EpisodeEnd):
    reason = "submitted"


class LimitReached(EpisodeEnd):
    pass  # reason set per limit


class Stuck(EpisodeEnd):
    reason = "stuck"


class FormatErrors(EpisodeEnd):
    reason = "format_errors"


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
    exit_reason: str
    exit_message: str
    steps: int
    wall_time_s: float
    usage: Usage
    messages: list[dict[str, Any]]  # the conversation: the trajectory as the model saw it
    step_records: list[Step]
    submission: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Scaffold(Protocol):
    name: str

    def run(self, task: Task, sandbox: Sandbox, model: Model, limits: Limits,
            stop: threading.Event | None = None) -> Episode: ...


class Recorder:
    """Per-episode bookkeeping shared by all scaffolds."""

    def __init__(self, scaffold: str, sandbox: Sandbox, model: Model, limits: Limits,
                 stop: threading.Event | None = None) -> None:
        self.scaffold, self.sandbox, self.model, self.limits = scaffold, sandbox, model, limits
        self.stop = stop or threading.Event()
        self.started = time.time()
        self.usage = Usage()
        self.steps: list[Step] = []
        self.messages: list[dict[str, Any]] = []

    @property
    def elapsed(self) -> float:
        return time.time() - self.started

    def time_left(self) -> float | None:
        return None if self.limits.wall_clock_s is None else self.limits.wall_clock_s - self.elapsed

    def action_timeout(self) -> float:
        """The per-action cap, shortened so an action never outlives the episode's wall clock."""
        left = self.time_left()
        cap = self.limits.command_timeout_s
        return cap if left is None else max(1.0, min(cap, left))

    def check_limits(self) -> None:
        lim = self.limits
        if self.stop.is_set():
            raise LimitReached("stopped from outside", "interrupted")
        if lim.max_steps is not None and len(self.steps) >= lim.max_steps:
            raise LimitReached(f"step limit of {lim.max_steps} reached", "step_limit")
        if lim.max_cost_usd is not None and self.usage.cost_usd >= lim.max_cost_usd:
            raise LimitReached(f"cost limit of ${lim.max_cost_usd:g} reached", "cost_limit")
        if lim.wall_clock_s is not None and self.elapsed >= lim.wall_clock_s:
            raise LimitReached(f"wall-clock limit of {lim.wall_clock_s:g} s reached", "time_limit")

    def query(self, messages: list[dict[str, Any]], tools: list[dict] | None = None,
              stop: list[str] | None = None) -> ModelReply:
        """One step's model call: limits first, then the call, then a new step record."""
        self._close_step()
        self.check_limits()
        step = Step(index=len(self.steps), started_at=time.time())
        self.steps.append(step)
        try:
            reply = self.model.query(messages, tools=tools, stop=stop)
        except ModelError as exc:
            reason = {"context_window": "context_window", "transient": "provider_error"}.get(exc.kind, "model_error")
            raise EpisodeEnd(str(exc), reason) from exc
        step.call = reply.record
        self.usage.add(reply.record)
        return reply

    def act(self, action: dict[str, Any], observation: Observation) -> None:
        """Record one action of the current step and what the model was shown for it."""
        if not self.steps:
            self.steps.append(Step(index=0, started_at=time.time()))
        self.steps[-1].actions.append(action)
        self.steps[-1].observations.append(observation)

    def _close_step(self) -> None:
        if not self.steps or self.steps[-1].ended_at is not None:
            return
        step = self.steps[-1]
        step.ended_at = time.time()
        every = self.limits.snapshot_every
        if every and (step.index + 1) % every == 0:
            step.diff_snapshot = self._diff()

    def _diff(self) -> str | None:
        try:
            return self.sandbox.diff()
        except Exception:  # a dead container must not hide why the episode ended
            return None

    def finish(self, end: EpisodeEnd, messages: list[dict[str, Any]] | None = None,
               submission: str = "") -> Episode:
        self._close_step()
        return Episode(scaffold=self.scaffold, exit_reason=end.reason, exit_message=end.message,
                       steps=len(self.steps), wall_time_s=self.elapsed, usage=self.usage,
                       messages=list(messages if messages is not None else self.messages),
                       step_records=self.steps, submission=submission)


# ---------------------------------------------------------------- prompts
def truncate_middle(text: str, limit: int, note: str = "[... {n} characters cut ...]") -> str:
    """Keep the head and the tail; the cut is in the middle, where output matters least."""
    if len(text) <= limit:
        return text
    marker = note.format(n=len(text) - limit)
    head = limit // 2
    return text[:head] + "\n" + marker + "\n" + text[len(text) - (limit - head):]


def task_vars(task: Task, workdir: str = "/testbed") -> dict[str, Any]:
    """What a task prompt may use. The expert patch and the hidden tests are never among them."""
    return {"workdir": workdir, "repo": task.repo, "api": task.api, "prob_script": task.prob_script.rstrip(),
            "install_commands": list(task.install_commands), "description": task.description or "",
            "languages": list(task.languages)}


@lru_cache(maxsize=None)
def _templates(folder: str) -> jinja2.Environment:
    """One environment per prompt folder: templates are parsed once, not at every step."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True)


def render_template(folder: Path, name: str, **variables: Any) -> str:
    return _templates(str(folder)).get_template(name).render(**variables).strip()
