"""The step recorder every scaffold loop uses, and the one path by which an episode ends.

`Recorder` does the bookkeeping all loops need, so each scaffold module is only its action interface:
it checks limits before every model call, turns model errors into exit reasons, timestamps every step
(call record, actions, observations with their full size) and snapshots the workspace diff every
`snapshot_every` steps, so a study can grade the rollout as it stood at step S. `Recorder.run` runs a
scaffold's loop and always returns an Episode with the trajectory so far.

With `Checkpoints` (scaffolds/checkpoint.py), every `every` steps, just before a model call, the Recorder hands
the episode's state (the scaffold's own, from `state_of`, and every step so far) to `save`; `restore` continues
from such a state: its steps, usage and wall time count toward the limits as if the episode had never stopped.

The step limit's unit is the scaffold's: model calls (mini-swe-agent, terminus), or, with
`count_actions`, agent actions as OpenHands counts iterations: every executed action is one, and so is a
reply without any; the scaffold calls `before_action` before each further action of a reply, so a reply
with three tool calls uses three iterations and the limits are checked before each.
"""
from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.models.errors import ModelError
from harness.models.model import Model
from harness.models.records import CallRecord, ModelReply, Usage
from harness.sandbox.interface import Sandbox, SandboxError, SandboxKilledFromInside
from scaffolds.checkpoint import Checkpoints, EpisodeState, step_to_dict
from scaffolds.episode import EpisodeEnd, Episode, LimitReached, Observation, Step, Submitted
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits


class Recorder:
    """Per-episode bookkeeping shared by all scaffolds."""

    def __init__(self, scaffold: str, sandbox: Sandbox, model: Model, limits: Limits,
                 stop: threading.Event | None = None, count_actions: bool = False,
                 checkpoints: Checkpoints | None = None) -> None:
        self.scaffold, self.sandbox, self.model, self.limits = scaffold, sandbox, model, limits
        self.checkpoints = checkpoints or Checkpoints()
        # the scaffold's state for checkpoints; None from it: not now (it is between consistent points)
        self.state_of: Callable[[], dict[str, Any] | None] | None = None
        self._saved_at = 0  # the step count at the last checkpoint (or the one continued from)
        self._saving: threading.Thread | None = None  # the periodic checkpoint being kept
        self._boundary = threading.Lock()  # held while a checkpoint is taken at a call from another thread
        self._in_call = False  # waiting on the model: the state is the one just before this call
        self.checkpoints.now = self.checkpoint_now
        self.stop = stop or threading.Event()
        self.count_actions = count_actions
        self.details: dict[str, Any] = {}  # scaffold-specific facts for the episode (mode, condensations, ...)
        self.started = time.time()
        self.usage = Usage()
        # An answer that comes once the episode is over (an installed agent's call, served by the gateway
        # while the agent was being stopped) is not the episode's, but it is paid: `late` (the episode's
        # late_calls) keeps it for the runner, which waits for it (Model.settle) and adds it to the record.
        self._counting = threading.Lock()
        self._over = False
        self.late: list[CallRecord] = []
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

    @property
    def actions(self) -> int:
        return sum(len(step.actions) for step in self.steps)

    @property
    def used_steps(self) -> int:
        """Steps used in the limit's unit: model calls, or iterations (an action each; a reply without one)."""
        if not self.count_actions:
            return len(self.steps)
        return sum(max(1, len(step.actions)) for step in self.steps)

    def check_limits(self) -> None:
        lim = self.limits
        if self.stop.is_set():
            raise LimitReached("stopped from outside", ExitReason.INTERRUPTED)
        if lim.max_steps is not None and self.used_steps >= lim.max_steps:
            what = "iteration limit" if self.count_actions else "step limit"  # iterations: agent actions
            raise LimitReached(f"{what} of {lim.max_steps} reached", ExitReason.STEP_LIMIT)
        if lim.max_cost_usd is not None and self.usage.cost_usd >= lim.max_cost_usd:
            raise LimitReached(f"cost limit of ${lim.max_cost_usd:g} reached", ExitReason.COST_LIMIT)
        if lim.wall_clock_s is not None and self.elapsed >= lim.wall_clock_s:
            raise LimitReached(f"wall-clock limit of {lim.wall_clock_s:g} s reached", ExitReason.TIME_LIMIT)

    def query(self, messages: list[dict[str, Any]], tools: list[dict] | None = None,
              stop: list[str] | None = None) -> ModelReply:
        """One step's model call: a checkpoint when due (kept while the model answers), limits, then the call,
        then a new step record."""
        self._close_step()
        saving = self._checkpoint()
        try:
            self.check_limits()
            step = Step(index=len(self.steps), started_at=time.time())
            self.steps.append(step)
            self._in_call = True
            try:
                reply = self.model.query(messages, tools=tools, stop=stop, account=self._count)
            except ModelError as exc:
                reason = {"context_window": ExitReason.CONTEXT_WINDOW,
                          "transient": ExitReason.PROVIDER_ERROR}.get(exc.kind, ExitReason.MODEL_ERROR)
                raise EpisodeEnd(str(exc), reason) from exc
            finally:
                with self._boundary:  # a checkpoint taken at this call (a stop signal) ends before anything runs
                    self._in_call = False
        finally:
            if saving is not None:  # no action runs before the sandbox is kept; what that waits is its cost
                waited = time.perf_counter()
                saving.join()
                self.details.setdefault("checkpoint_wait_s", []).append(round(time.perf_counter() - waited, 4))
        step.call = reply.record
        if self.checkpoints.spent is not None:
            self.checkpoints.spent(step.index, reply.record)
        return reply

    def _count(self, record: CallRecord) -> None:
        with self._counting:
            if self._over:
                self.late.append(record)
            else:
                self.usage.add(record)

    def before_action(self) -> None:
        """Limits again before a further action of the current reply (the first was checked before the call)."""
        if self.count_actions and self.steps and self.steps[-1].actions:
            self.check_limits()

    def act(self, action: dict[str, Any], observation: Observation, step: int | None = None) -> None:
        """Record one action and what the model was shown for it: of the current step, or of step number `step`
        (an installed agent's result can come back after a side call made another step)."""
        if not self.steps:
            self.steps.append(Step(index=0, started_at=time.time()))
        at = self.steps[-1] if step is None else self.steps[step]
        at.actions.append(action)
        at.observations.append(observation)

    def _close_step(self) -> None:
        if not self.steps or self.steps[-1].ended_at is not None:
            return
        step = self.steps[-1]
        step.ended_at = time.time()
        every = self.limits.snapshot_every
        if every and (step.index + 1) % every == 0:
            step.diff_snapshot = self._diff()

    def _checkpoint(self) -> threading.Thread | None:
        """When one is due, the episode's state now, handed to `save` on a thread of its own: the sandbox is kept
        while the model answers (nothing runs in it then), so a checkpoint costs a step little beyond the call.
        A checkpoint that fails is noted in the details; the episode goes on."""
        every, save = self.checkpoints.every, self.checkpoints.save
        done = len(self.steps)
        if not every or save is None or self.state_of is None or done - self._saved_at < every:
            return None
        state = self.state_of()
        if state is None:  # the scaffold is between consistent points (a hand-off): at its next call
            return None
        snapshot = self._snapshot(state, self.steps)
        self._saved_at = done

        def save_checkpoint() -> None:
            try:
                save(snapshot)
            except Exception as exc:  # noqa: BLE001 - a lost checkpoint must not end the episode
                self.details.setdefault("checkpoint_errors", []).append(f"step {done}: {type(exc).__name__}: {exc}")

        thread = threading.Thread(target=save_checkpoint, name="checkpoint", daemon=True)
        thread.start()
        self._saving = thread
        return thread

    def _snapshot(self, state: dict[str, Any], steps: list[Step]) -> EpisodeState:
        """The episode as a checkpoint keeps it: copies, so the loop going on changes nothing kept."""
        return EpisodeState(scaffold=self.scaffold, state=copy.deepcopy(state), steps=[step_to_dict(s) for s in steps],
                            usage=self.usage.to_dict(), elapsed_s=self.elapsed, details=copy.deepcopy(self.details))

    def checkpoint_now(self) -> bool:
        """From another thread (the runner, on a stop signal): while the episode waits on a model call, keep
        the state just before that call, so the work since the last periodic checkpoint is not lost; the reply,
        if it comes meanwhile, waits. False when the episode is not in a call (an action is running: its state
        is not consistent) or keeps no checkpoints."""
        save = self.checkpoints.save
        with self._boundary:
            if not self._in_call or save is None or self.state_of is None:
                return False
            done = len(self.steps) - 1  # the step of this call is not done
            if done <= self._saved_at:  # kept at this very call already (maybe still being kept)
                if self._saving is not None:
                    self._saving.join()
                return done == self._saved_at
            state = self.state_of()
            if state is None:
                return False
            save(self._snapshot(state, self.steps[:-1]))
            self._saved_at = done
            return True

    def restore(self, state: EpisodeState) -> None:
        """Continue from a checkpoint: its steps, usage and wall time are this episode's; the model's call
        index goes on from there (a scripted model answers the next call as it would have)."""
        if state.scaffold != self.scaffold:
            raise ValueError(f"a checkpoint of {state.scaffold} cannot continue a {self.scaffold} episode")
        self.steps = state.step_records()
        self.usage = state.used()
        self.started = time.time() - state.elapsed_s
        self.details.update(copy.deepcopy(state.details))
        self.model.calls = len(self.steps)  # (its usage stays this piece's: the runner adds what came before)
        self._saved_at = len(self.steps)

    def _diff(self) -> str | None:
        try:
            return self.sandbox.diff()
        except SandboxError:  # a dead container must not hide why the episode ended
            return None

    def run(self, loop: Callable[[], None], messages: Callable[[], list[dict[str, Any]]],
            close: Callable[[], None] = lambda: None) -> Episode:
        """The one way an episode ends, for every scaffold: run `loop` until it raises, close the
        scaffold's resources, and return the Episode with its trajectory, whatever ended it. A sandbox
        failure ends it as `infra_error` (the runner retries it), a sandbox its own processes ended as
        `sandbox_killed` (the agent's outcome, not retried), anything unexpected as `error`."""
        try:
            loop()
            end = EpisodeEnd("the loop ended without a reason")
        except EpisodeEnd as exc:
            end = exc
        except SandboxKilledFromInside as exc:
            end = EpisodeEnd(f"sandbox: {exc}", ExitReason.SANDBOX_KILLED)
        except SandboxError as exc:
            end = EpisodeEnd(f"sandbox: {exc}", ExitReason.INFRA_ERROR)
        except Exception as exc:  # noqa: BLE001 - a crash ends this episode with its reason, not the run
            end = EpisodeEnd(f"{type(exc).__name__}: {exc}", ExitReason.ERROR)
        finally:
            try:
                close()
            except SandboxError:
                pass  # the container is gone already; what ended the episode is what matters
        return self.finish(end, messages(), end.submission if isinstance(end, Submitted) else "")

    def finish(self, end: EpisodeEnd, messages: list[dict[str, Any]] | None = None,
               submission: str = "") -> Episode:
        self._close_step()
        with self._counting:  # from here, an answer is a late one
            self._over = True
            usage = copy.copy(self.usage)
        return Episode(scaffold=self.scaffold, exit_reason=end.reason, exit_message=end.message,
                       steps=len(self.steps), actions=self.actions, wall_time_s=self.elapsed, usage=usage,
                       messages=list(messages if messages is not None else self.messages),
                       step_records=self.steps, submission=submission, details=dict(self.details),
                       late_calls=self.late)
