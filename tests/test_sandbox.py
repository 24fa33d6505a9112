"""What only the Docker sandbox does (engine errors, the backstop, labels and cleanup of containers);
what every provider does is in test_sandbox_conformance.py."""
from __future__ import annotations

import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker.errors
import pytest

from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.containers import OWNER_LABEL, owner_id, remove_containers
from harness.sandbox.docker.images import run_step
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.docker.stream import DockerStream
from harness.sandbox.interface import OutputCapture as _Capture
from harness.sandbox.interface import SandboxError, SandboxLimits, memory_bytes
from tests.docker_support import client, sandbox_for, smoke_task, task_image

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.docker


@pytest.fixture
def box() -> Iterator[DockerSandbox]:
    yield from sandbox_for(smoke_task(), memory="256m", pids=64, max_output_bytes=200_000)


def _exists(container_id: str) -> bool:
    try:
        client().containers.get(container_id)
        return True
    except docker.errors.NotFound:
        return False


@pytest.mark.parametrize("size, expected", [("4g", 4 << 30), ("512m", 512 << 20), ("1.5G", 3 << 29), ("4gb", 4 << 30),
                                            ("2048", 2048), ("lots", None), ("0g", None), ("-1g", None), ("4 x", None)])
def test_memory_sizes_are_read_as_docker_reads_them(size: str, expected: int | None) -> None:
    assert memory_bytes(size) == expected


def test_sandbox_limits_name_each_value_out_of_range() -> None:
    assert SandboxLimits().problems() == []
    bad = SandboxLimits(cpus=0, memory="lots", pids=0, max_output_bytes=-5).problems()
    assert [p.split()[0] for p in bad] == ["cpus", "memory", "pids", "max_output_bytes"]


def test_capture_keeps_head_and_tail_and_never_fails_on_bad_bytes() -> None:
    cap = _Capture(cap=10)
    for chunk in (b"abc", b"\xff\xfe", b"0123456789", b"XYZ"):
        cap.add(chunk)
    assert cap.head == b"abc\xff\xfe" and cap.tail == b"789XYZ"[-5:]
    assert cap.dropped == 18 - 10
    assert "bytes of output omitted" in cap.text() and "\ufffd" in cap.text()


def test_agent_container_holds_nothing_of_the_answer(box: DockerSandbox) -> None:
    task = smoke_task()
    log = box.exec("git log --all --format=%H").output.split()
    assert log == [box.base_commit]
    assert box.exec("git for-each-ref --format='%(refname)'").output.split() == ["refs/heads/main"]
    assert box.exec("git status --porcelain").output == ""
    # Search the whole filesystem for the hidden tests and the expert patch (by name and by content).
    names = " -o ".join(f"-name {name}" for name in task.test_names) + " -o -name expert.patch"
    found = box.exec(f"find / -xdev \\( {names} \\) 2>/dev/null").output.strip()
    assert found == ""
    added = [line[1:] for line in task.expert_patch.splitlines()
             if line.startswith("+") and not line.startswith("+++") and len(line.strip()) > 30]
    assert added, "expert patch has no distinctive added line to search for"
    box.write_file("/tmp/needle", added[0])
    hits = box.exec("grep -rlF -f /tmp/needle / --exclude-dir=proc --exclude-dir=sys 2>/dev/null "
                    "| grep -v '^/tmp/needle$' || true").output.strip()
    assert hits == ""



def test_the_diff_is_taken_without_the_agents_profile(box: DockerSandbox) -> None:
    # The agent's commands run in a login shell: a `git` function in its profile stands in for git there.
    target = box.exec("git ls-files | grep '[.]py$' | head -1").output.strip()
    assert target
    box.exec(f"echo '# a real edit' >> {shlex.quote(target)}")
    fake = "diff --git a/x b/x\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+FAKE\n"
    box.write_file("/root/.profile", f"git() {{ printf '%s' {shlex.quote(fake)}; }}\n")
    assert box.exec("git diff HEAD").output == fake  # the agent's own shell sees the fake
    patch = box.diff()
    assert f"diff --git a/{target} b/{target}" in patch and "+# a real edit" in patch
    assert "FAKE" not in patch

def test_engine_failures_surface_as_the_one_sandbox_error() -> None:
    # A provider's own exceptions never reach callers: a closed sandbox, a container removed under a running
    # command and a missing image all raise SandboxError (a bad command is an exit code, not an error).
    box = DockerSandbox.start(task_image(smoke_task()), client=client())
    assert box.exec("exit 3").exit_code == 3
    threading.Timer(1.0, lambda: box.container.remove(force=True)).start()
    with pytest.raises(SandboxError, match="container stopped"):
        box.exec("sleep 30", timeout=60)
    deadline = time.monotonic() + 20
    while _exists(box.container.id) and time.monotonic() < deadline:
        time.sleep(0.2)
    with pytest.raises(SandboxError):
        box.write_file("/tmp/x", "x")
    box.close()  # already gone: still fine
    with pytest.raises(SandboxError, match="closed"):
        box.exec("true")
    with pytest.raises(SandboxError, match="docker: "):
        DockerSandbox.start("optrunner/no-such-image:0", client=client())


def test_cleanup_of_this_process_spares_other_owners() -> None:
    mine = DockerSandbox.start(task_image(smoke_task()), client=client())
    other = client().containers.run(task_image(smoke_task()), ["sleep", "infinity"], detach=True,
                                    labels={LABEL: "sandbox", OWNER_LABEL: "elsewhere:1"})
    try:
        assert remove_containers("mine") >= 1
        assert not _exists(mine.container.id) and _exists(other.id)
    finally:
        other.remove(force=True)
        mine.close()


def test_cleanup_command_removes_labelled_containers() -> None:
    stray = client().containers.run(task_image(smoke_task()), ["sleep", "infinity"], detach=True,
                                    labels={LABEL: "sandbox"})
    done = subprocess.run([sys.executable, "-m", "harness", "cleanup"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not _exists(stray.id)


def test_backstop_ends_a_wedged_exec(box: DockerSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    # A paused container freezes the in-container timeout too; only the host-side backstop can end it.
    monkeypatch.setattr("harness.sandbox.docker.sandbox.BACKSTOP_GRACE", 1)
    timer = threading.Timer(0.5, box.container.pause)
    timer.start()
    done = box.exec("sleep 60", timeout=1)
    timer.join()
    assert done.timed_out and "exec wedged" in done.output
    assert done.duration < 15


def test_output_the_engine_lost_is_an_infrastructure_error_not_a_quiet_command(box: DockerSandbox) -> None:
    # Output cut short (seen under load through docker-py's frame reader: a test run once got no PATH, the
    # image's environment read as empty, and a valid patch failed) is an error, not a quiet command.
    assert box.exec("printf 'PATH=%s' \"$PATH\"").output.startswith("PATH=/")  # (the end marker is not output)
    api = box._client.api
    real = api.exec_start

    def lose_output(exec_id: str, **kwargs: object) -> socket.socket:
        """The engine's stream read to its end and thrown away; the exec gets a stream that just ends."""
        DockerStream(api, exec_id, real(exec_id, **kwargs), tty=False).drain(lambda _data: None)
        ours, theirs = socket.socketpair()
        theirs.close()
        return ours

    api.exec_start = lose_output  # type: ignore[method-assign]
    try:
        with pytest.raises(SandboxError, match="lost the output"):
            box.exec("echo PATH=/usr/bin")
    finally:
        del api.exec_start
    # The real cause, made to happen: the client read the response's headers late, and http.client's
    # buffered reader took the command's whole output with them. The stream takes those bytes first.

    def read_late(exec_id: str, **kwargs: object) -> object:
        holder = real(exec_id, **kwargs)
        time.sleep(0.5)  # (the output is in the socket now)
        assert holder._response.raw._fp.fp.peek(1 << 16)  # type: ignore[attr-defined]  # taken into its buffer
        return holder

    api.exec_start = read_late  # type: ignore[method-assign]
    try:
        assert box.exec("printf 'PATH=%s' \"$PATH\"").output.startswith("PATH=/")
        assert run_step(box.container, "printf 'PATH=%s' \"$PATH\"", "probe").startswith("PATH=/")  # image builds
    finally:
        del api.exec_start
    # A command that kills the shell around it (so no end marker) gets its exit status, not a retry. (Its
    # parent is timeout(1); the shell that prints the marker is the one above that.)
    done = box.exec("read -r _ _ _ shell _ < /proc/$PPID/stat; kill -KILL $shell; sleep 1")
    assert done.exit_code == 137 and not done.timed_out
    # A shell the engine cannot start (no marker, exit 126: seen when a fork bomb still held the pids limit)
    # is the command's result, not lost output: its caller may try again once the processes are gone.
    box.exec("chmod -x /usr/bin/bash")
    done = box.exec("echo never")
    assert done.exit_code == 126 and "OCI runtime exec failed" in done.output and "never" not in done.output


def test_cleanup_spares_running_build_steps_of_another_run() -> None:
    """A docker build's step inherits our label from its FROM image and has no owner: a second run starting
    beside the first must not kill the first run's image build (seen: exit 137 mid-build); a stopped one
    is debris."""
    step = client().containers.run(task_image(smoke_task()), ["sleep", "infinity"], detach=True,
                                   labels={LABEL: "root"})
    stopped = client().containers.create(task_image(smoke_task()), ["true"], labels={LABEL: "root"})
    try:
        assert remove_containers("orphans") >= 1
        assert _exists(step.id) and not _exists(stopped.id)
    finally:
        step.remove(force=True)


def test_cleanup_spares_containers_of_live_processes() -> None:
    alive = client().containers.run(task_image(smoke_task()), ["sleep", "infinity"], detach=True,
                                    labels={LABEL: "sandbox", OWNER_LABEL: owner_id()})
    gone = client().containers.run(task_image(smoke_task()), ["sleep", "infinity"], detach=True,
                                   labels={LABEL: "sandbox", OWNER_LABEL: f"{socket.gethostname()}:999999999"})
    try:
        done = subprocess.run([sys.executable, "-m", "harness", "cleanup"], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert _exists(alive.id) and not _exists(gone.id)
    finally:
        alive.remove(force=True)
