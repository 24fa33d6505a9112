"""One rollout: a fresh container from the task image, the scaffold's loop with the model, under limits
enforced from outside, and the diff collected whatever happened.

The scaffold checks its limits between steps; the runner does not trust that alone. The loop runs in a
worker thread, and if it has not returned by the wall-clock limit (plus a short grace for the step in
flight), the runner stops it, takes the diff from the still-running container and records `time_limit`.
Infrastructure failures (Docker, a container that died, a provider outage after retries) are retried
with a fresh container up to `infra_retries` times and reported apart from agent failures.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors
import requests.exceptions

from harness.grading import patch_sha256
from harness.sandbox import DockerSandbox, SandboxLimits
from harness.tasks import Task
from runner.config import ConfigError, RunConf
from scaffolds import make_scaffold, scripted
from scaffolds.episode import Episode, Limits
from scaffolds.model import Model, ModelConfig, Price, Usage

GRACE_S = 30.0  # time a step in flight gets past the wall-clock limit before the runner steps in
INFRA_ERRORS = (docker.errors.DockerException, requests.exceptions.ConnectionError)
RUN_LABEL = "optrunner.run"


class Interrupted(Exception):
    """The run is stopping (Ctrl-C): the rollout is dropped, not recorded, and redone on resume."""


@dataclass
class Live:
    """What the progress display and the cost cap see of a running rollout."""
    task_id: str
    index: int
    started_at: float = field(default_factory=time.time)
    attempt: int = 0
    model: Model | None = None
    sandbox: DockerSandbox | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: str | None = None  # why the runner stopped it: "interrupted" or "run_cost_limit"

    @property
    def steps(self) -> int:
        return self.model.calls if self.model else 0

    @property
    def cost(self) -> float:
        return self.model.usage.cost_usd if self.model else 0.0


def limits_of(conf: RunConf) -> Limits:
    b = conf.budget
    return Limits(max_steps=b.max_steps, max_cost_usd=b.max_cost_usd, wall_clock_s=b.wall_clock_s,
                  command_timeout_s=b.command_timeout_s, snapshot_every=b.snapshot_every)


def sandbox_limits(conf: RunConf) -> SandboxLimits:
    s = conf.sandbox
    return SandboxLimits(cpus=s.cpus, memory=s.memory, pids=s.pids, network=s.network,
                         max_output_bytes=s.max_output_bytes)


def build_model(conf: RunConf, task: Task, index: int) -> Model:
    """The model for one rollout; scripted models are bound to the task here."""
    mc = conf.model
    kwargs: dict[str, Any] = dict(mc.kwargs)
    if mc.name.startswith(f"{scripted.PROVIDER}/"):
        patch = (task.path / mc.patch).read_text() if mc.patch else None
        trajectory = None
        if mc.name.endswith("/replay"):
            path = Path(mc.run_dir or "") / "trajectories" / task.id / f"{index}.json"
            try:
                trajectory = json.loads(path.read_text())["messages"]
            except (OSError, ValueError, KeyError):
                raise ConfigError(f"replay: no trajectory at {path}") from None
        bound = ({"steps": list(mc.steps or [])} if mc.name.endswith("/script")
                 else scripted.bind(mc.name, task, patch, trajectory))
        kwargs["extra_body"] = {**kwargs.get("extra_body", {}), **bound}
    price = None
    if mc.price is not None:
        price = Price(mc.price.input, mc.price.output, mc.price.cache_read, mc.price.cache_write)
    return Model(ModelConfig(name=mc.name, temperature=conf.temperature, seed=conf.seed, timeout_s=mc.timeout_s,
                             attempts=mc.attempts, api_base=mc.api_base, price=price,
                             prompt_caching=mc.prompt_caching, native_tools=mc.native_tools, kwargs=kwargs))


def run_rollout(conf: RunConf, run_id: str, task: Task, image: str, live: Live) -> tuple[dict, dict | None]:
    """Run one rollout with infrastructure retries; returns (record, trajectory)."""
    errors: list[str] = []
    for attempt in range(conf.infra_retries + 1):
        live.attempt = attempt
        if live.stop.is_set() and live.stop_reason == "interrupted":
            raise Interrupted
        try:
            record, trajectory = _attempt(conf, run_id, task, image, live)
        except INFRA_ERRORS as err:
            if live.stop_reason == "interrupted":
                raise Interrupted from None
            errors.append(f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}")
            continue
        if record["exit_reason"] == "provider_error" and attempt < conf.infra_retries:
            errors.append(record["exit_message"])
            continue
        record["infra_errors"] = errors
        return record, trajectory
    record = _record(conf, task, live.index, None, None, "", time.time(), attempts=len(errors))
    record.update(exit_reason="infra_error", exit_message=errors[-1] if errors else "", infra_errors=errors)
    return record, None


def _attempt(conf: RunConf, run_id: str, task: Task, image: str, live: Live) -> tuple[dict, dict | None]:
    started = time.time()
    model = build_model(conf, task, live.index)
    live.model = model
    scaffold = make_scaffold(conf.scaffold.name, conf.scaffold.options)
    limits = limits_of(conf)
    sandbox = DockerSandbox.start(image, sandbox_limits(conf),
                                  labels={RUN_LABEL: run_id, "optrunner.task": task.id,
                                          "optrunner.rollout": str(live.index)})
    live.sandbox = sandbox
    try:
        outcome: dict[str, Any] = {}

        def loop() -> None:
            try:
                outcome["episode"] = scaffold.run(task, sandbox, model, limits, live.stop)
            except BaseException as exc:  # noqa: BLE001 - reported below, with its kind
                outcome["error"] = exc

        worker = threading.Thread(target=loop, name=f"rollout-{task.id}-{live.index}", daemon=True)
        worker.start()
        deadline = None if limits.wall_clock_s is None else limits.wall_clock_s + GRACE_S
        until = None if deadline is None else time.monotonic() + deadline
        while worker.is_alive():
            worker.join(0.2)
            if live.stop_reason == "interrupted":  # Ctrl-C: don't wait for a step in flight (a slow model call)
                raise Interrupted
            if until is not None and time.monotonic() > until:  # overran its wall clock: stop it from outside
                live.stop_reason = live.stop_reason or "time_limit"
                live.stop.set()
                worker.join(GRACE_S)
                break
        if live.stop_reason == "interrupted":
            raise Interrupted
        error = outcome.get("error")
        if isinstance(error, INFRA_ERRORS):
            raise error
        patch = sandbox.diff()
    finally:
        live.sandbox = None
        # Removing a container takes ~0.5 s: the worker goes on to its next rollout meanwhile (a crash or
        # exit before it is done is covered by the sandbox's own exit hooks).
        threading.Thread(target=sandbox.close, daemon=True).start()
    episode: Episode | None = outcome.get("episode")
    record = _record(conf, task, live.index, episode, model, patch, started, attempts=live.attempt + 1)
    if episode is None:
        if error is not None:
            record.update(exit_reason="error", exit_message=f"{type(error).__name__}: {error}")
        else:
            record.update(exit_reason="time_limit", exit_message="stopped from outside at the wall-clock limit")
    elif episode.exit_reason == "interrupted" and live.stop_reason:
        why = {"time_limit": "stopped from outside at the wall-clock limit",
               "run_cost_limit": "the run's cost cap was reached"}
        record.update(exit_reason=live.stop_reason, exit_message=why.get(live.stop_reason, ""))
    return record, (episode.to_dict() if episode else None)


def _record(conf: RunConf, task: Task, index: int, episode: Episode | None, model: Model | None, patch: str,
            started: float, attempts: int) -> dict[str, Any]:
    usage = (episode.usage if episode else model.usage if model else Usage()).to_dict()
    return {
        "instance_id": task.id, "rollout": index,
        "system": {"model": conf.model.id, "scaffold": conf.scaffold.id, "budget": conf.budget.id},
        "model_name": conf.model.name,
        "exit_reason": episode.exit_reason if episode else "error",
        "exit_message": episode.exit_message if episode else "",
        "steps": episode.steps if episode else 0,
        "wall_time_s": round(time.time() - started, 3), "started_at": started, "finished_at": time.time(),
        "attempts": attempts,
        "usage": usage,
        "cost_usd": usage["cost_usd"] if usage["cost_known"] else None,
        "patch": patch, "patch_sha256": patch_sha256(patch),
        "trajectory": f"trajectories/{task.id}/{index}.json" if episode else None,
    }
