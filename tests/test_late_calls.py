"""Calls answered after their episode are paid, so counted (issue 49, item 4): the model layer's in-flight
count and cancel, the Recorder's late list, and a real rollout (Docker) whose model answers after the runner
gave up on the episode: before, its record was built from the usage of that moment and the answer, paid,
appeared nowhere."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from harness.models import scripted
from harness.models.config import ModelConfig
from harness.models.errors import ModelError
from harness.models.model import Model
from harness.models.records import Usage
from harness.models.scripted import Script
from harness.sandbox.providers import provider
from runner import attempt
from runner.config import RunConf
from runner.rollout import Live, RolloutJob, RolloutRunner
from scaffolds.episode import EpisodeEnd
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits
from scaffolds.recorder import Recorder
from tests.docker_support import smoke_task, task_image

TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a command.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
HI = [{"role": "user", "content": "hi"}]
FAST = {"raw": {"content": "here", "tool_calls": []}}
SLOW = {**FAST, "delay_s": 2.0}


def slow_model(*steps: dict[str, Any]) -> Model:
    """A scripted model whose first, quick call is made here: litellm is loaded before any clock starts."""
    model = Model(ModelConfig(name="scripted/script"), script=scripted.Script(steps=[FAST, *steps]))
    model.query(HI, tools=TOOLS)
    model.usage = Usage()
    return model


def in_thread(call: Any) -> threading.Thread:
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread


def test_settle_waits_for_the_answer_in_flight_and_cancel_sends_nothing_more() -> None:
    model = slow_model(SLOW, SLOW)
    seen: list[Any] = []
    thread = in_thread(lambda: model.query(HI, tools=TOOLS, account=seen.append))
    time.sleep(0.3)
    model.cancel()
    assert model.settle(0.2) is False  # still answering
    assert model.settle(10) is True and len(seen) == 1 and model.usage.calls == 1
    thread.join(5)
    with pytest.raises(ModelError, match="not sent: the rollout ended"):
        model.query(HI, tools=TOOLS)
    assert model.usage.calls == 1


def test_an_answer_after_the_episode_ended_is_its_late_call_not_its_step_count() -> None:
    model = slow_model(SLOW)
    rec = Recorder("test", None, model, Limits())  # type: ignore[arg-type]  (no action runs)
    thread = in_thread(lambda: rec.query(HI, tools=TOOLS))
    time.sleep(0.3)
    episode = rec.finish(EpisodeEnd("stopped from outside", ExitReason.TIME_LIMIT))
    assert episode.usage.calls == 0 and episode.late_calls == []
    assert model.settle(10) and [r.output_tokens for r in episode.late_calls] == [model.usage.output_tokens]
    thread.join(5)
    assert episode.usage.calls == 0  # the episode's own count is what it had when it ended


@pytest.mark.docker
def test_a_rollout_given_up_on_still_counts_the_answer_that_came_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wall clock 1 s and 1 s of grace; the model's first answer takes 6 s: the runner stops waiting for the
    episode at ~2 s, and the record still carries the call, listed as late."""
    monkeypatch.setattr(attempt, "GRACE_S", 1.0)  # (the attempt's phases: runner/attempt.py)
    conf = RunConf()
    conf.model.name, conf.model.id = "scripted/script", "script"
    conf.scaffold.id = conf.scaffold.name = "mini_swe"
    conf.budget.wall_clock_s = 1.0
    task = smoke_task()
    steps = [{"bash": "true", "delay_s": 6.0}, {"finish": "done"}]
    job = RolloutJob(task, 0, task_image(task), script=Script(steps=steps))
    started = time.monotonic()
    record = RolloutRunner(conf, "run", provider("docker")).run(job, Live(task.id, 0)).record
    assert time.monotonic() - started >= 5.5  # it waited for the answer
    assert record.exit_reason == ExitReason.TIME_LIMIT
    assert record.details["late_calls"]["calls"] == 1 and record.details["late_calls"]["settled"] is True
    assert record.usage.calls == 1 and record.usage.output_tokens > 0
