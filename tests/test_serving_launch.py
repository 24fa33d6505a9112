"""One launch of a service task's server in a built state (harness.grader.serving): started fenced, probed,
measured by the grader's client, stopped with everything it started, and nothing of it left for the next."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.grader.serving import launch
from harness.grader.states import CodeState, StepFailed, prepare_state
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.serving.workload import generate
from harness.tasks.folder import load_task
from harness.tasks.task import Task
from tests.conftest import write_task
from tests.docker_support import client, task_image
from tests.serving_support import answer

PORT = 8000
SERVER = Path(__file__).with_name("serving_support.py")
pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    path = write_task(tmp_path_factory.mktemp("svc"), "svc", service={
        "start": f"python3 server.py {PORT} 0.02", "port": PORT, "ready_timeout_s": 20, "request_timeout_s": 10,
        "workload": {"requests": 4, "output_tokens": 3, "concurrency": 2, "warmup": 1}})
    (path / "repo" / "server.py").write_text(SERVER.read_text())
    shutil.rmtree(path / "tests")  # (a service task needs no timing tests)
    return load_task(path)


@pytest.fixture(scope="module")
def state(task: Task) -> Iterator[CodeState]:
    box = DockerSandbox.start(task_image(task), client=client())
    try:
        yield prepare_state("base", box, task)
    finally:
        box.close()


def service(task: Task, **changes: object):
    import dataclasses
    assert task.service is not None
    return dataclasses.replace(task.service, **changes)


def test_a_launch_measures_the_server_and_leaves_nothing_running(task: Task, state: CodeState) -> None:
    spec = service(task)
    requests = generate(spec.workload, 11)
    done = launch(state, spec, requests, generate(spec.workload, 12, count=1))
    assert done.ready_s > 0
    assert [r.text for r in done.records] == ["".join(answer(q.prompt, 3)) for q in requests], done.records
    assert all(r.ok and r.chunks_s[0] - r.sent_s >= 0.02 for r in done.records)
    assert state.sandbox.processes() == []  # the server and whatever it started are gone


def test_nothing_a_launch_writes_or_starts_is_there_for_the_next(task: Task, state: CodeState) -> None:
    # The server leaves a file in every writable place it can and a daemon behind; the next launch sees none.
    start = ("for d in /tmp /var/tmp /dev/shm \"$HOME\" \"$TMPDIR\"; do [ -e $d/seen ] && echo CACHED-$d; "
             "touch $d/seen 2>/dev/null; done; (setsid sleep 600 &); "
             f"exec python3 server.py {PORT} 0")
    spec = service(task, start=start)
    first = launch(state, spec, generate(spec.workload, 1, count=1), [])
    second = launch(state, spec, generate(spec.workload, 2, count=1), [])
    assert "CACHED" not in first.output + second.output, second.output
    assert not any("sleep 600" in line for line in state.sandbox.processes())


@pytest.mark.parametrize("start, ready_s, message", [
    ("exit 3", 20, "it exited before it was ready"),
    ("sleep 600", 2, "not ready within 2 s"),
])
def test_a_server_that_never_comes_up_fails_the_state(task: Task, state: CodeState, start: str, ready_s: float,
                                                     message: str) -> None:
    spec = service(task, start=start, ready_timeout_s=ready_s)
    with pytest.raises(StepFailed, match=message):
        launch(state, spec, generate(spec.workload, 1, count=1), [])
    assert state.sandbox.processes() == []
