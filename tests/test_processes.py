"""Fresh processes over one launcher per container (harness.sandbox.processes), in a real container."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox.interface import SandboxError
from harness.sandbox.processes import FreshProcesses
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks.folder import load_task
from scaffolds.mini_swe.agent import COMMAND_ENV
from tests.docker_support import client, task_image

pytestmark = pytest.mark.docker


@pytest.fixture
def box(tiny_task: Path) -> Iterator[DockerSandbox]:
    with DockerSandbox.start(task_image(load_task(tiny_task)), client=client()) as sandbox:
        yield sandbox


def test_launcher_keeps_bytes_and_restarts_when_killed(box: DockerSandbox) -> None:
    procs = FreshProcesses(box, COMMAND_ENV)
    odd = procs.run("printf 'a\\377b\\n'; echo $PAGER; pwd; exit 3", 10)
    assert odd.exit_code == 3 and odd.output == "a\ufffdb\ncat\n/testbed\n"
    killed = procs.run("kill -9 $(ps -o ppid= -p $PPID)", 10)  # the launcher itself
    assert killed.exit_code == -1 and "launcher was restarted" in killed.output
    again = procs.run("echo back", 10)
    assert again.exit_code == 0 and again.output == "back\n"
    procs.close()


def test_a_sandbox_lost_mid_command_is_an_infrastructure_error(box: DockerSandbox) -> None:
    procs = FreshProcesses(box, COMMAND_ENV)
    assert procs.run("true", 10).exit_code == 0
    threading.Timer(1.0, lambda: client().containers.get(box.container.id).kill()).start()
    with pytest.raises(SandboxError):  # not a "could not be stopped" observation shown to the agent
        procs.run("sleep 30", 60)


def test_each_command_is_a_fresh_process_login_or_not(box: DockerSandbox) -> None:
    login, plain = FreshProcesses(box, {}), FreshProcesses(box, {"PYTHONHASHSEED": "0"}, login=False)
    check = "shopt -q login_shell && echo login || echo plain; echo ${PYTHONHASHSEED:-unset}"
    assert login.run(check, 10).output == "login\nunset\n"
    assert plain.run(check, 10).output == "plain\n0\n"
    first, second = (plain.run("export X=${X:-1}$$; echo $X", 10).output for _ in range(2))
    assert first != second  # nothing carries over: a new shell with a new pid each time
    timed = plain.run("sleep 5", 1)
    assert timed.timed_out and timed.exit_code == 124 and timed.duration < 4
    for procs in (login, plain):
        procs.close()
