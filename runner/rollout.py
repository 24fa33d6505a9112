"""One rollout: a fresh sandbox from the task image, the scaffold's loop with the model, under limits
enforced from outside, and the diff collected whatever happened.

The scaffold checks its limits between steps; the runner does not trust that alone. The loop runs in a
worker thread, and if it has not returned by the wall-clock limit (plus a short grace for the step in
flight), the runner stops it, takes the diff from the still-running sandbox and records `time_limit`.
Infrastructure failures (the sandbox, a provider outage after retries) are retried with a fresh
sandbox up to `infra_retries` times, and to `rollout_attempts` attempts in all across resumes (the record's
`attempts` counts them), and reported apart from agent failures. A sandbox its own processes ended
(`SandboxKilledFromInside`: the agent killed its keep-alive) is the agent's outcome, `sandbox_killed`, and
never retried: else an agent could trade a bad attempt for a fresh one. What a discarded attempt spent stays
with the rollout: its usage is the sum of every attempt's (each kept in `attempt_usage`), the run's cost cap
counts it from the moment it was spent, and its trajectory is kept (`attempt_trajectories`).
"""
from __future__ import annotations

import copy
import dataclasses
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import gpus
from harness.models.model import Model
from harness.models.redaction import redact
from harness.models.records import Usage
from harness.models.scripted import Script, is_scripted
from harness.serving.kit import kit_files
from harness.sandbox.interface import Sandbox, SandboxError, close_quietly, pin_if_possible
from harness.sandbox.providers import SandboxProvider, WaitsReady
from harness.tasks.task import Task
from runner import late_calls
from runner.attempt import Interrupted, collect, conclude, drive
from runner.checkpoints import CheckpointDir, checkpoint_dir
from runner.config import ConfigError, RunConf
from harness.grader.config import patch_sha256
from runner.live import Live
from runner.records import RolloutRecord, System
from runner.store import RunStore, attempt_trajectory_ref, trajectory_ref
from scaffolds import make_scaffold
from scaffolds.checkpoint import EpisodeState
from scaffolds.episode import Episode
from scaffolds.exits import RETRIED, ExitReason

ENGINE_WAIT_S = 120.0  # how long an infra retry waits for the sandbox engine to answer again
RUN_LABEL = "optrunner.run"


def _close_and_release(sandbox: Sandbox, given: tuple[gpus.Gpu, ...]) -> None:
    """Remove the sandbox, then give its GPUs back (the next rollout must not share them with it)."""
    try:
        close_quietly(sandbox)
    finally:
        gpus.machine_pool().release(given)


def script_for(conf: RunConf, task: Task, index: int, store_of_replayed: RunStore | None) -> Script | None:
    """The plain values a scripted model plays from in this rollout (None for real models)."""
    mc = conf.model
    if not is_scripted(mc.name):
        return None
    if mc.name.endswith("/replay"):
        trajectory = store_of_replayed.trajectory_of(task.id, index) if store_of_replayed else None
        if trajectory is None or "messages" not in trajectory:
            raise ConfigError(f"replay: no trajectory for {task.id} rollout {index} in {mc.run_dir}")
        return Script(trajectory=trajectory["messages"])
    patch = (task.path / mc.patch).read_text() if mc.patch and task.path else task.expert_patch
    if mc.note:  # the same code in other bytes: distinct patches to grade (grading-session studies)
        patch = patch.rstrip("\n") + "\n" + rollout_note(index)
    solution = () if mc.patch else tuple((name, data.decode("utf-8", errors="replace"))
                                         for name, data, _mode in task.solution_files)
    return Script(patch=patch, install_commands=task.install_commands, spec_script=task.prob_script,
                  steps=list(mc.steps or []), solution=solution, workdir=task.workdir or ".")


def rollout_note(index: int) -> str:
    """A diff adding a file the code never reads, naming the rollout."""
    return (f"diff --git a/ROLLOUT_NOTE.md b/ROLLOUT_NOTE.md\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/ROLLOUT_NOTE.md\n@@ -0,0 +1 @@\n+rollout {index}\n")


@dataclass
class RolloutJob:
    """Everything a worker needs to run one rollout, on this machine or another (plain, picklable): the
    driver reads what lives in its files (a replayed trajectory) before the job leaves."""
    task: Task
    index: int
    image: str  # the agent's image
    script: Script | None = None  # scripted models: what the model plays
    # a resumed infrastructure failure: its attempts so far (each one's spend, errors and trajectory kept)
    spent_before: list[Usage] = field(default_factory=list)
    attempts_before: int = 0
    errors_before: list[str] = field(default_factory=list)
    trajectories_before: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, int]:
        return self.task.id, self.index


@dataclass
class RolloutResult:
    """What a rollout hands back to the driver, which writes it to the run store."""
    record: RolloutRecord
    trajectory: dict[str, Any] | None
    grading: dict[str, Any] | None = None  # grading.in_place: the report made in the agent's container
    attempts: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # discarded attempts' trajectories by ref


def make_job(conf: RunConf, task: Task, index: int, image: str, retried: RolloutRecord | None = None) -> RolloutJob:
    """The job of one rollout; `retried`: its record from before, an infrastructure failure run again on
    resume, whose attempts the new record goes on counting (`rollout_attempts`) and whose spend, errors and
    trajectories it keeps."""
    replayed = RunStore(conf.model.run_dir) if conf.model.run_dir else None
    job = RolloutJob(task, index, image, script_for(conf, task, index, replayed))
    if retried is not None:
        job.spent_before = list(retried.attempt_usage) or [retried.usage]
        job.attempts_before, job.errors_before = retried.attempts, list(retried.infra_errors)
        job.trajectories_before = list(retried.attempt_trajectories)
    return job


class RolloutRunner:
    """Runs rollouts of one run, wherever it runs: the config, the run's id (its containers' label) and
    the sandbox provider of this machine. It writes nothing: the driver stores each RolloutResult.
    `cpuset`: CPUs its containers are pinned to (a Ray node keeps one CPU for timing)."""

    def __init__(self, conf: RunConf, run_id: str, sandboxes: SandboxProvider, cpuset: str | None = None,
                 checkpoints: Path | CheckpointDir | None = None) -> None:
        self.conf, self.run_id, self.sandboxes, self.cpuset = conf, run_id, sandboxes, cpuset
        self.checkpoints = checkpoint_dir(checkpoints, run_id, sandboxes) if isinstance(checkpoints, Path) \
            else checkpoints
        self.system = System(model=conf.model.id, scaffold=conf.scaffold.id, budget=conf.budget.id)

    def run(self, job: RolloutJob, live: Live) -> RolloutResult:
        """One rollout with infrastructure retries: `infra_retries` of them here, and no more than
        `rollout_attempts` attempts in all, those before a resume (`job.attempts_before`) counted."""
        task = job.task
        errors = list(job.errors_before)
        live.spent.extend(copy.deepcopy(job.spent_before))
        tries = max(1, min(self.conf.infra_retries + 1, self.conf.rollout_attempts - job.attempts_before))
        for attempt in range(tries):
            live.attempt, number = attempt, job.attempts_before + attempt + 1  # (number: across resumes)
            if live.stop_reason == ExitReason.INTERRUPTED:
                raise Interrupted
            started = time.time()
            try:
                result = self._attempt(job, live)
            except SandboxError as err:  # (never SandboxKilledFromInside: _attempt records that one)
                if live.stop_reason == ExitReason.INTERRUPTED:
                    raise Interrupted from None
                errors.append(f"SandboxError: {err}")
                live.discard_attempt(number)
                if attempt < tries - 1:
                    self._await_engine(live)
                continue
            except Interrupted:
                raise
            except Exception as err:  # noqa: BLE001 - whatever the agent caused: this rollout's error, not the run's
                if live.stop_reason == ExitReason.INTERRUPTED:
                    raise Interrupted from None
                record = self._record(task, live.index, None, live.model, "", started, attempts=number)
                record.exit_reason = ExitReason.ERROR
                record.exit_message = redact(f"unexpected {type(err).__name__}: {err}")[:2000]
                record.infra_errors = errors
                return self._with_attempts(RolloutResult(record, None), job, live)
            record = result.record
            if record.exit_reason in RETRIED and attempt < tries - 1:
                errors.append(record.exit_message)
                live.discard_attempt(number)
                if record.exit_reason == ExitReason.INFRA_ERROR:
                    self._await_engine(live)
                continue
            record.infra_errors = errors
            # (the calls a kill made lost before a checkpoint it continued from are paid once, with the record)
            lost = [Usage(**u) for u in record.details.get("lost_calls", [])]
            return self._with_attempts(result, job, live, lost)
        record = self._record(task, live.index, None, None, "", time.time(), attempts=job.attempts_before + tries)
        record.exit_reason, record.exit_message = ExitReason.INFRA_ERROR, errors[-1] if errors else ""
        record.infra_errors = errors
        return self._with_attempts(RolloutResult(record, None), job, live, last_counts=False)

    def _with_attempts(self, result: RolloutResult, job: RolloutJob, live: Live, lost: list[Usage] | None = None,
                       last_counts: bool = True) -> RolloutResult:
        """The result with what the discarded attempts left: their spend in its totals, their trajectories."""
        record = result.record
        result.attempts = {attempt_trajectory_ref(record.instance_id, record.rollout, n): trajectory
                           for n, trajectory in sorted(live.discarded.items())}
        record.attempt_trajectories = [*job.trajectories_before, *result.attempts]
        result.record = with_spent(record, live.spent + (lost or []), last_counts)
        return result

    def _await_engine(self, live: Live) -> None:
        """Before retrying after a sandbox failure, wait for the engine to answer again (a Docker daemon
        restart takes it away for seconds): retried at once, every rollout in flight, and then each queued
        one, would fail instantly and be recorded as infra_error (the soak bench saw 14 of 30)."""
        if isinstance(self.sandboxes, WaitsReady):
            self.sandboxes.wait_ready(ENGINE_WAIT_S, live.stop)

    def _attempt(self, job: RolloutJob, live: Live) -> RolloutResult:
        """One attempt, phase by phase: model and scaffold, a sandbox (from the checkpoint, with the task's
        GPUs), the loop under the wall clock (attempt.drive), the change (attempt.collect), the record."""
        task, started = job.task, time.time()
        model = Model(self.conf.model, temperature=self.conf.temperature, seed=self.conf.seed,
                      script=copy.deepcopy(job.script))  # each attempt plays from the start
        live.model = model
        scaffold = make_scaffold(self.conf.scaffold.name, self.conf.scaffold.options)
        limits = self.conf.budget
        if task.agent_timeout and limits.task_timeouts:  # the task's own limit (Harbor's [agent].timeout_sec)
            limits = dataclasses.replace(limits, wall_clock_s=task.agent_timeout)
        resume = self._resume_point(task, live, scaffold)
        image = job.image if resume is None else resume[0]  # (a fresh sandbox from the checkpoint's files)
        sandbox, given = self._start(task, image, live)
        report: dict[str, Any] | None = None
        try:
            if self.cpuset:
                pin_if_possible(sandbox, self.cpuset)
            if task.service is not None:  # the grader's load generator, for the agent's visible seed
                sandbox.write_files(kit_files(task.service))
            more = self._checkpointing(task, live, scaffold, sandbox, limits, resume, job.image)
            live.checkpoints = more.get("checkpoints")
            driven = drive(scaffold, task, sandbox, model, limits, live, more)
            collected = collect(sandbox, driven, self.conf.sandbox.max_patch_bytes)
            if self.conf.grading.in_place and task.reward_check is not None and self.conf.grade != "none" \
                    and not collected.killed:
                # Harbor's way, as an option: verify in the agent's own container before it goes
                from harness.grader.reward import grade_reward
                report = grade_reward(task, collected.patch, image, self.conf.grading, self.sandboxes, task.id,
                                      agents_box=sandbox)
        finally:
            live.sandbox = None
            # Removing a container takes ~0.5 s: the worker goes on to its next rollout meanwhile (a crash or
            # exit before it is done is covered by the provider's own exit hooks).
            threading.Thread(target=_close_and_release, args=(sandbox, given), daemon=True).start()
        late = late_calls.settle(model, driven.episode, driven.counted)  # (once the sandbox no longer matters)
        record = self._record(task, live.index, driven.episode, model, collected.patch, started,
                              attempts=job.attempts_before + live.attempt + 1)
        conclude(record, driven, collected, live, given, late)
        return RolloutResult(record, live.episode, report)

    def _start(self, task: Task, image: str, live: Live) -> tuple[Sandbox, tuple[gpus.Gpu, ...]]:
        """The attempt's sandbox, with the task's own GPUs (waits while others hold them)."""
        given = self._lease_gpus(task, live)
        try:
            sandbox = self.sandboxes.start(image, self.conf.sandbox.limits().for_task(task.cpus, task.memory),
                                           labels={RUN_LABEL: self.run_id, "optrunner.task": task.id,
                                                   "optrunner.rollout": str(live.index)},
                                           gpus=given)
        except BaseException:
            gpus.machine_pool().release(given)
            raise
        live.sandbox, live.episode = sandbox, None
        return sandbox, given

    def _resume_point(self, task: Task, live: Live, scaffold: Any) -> tuple[str, EpisodeState] | None:
        """The rollout's last checkpoint (its image, its state) where its scaffold continues one; None: step 0."""
        live.carried = Usage()
        if self.checkpoints is None or not getattr(scaffold, "checkpoints", False):
            return None
        found = self.checkpoints.resume_point(task.id, live.index, live.attempt, self.sandboxes.image_id)
        if isinstance(found, Usage):  # no checkpoint: it starts again, and what a killed piece answered is spent
            if found.calls:
                live.spent.append(found)
            return None
        image, state, live.carried = found
        return image, state

    def _checkpointing(self, task: Task, live: Live, scaffold: Any, sandbox: Sandbox, limits: Any,
                       resume: tuple[str, EpisodeState] | None, base: str) -> dict[str, Any]:
        """The scaffold's `checkpoints` argument ({} where it keeps none): where to save, what to continue."""
        if self.checkpoints is None or not getattr(scaffold, "checkpoints", False):
            return {}
        made = self.checkpoints.arguments(task.id, live.index, sandbox, limits.checkpoint_every,
                                          resume[1] if resume else None, resume[0] if resume else None, base)
        return {"checkpoints": made} if made is not None else {}

    @staticmethod
    def _lease_gpus(task: Task, live: Live) -> tuple[gpus.Gpu, ...]:
        if not task.gpus:
            return ()
        while True:  # (in short waits, so that Ctrl-C and a stop are seen)
            try:
                return gpus.machine_pool().acquire(task.gpus, task.gpu_types, timeout=0.5)
            except TimeoutError:
                if live.stop_reason == ExitReason.INTERRUPTED:
                    raise Interrupted from None

    def _record(self, task: Task, index: int, episode: Episode | None, model: Model | None, patch: str,
                started: float, attempts: int) -> RolloutRecord:
        usage = episode.usage if episode else model.usage if model else Usage()
        details = dict(episode.details) if episode else {}
        if episode:
            details.setdefault("patch_source", "container" if episode.patch is None else "submission")
        return RolloutRecord(
            instance_id=task.id, rollout=index, system=self.system, model_name=self.conf.model.name,
            exit_reason=episode.exit_reason if episode else ExitReason.ERROR,
            exit_message=episode.exit_message if episode else "",
            steps=episode.steps if episode else 0,
            wall_time_s=round(time.time() - started, 3), started_at=started, finished_at=time.time(),
            attempts=attempts, usage=usage, cost_usd=usage.cost_usd if usage.cost_known else None,
            patch=patch, patch_sha256=patch_sha256(patch),
            trajectory=trajectory_ref(task.id, index) if episode else None,
            actions=episode.actions if episode else 0, details=details,
        )


def with_spent(record: RolloutRecord, spent: list[Usage], last_counts: bool = True) -> RolloutRecord:
    """The record with the discarded attempts' usage added in (and each attempt's kept apart).
    `last_counts`: the record's own usage is an attempt's (False when every attempt was discarded)."""
    if not spent:
        return record
    record.attempt_usage = [*spent, record.usage] if last_counts else list(spent)
    record.usage = Usage.total(record.attempt_usage)
    record.cost_usd = record.usage.cost_usd if record.usage.cost_known else None
    return record
