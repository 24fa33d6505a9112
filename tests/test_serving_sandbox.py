"""`Connectable`: the grader's serving client reaches a server listening inside a sandbox, through a socket
made in the sandbox's own network namespace, and nothing outside that sandbox reaches it."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox.interface import Connectable, Sandbox, SandboxError, SandboxLimits
from harness.sandbox.providers import provider
from harness.serving.client import Endpoint, run_sync
from harness.serving.metrics import summarize
from harness.serving.workload import Workload, generate
from tests.docker_support import providers_here, smoke_task, task_image
from tests.serving_support import answer

PORT = 39311  # inside each sandbox's own network namespace
SERVER = Path(__file__).with_name("serving_support.py")
pytestmark = pytest.mark.docker  # the images come from Docker for both providers


def start(name: str) -> Sandbox:
    image = task_image(smoke_task())
    if name == "bwrap":
        from harness.sandbox.bwrap import rootfs
        rootfs.export(provider("docker"), image)
    return provider(name).start(image, SandboxLimits(memory="256m", pids=64))


@pytest.fixture(params=providers_here())
def boxes(request: pytest.FixtureRequest) -> Iterator[tuple[Sandbox, Sandbox]]:
    first, second = start(request.param), start(request.param)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def connects(open_socket, port: int) -> bool:
    sock = open_socket()
    try:
        sock.settimeout(2)
        sock.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def test_the_client_reaches_a_server_in_the_sandbox_and_nothing_else_does(
        boxes: tuple[Sandbox, Sandbox]) -> None:
    box, other = boxes
    assert isinstance(box, Connectable) and isinstance(other, Connectable)
    box.write_file("/opt/serving_support.py", SERVER.read_text())
    box.exec(f"(setsid python3 /opt/serving_support.py {PORT} 0.05 > /tmp/server.log 2>&1 &)", timeout=30)
    deadline = time.monotonic() + 30
    while not connects(lambda: box.connection_sockets()[0], PORT):
        assert time.monotonic() < deadline, box.exec("cat /tmp/server.log").output
        time.sleep(0.2)
    shape = Workload(requests=4, output_tokens=(3, 3), concurrency=2)
    requests = generate(shape, 5)
    records = run_sync(Endpoint(box.connection_sockets(len(requests)).pop, PORT), requests, shape)
    assert [r.text for r in records] == ["".join(answer(q.prompt, 3)) for q in requests], records
    metrics = summarize(records)
    assert metrics.completed == 4 and metrics.values["ttft_p50"] >= 0.05
    # not from the host's loopback, not from another sandbox's namespace
    assert not connects(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM), PORT)
    assert not connects(lambda: other.connection_sockets()[0], PORT)


def test_a_closed_sandbox_gives_no_socket_and_says_so(boxes: tuple[Sandbox, Sandbox]) -> None:
    box, _ = boxes
    assert isinstance(box, Connectable)
    box.close()
    with pytest.raises(SandboxError, match="cannot open a connection inside the"):
        box.connection_sockets()
