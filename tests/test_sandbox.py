"""The Docker sandbox against real containers: timeouts, output, files, diff, limits, cleanup."""
from __future__ import annotations

import signal
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
from harness.grader.states import apply_patch
from harness.sandbox.docker.containers import OWNER_LABEL, owner_id, remove_containers
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import OutputCapture as _Capture
from harness.sandbox.interface import NoPatch, SandboxError, SandboxLimits, memory_bytes
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


def test_exec_basics(box: DockerSandbox) -> None:
    done = box.exec("echo out; echo err >&2; pwd; echo $FOO; exit 3", env={"FOO": "bar"})
    assert done.exit_code == 3 and not done.timed_out
    # stdout and stderr are separate pipes: both arrive, their relative order is not defined
    assert sorted(done.output.split()) == ["/testbed", "bar", "err", "out"]
    assert box.exec("pwd", cwd="/tmp").output.strip() == "/tmp"


def test_timeout_stops_the_command_inside_the_container(box: DockerSandbox) -> None:
    done = box.exec("echo started; sleep 100; echo never", timeout=2)
    assert done.timed_out and done.exit_code in (124, 137)
    assert 1.9 <= done.duration < 6
    assert "started" in done.output and "never" not in done.output
    left = box.exec("ps -eo stat,args | grep 'sleep 10[0]' || true").output
    assert left.strip() == "", f"sleep survived its timeout: {left}"


def test_large_and_binary_output(box: DockerSandbox) -> None:
    big = box.exec("head -c 5000000 /dev/zero | tr '\\0' 'a'; echo; echo END")
    assert big.truncated and big.output.endswith("END\n")
    assert len(big.output.encode()) < 210_000
    binary = box.exec("head -c 4096 /dev/urandom; printf '\\xff\\xfe done'")
    assert binary.exit_code == 0 and binary.output.endswith("done")


def test_files_round_trip(box: DockerSandbox) -> None:
    payload = bytes(range(256)) * 10
    box.write_file("/tmp/deep/dir/blob.bin", payload)
    assert box.read_file("/tmp/deep/dir/blob.bin") == payload
    box.write_file("notes.txt", "héllo\n")  # relative paths land in /testbed
    assert box.exec("cat /testbed/notes.txt").output == "héllo\n"
    with pytest.raises(FileNotFoundError):
        box.read_file("/nope/missing")
    with pytest.raises(NotADirectoryError):  # the caller's mistake (an agent's editor call), not the engine's
        box.write_file("/testbed/notes.txt/inside.txt", "x")
    with pytest.raises(NotADirectoryError):
        box.write_file("/testbed/notes.txt/deeper/inside.txt", "x")
    box.write_files({"/tmp/many/a/one.py": payload, "/tmp/many/two.txt": "zwei\n", "three.txt": b"3"})
    assert box.read_file("/tmp/many/a/one.py") == payload and box.read_file("/tmp/many/two.txt") == b"zwei\n"
    assert box.exec("cat /testbed/three.txt && stat -c %a /tmp/many/a").output == "3755\n"


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


def test_no_network(box: DockerSandbox) -> None:
    probe = "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\""
    done = box.exec(probe, timeout=20)
    assert done.exit_code != 0 and "Network is unreachable" in done.output


def test_memory_hog_is_killed_and_container_survives(box: DockerSandbox) -> None:
    done = box.exec("python3 -c \"x = bytearray(1024 * 1024 * 1024)\"", timeout=60)
    assert done.exit_code == 137 and not done.timed_out
    assert box.exec("echo alive").output == "alive\n"


def test_fork_bomb_is_contained(box: DockerSandbox) -> None:
    done = box.exec("bomb() { bomb | bomb & }; bomb; sleep 3", timeout=5)
    assert "Resource temporarily unavailable" in done.output  # the pids limit was hit
    assert box.container.attrs["HostConfig"]["PidsLimit"] == 64
    for _ in range(20):  # the bomb's processes die with their process group
        if box.exec("echo alive", timeout=10).output == "alive\n":
            break
        time.sleep(0.5)
    else:
        pytest.fail("container did not recover from the fork bomb")
    host = subprocess.run(["bash", "-c", "echo ok"], capture_output=True, text=True)
    assert host.stdout == "ok\n"  # and the host can still fork


def test_diff_round_trips_through_git_apply_on_a_fresh_container(box: DockerSandbox) -> None:
    box.exec("printf 'new file\\n' > added.txt && rm README.md && echo '# touched' >> $(git ls-files '*.py' | head -1)")
    box.exec("mkdir -p pkg_cache/__pycache__ && echo x > pkg_cache/__pycache__/m.pyc")
    box.exec("printf '\\x00\\x01binary' > blob.bin")  # a NUL byte: binary to git
    box.exec("git add -A && git -c user.name=a -c user.email=a@a commit -qm agent")  # agent commits: irrelevant
    patch = box.diff()
    assert "added.txt" in patch and "README.md" in patch
    assert "__pycache__" not in patch and "blob.bin" not in patch
    fresh = DockerSandbox.start(task_image(smoke_task()), client=client())
    try:
        apply_patch(fresh, patch)
        assert fresh.exec("cat added.txt").output == "new file\n"
        assert fresh.exec("test -e README.md").exit_code == 1
        assert fresh.diff() == patch
    finally:
        fresh.close()


@pytest.mark.docker
def test_diff_ignores_the_agents_git_configuration_and_hooks(box: DockerSandbox) -> None:
    box.exec("echo '# touched' >> README.md")
    honest = box.diff()
    box.exec("git config diff.external /bin/false && git config diff.noprefix true && "
             "git config core.fsmonitor 'echo broken; exit 1' && git config core.hooksPath /nowhere && "
             "git config filter.x.clean false && echo '* filter=x' > .git/info/attributes && "
             "git config --global diff.external /bin/false && git config --global diff.mnemonicPrefix true")
    assert box.diff() == honest and honest.startswith("diff --git a/README.md b/README.md")


@pytest.mark.docker
@pytest.mark.parametrize("breakage", ["rm -rf .git", "rm -rf .git/objects/pack .git/objects/??",
                                      "rm -f $(command -v git)"])
def test_a_repository_the_agent_broke_is_no_patch_not_an_engine_error(box: DockerSandbox, breakage: str) -> None:
    box.exec("echo '# touched' >> README.md && " + breakage)
    with pytest.raises(NoPatch, match="git diff failed in the sandbox"):
        box.diff()


def test_close_removes_the_container() -> None:
    box = DockerSandbox.start(task_image(smoke_task()), client=client())
    container_id = box.container.id
    assert _exists(container_id)
    box.close()
    box.close()  # idempotent
    assert not _exists(container_id)


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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_container_is_removed_when_the_process_is_interrupted(sig: signal.Signals) -> None:
    script = ("import sys, time\n"
              "from harness.sandbox.docker.sandbox import DockerSandbox\n"
              f"box = DockerSandbox.start({task_image(smoke_task())!r})\n"
              "print(box.container.id, flush=True)\n"
              "box.exec('sleep 300', timeout=600)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    container_id = proc.stdout.readline().strip()
    assert _exists(container_id)
    time.sleep(0.5)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert not _exists(container_id)


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
