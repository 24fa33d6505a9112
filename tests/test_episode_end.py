"""One episode-end path for every scaffold: whatever ends the loop, the episode comes back with its
trajectory, and a sandbox that dies under the agent ends it as `infra_error` (which the runner retries)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import SandboxError
from harness.tasks import Task
from harness.tasks.folder import load_task
from scaffolds import make_scaffold
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits
from tests.docker_support import client, task_image
from tests.scaffold_support import script_model

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Task:
    from tests.conftest import write_task
    return load_task(write_task(tmp_path_factory.mktemp("tasks")))


@pytest.mark.parametrize("scaffold", ["codeact", "mini_swe", "terminus"])
def test_a_sandbox_that_dies_mid_episode_ends_it_as_infra_error_with_its_trajectory(scaffold: str,
                                                                                    tiny: Task) -> None:
    # The second reply takes 2 s; meanwhile the container is removed from outside (an engine restart,
    # an OOM-killed container). The next action meets a dead sandbox.
    steps = [{"bash": "echo first-step-output", "duration": 0.2}, {"bash": "echo second", "delay_s": 3.0},
             {"bash": "echo third", "duration": 0.2}, {"finish": "done"}]
    model = script_model(steps)
    box = DockerSandbox.start(task_image(tiny), client=client())
    killer = threading.Timer(1.5, lambda: box.container.remove(force=True))
    killer.start()
    try:
        episode = make_scaffold(scaffold).run(tiny, box, model, Limits(max_steps=10, snapshot_every=0))
    finally:
        killer.cancel()
        try:
            box.close()
        except SandboxError:
            pass
    assert episode.exit_reason == ExitReason.INFRA_ERROR, (episode.exit_reason, episode.exit_message)
    assert episode.exit_message.startswith("sandbox: ")
    assert episode.steps >= 2 and episode.messages  # the trajectory up to the failure is kept
    shown = "".join(str(m.get("content")) for m in episode.messages)
    assert "first-step-output" in shown


def test_exit_reasons_are_stored_as_plain_strings(tmp_path: Path) -> None:
    import json

    from runner.records import RolloutRecord
    record = RolloutRecord(instance_id="t", rollout=0, exit_reason=ExitReason.STEP_LIMIT)
    data = json.loads(json.dumps(record.to_dict()))
    assert data["exit_reason"] == "step_limit"
    assert RolloutRecord.from_dict(data).exit_reason is ExitReason.STEP_LIMIT
