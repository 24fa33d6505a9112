"""What the soak bench (tests/bench/soak.py) found when the Docker daemon restarts under a run:

- a rollout retried right after a sandbox failure failed again at once while the engine was away, used
  up its retries, and so did every queued rollout: the runner now waits for the engine first;
- a container created just before the engine went away (create succeeded, start failed) or whose removal
  failed while it was away was forgotten by the process and left behind: it now stays tracked until it
  is removed (at the latest by the exit hook).
"""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
import requests.exceptions

from harness.sandbox import live
from harness.sandbox.docker import containers
from harness.sandbox.docker.provider import DockerProvider
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import SandboxError
from harness.tasks.folder import load_task
from runner.config import RunConf
from runner.rollout import Live, RolloutJob, RolloutRunner
from scaffolds.exits import ExitReason
from tests.conftest import write_task
from tests.docker_support import client, smoke_task, task_image


class EngineAway:
    """A provider whose engine is away: every start fails; counts the waits for the engine."""
    name = "fake"

    def __init__(self) -> None:
        self.starts = self.waits = 0

    def start(self, *_args: object, **_kwargs: object) -> None:
        self.starts += 1
        raise SandboxError("docker: ('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))")

    def wait_ready(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        self.waits += 1
        return False


def test_an_infra_retry_waits_for_the_engine_first(tmp_path: Path) -> None:
    conf = RunConf()
    conf.infra_retries = 2
    provider = EngineAway()
    rollouts = RolloutRunner(conf, "run", provider)  # type: ignore[arg-type]
    task = load_task(write_task(tmp_path, "tiny"))
    record = rollouts.run(RolloutJob(task, 0, "no-image"), Live(task.id, 0)).record
    assert record.exit_reason == ExitReason.INFRA_ERROR and len(record.infra_errors) == 3
    assert provider.starts == 3 and provider.waits == 2  # a wait before each retry


def test_wait_ready_gives_up_on_an_unreachable_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    assert DockerProvider().wait_ready(0.2) is False


@pytest.mark.docker
def test_wait_ready_sees_a_running_engine() -> None:
    assert DockerProvider().wait_ready(10) is True


@pytest.mark.docker
def test_a_container_whose_start_failed_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise requests.exceptions.ConnectionError("Connection aborted.")

    monkeypatch.setattr("docker.models.containers.Container.start", refuse)
    ours = {"label": f"{containers.OWNER_LABEL}={containers.owner_id()}"}  # (other test processes run beside)
    before = {c.id for c in client().containers.list(all=True, filters=ours)}
    with pytest.raises(SandboxError, match="Connection aborted"):
        DockerSandbox.start(task_image(smoke_task()), client=client())
    after = {c.id for c in client().containers.list(all=True, filters=ours)}
    assert after - before == set()  # created, then removed: not left behind


@pytest.mark.docker
def test_a_container_whose_removal_failed_stays_tracked_for_the_exit_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    box = DockerSandbox.start(task_image(smoke_task()), client=client())
    real_remove = type(box.container).remove

    def engine_away(self: object, **kwargs: object) -> None:
        raise requests.exceptions.ConnectionError("Connection aborted.")

    monkeypatch.setattr(type(box.container), "remove", engine_away)
    with pytest.raises(SandboxError):
        box.close()
    assert f"docker:{box.container.id}" in live.tracked()  # not forgotten
    monkeypatch.setattr(type(box.container), "remove", real_remove)
    live.close_all()  # what the exit hook runs
    assert not client().containers.list(all=True, filters={"id": box.container.id})


@pytest.mark.docker
def test_the_exit_hook_also_removes_untracked_containers_of_this_process() -> None:
    # A container whose creation answer was lost (the engine went away mid-request) was never tracked: only
    # its owner label says it is ours.
    lost = client().containers.run(task_image(smoke_task()), ["sleep", "infinity"], detach=True,
                                   labels={containers.LABEL: "sandbox", containers.OWNER_LABEL: containers.owner_id()})
    live.close_all()
    assert not client().containers.list(all=True, filters={"id": lost.id})
