"""What every sandbox provider must do, run against each one this machine has (Docker, bubblewrap).

A new provider (Apptainer, a cloud sandbox) joins by being added to `providers_here()` and passing this
module unchanged: exec (exit codes, both output streams, caps, timeouts, binary output), streams, files,
the diff, isolation (no network, the host's files out of reach, other sandboxes invisible), limits, and
cleanup (close, signals, a killed owner's sandboxes found by `cleanup`), with 8 sandboxes at once.
The few lines that must look at a provider from outside (does its container or directory still exist)
are in `Probe`.
"""
from __future__ import annotations

import os
import secrets
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker.errors
import pytest

from harness.grader.states import apply_patch
from harness.sandbox.interface import FileChanged, Listenable, NoPatch, Sandbox, SandboxError, SandboxLimits
from harness.sandbox.providers import provider
from tests.docker_support import client, providers_here, smoke_task, task_image

ROOT = Path(__file__).resolve().parents[1]
PORT = 39217  # (a port inside each sandbox's own network namespace)
pytestmark = pytest.mark.docker  # the images come from Docker for both providers


# What the opt-in unsandboxed provider (plain processes of the host, run by root) cannot meet, by case: it is
# listed in every run of this module (skipped with the reason), and docs/sandbox.md shows the same list.
UNMET = {"unsandboxed": {
    "test_exec_basics": "a login shell runs as the state's own user, not root (root runs the grader's commands, "
                        "which have no login shell)",
    "test_streams_with_and_without_a_terminal": "no streams: a long-lived process would see the fixed paths "
                                                "pointed at other states (callers fall back to exec)",
    "test_no_network": "no network namespace: commands reach whatever the host reaches",
    "test_the_hosts_files_are_out_of_reach": "the host's files are the state's: every user reads what the host "
                                             "lets any user read",
    "test_the_hosts_device_nodes_are_out_of_reach": "no device cut: every device node the host opens to all users",
    "test_other_sandboxes_are_invisible": "one process table and one /tmp: other states' processes are visible",
    "test_a_port_inside_the_sandbox_is_served_from_outside_and_reached_from_nowhere_else": "one loopback: a port is "
                                                                                         "the host's",
    "test_memory_hog_is_killed_and_sandbox_survives": "no memory limit (no cgroup of its own)",
    "test_fork_bomb_is_contained": "no process limit (no cgroup of its own)",
    "test_eight_sandboxes_at_once": "one /tmp for all states, and commands of all states run one at a time",
    "test_each_scaffold_runs_the_oracle_to_the_expert_patch": "agents' rollouts are refused unless "
                                                              "sandbox.allow_unsandboxed is set",
    "test_files_round_trip": "files only under the state's fixed paths (/testbed, /hidden_tests, ...): /tmp is the "
                             "host's",
    "test_a_file_a_process_keeps_rewriting_is_read_whole_or_not_at_all": "files only under the state's fixed "
                                                                          "paths: /tmp is the host's",
    "test_a_repository_the_agent_broke_is_no_patch_not_an_engine_error": "the agent's user cannot break it: .git is "
                                                                         "root's, git the host's",
    "test_freezable_sees_from_outside_what_the_sandbox_did": "the agent's user writes the state's folders and the "
                                                             "host's shared ones only (not /var/cache)",
    # (the cases of other modules that take this module's `name` fixture)
    "test_a_sandbox_its_processes_ended_is_told_from_one_ended_from_outside": "no keep-alive: a state ends when it "
                                                                              "is closed, not by its processes",
    "test_a_sparse_gigabyte_is_read_up_to_the_cap_and_no_further": "files only under the state's fixed paths: /tmp "
                                                                   "is the host's",
    "test_an_installed_agents_sparse_log_is_kept_cut": "installed agents need a task image",
    "test_a_reward_file_over_its_cap_is_no_reward": "folder tasks only: no Harbor verifier's /logs",
}}


def _here() -> list[str]:
    return providers_here() + (["unsandboxed"] if os.geteuid() == 0 else [])


@pytest.fixture(params=_here())
def name(request: pytest.FixtureRequest) -> str:
    why = UNMET.get(str(request.param), {}).get(request.node.originalname)
    if why:
        pytest.skip(f"{request.param} cannot meet this case: {why}")
    return str(request.param)


def image_for(name: str) -> str:
    if name == "unsandboxed":  # (its own image: the task's folder over the host)
        return provider(name).ensure_images([smoke_task()], rootfs_from="host", progress=lambda _m: None)[
            smoke_task().id].grading
    image = task_image(smoke_task())
    if name == "bwrap":  # the exported directory of the same image (once per image id)
        from harness.sandbox.bwrap import rootfs
        rootfs.export(provider("docker"), image)
    return image


def start(name: str, **limits: object) -> Sandbox:
    return provider(name).start(image_for(name), SandboxLimits(**limits))  # type: ignore[arg-type]


@pytest.fixture
def box(name: str) -> Iterator[Sandbox]:
    sandbox = start(name, memory="256m", pids=64, max_output_bytes=200_000)
    try:
        yield sandbox
    finally:
        sandbox.close()


class Probe:
    """Whether a provider's sandbox still exists, looked at from the host."""

    @staticmethod
    def handle(box: Sandbox) -> str:
        container = getattr(box, "container", None)
        if container is not None:
            return str(container.id)
        if getattr(box, "builder", None) is not None:  # (unsandboxed: its folder and its users)
            return f"{box.directory}|users|{box.builder}|{box.run_uid}"  # type: ignore[attr-defined]
        return f"{box.directory}|{box._pidns}"  # type: ignore[attr-defined]

    @staticmethod
    def exists(name: str, handle: str) -> bool:
        if name == "docker":
            try:
                client().containers.get(handle)
                return True
            except docker.errors.NotFound:
                return False
        if name == "unsandboxed":
            from harness.sandbox.unsandboxed import state
            directory, _, _, *uids = handle.split("|")
            return Path(directory).exists() or any(state.pids_of(int(uid)) for uid in uids)
        from harness.sandbox.bwrap.outside import pids_in
        directory, _, pidns = handle.partition("|")
        return Path(directory).exists() or any(True for _ in pids_in(int(pidns)))

    @staticmethod
    def limits_enforced(name: str) -> bool:
        if name == "docker":
            return True
        from harness.sandbox.bwrap import cgroups
        return cgroups.available()


# ---------------------------------------------------------------- exec
def test_exec_basics(box: Sandbox) -> None:
    done = box.exec("echo out; echo err >&2; pwd; echo $FOO; exit 3", env={"FOO": "bar"})
    assert done.exit_code == 3 and not done.timed_out
    # stdout and stderr are separate pipes: both arrive, their relative order is not defined
    assert sorted(done.output.split()) == ["/testbed", "bar", "err", "out"]
    assert box.exec("pwd", cwd="/tmp").output.strip() == "/tmp"
    assert box.exec("whoami").output.strip() == "root"


def test_timeout_stops_the_command_inside_the_sandbox(box: Sandbox) -> None:
    done = box.exec("echo started; sleep 100; echo never", timeout=2)
    assert done.timed_out and done.exit_code in (124, 137)
    assert 1.9 <= done.duration < 6
    assert "started" in done.output and "never" not in done.output
    left = box.exec("ps -eo stat,args | grep 'sleep 10[0]' || true").output
    assert left.strip() == "", f"sleep survived its timeout: {left}"


def test_large_and_binary_output(box: Sandbox) -> None:
    big = box.exec("head -c 5000000 /dev/zero | tr '\\0' 'a'; echo; echo END")
    assert big.truncated and big.output.endswith("END\n")
    assert len(big.output.encode()) < 210_000
    binary = box.exec("head -c 4096 /dev/urandom; printf '\\xff\\xfe done'")
    assert binary.exit_code == 0 and binary.output.endswith("done")


def test_streams_with_and_without_a_terminal(box: Sandbox) -> None:
    from harness.sandbox.interface import pin_if_possible

    pin_if_possible(box, "0")  # pinned, as a Ray node pins its rollouts (a bwrap stream once lost its child)
    for tty in (True, False):
        stream = box.open_stream(["bash", "--noprofile", "--norc", "-i" if tty else "-s"], tty=tty)
        try:
            stream.send(b"echo marker-$((40 + 2))\n")
            seen, deadline = b"", time.monotonic() + 10
            while b"marker-42" not in seen and time.monotonic() < deadline:
                seen += stream.recv(0.5)
            assert b"marker-42" in seen, (tty, seen)
            stream.send(b"exit 7\n")
            deadline = time.monotonic() + 10
            while stream.exit_code() is None and time.monotonic() < deadline:
                try:
                    stream.recv(0.2)
                except EOFError:
                    pass
            assert stream.exit_code() == 7
        finally:
            stream.close()


# ---------------------------------------------------------------- files and the diff
def test_files_round_trip(box: Sandbox) -> None:
    payload = bytes(range(256)) * 10
    box.write_file("/tmp/deep/dir/blob.bin", payload)
    assert box.read_file("/tmp/deep/dir/blob.bin") == payload
    box.write_file("notes.txt", "héllo\n")  # relative paths land in /testbed
    assert box.exec("cat /testbed/notes.txt").output == "héllo\n"
    with pytest.raises(FileNotFoundError):
        box.read_file("/nope/missing")
    with pytest.raises(IsADirectoryError):
        box.read_file("/tmp")
    with pytest.raises(NotADirectoryError):  # the caller's mistake (an agent's editor call), not the engine's
        box.write_file("/testbed/notes.txt/inside.txt", "x")
    with pytest.raises(NotADirectoryError):
        box.write_file("/testbed/notes.txt/deeper/inside.txt", "x")
    box.write_files({"/tmp/many/a/one.py": payload, "/tmp/many/two.txt": "zwei\n", "three.txt": b"3"})
    assert box.read_file("/tmp/many/a/one.py") == payload and box.read_file("/tmp/many/two.txt") == b"zwei\n"
    assert box.exec("cat /testbed/three.txt && stat -c %a /tmp/many/a").output == "3755\n"
    large = os.urandom(8 << 20)
    box.write_file("/tmp/large.bin", large)
    assert box.read_file("/tmp/large.bin") == large
    box.exec("echo secret > /tmp/private && chmod 600 /tmp/private && chmod 751 /tmp/deep")
    assert box.exec("stat -c %a /tmp/private /tmp/deep").output.split() == ["600", "751"]
    assert box.exec("setpriv --reuid=65534 --regid=65534 --clear-groups cat /tmp/private").exit_code != 0


def test_a_file_a_process_keeps_rewriting_is_read_whole_or_not_at_all(box: Sandbox) -> None:
    # (a daemon a patch left behind rewriting the reward file: Docker's archive of it is cut short about one
    # read in twelve here; read_file reads again, and says FileChanged rather than failing inside tarfile)
    box.exec("setsid sh -c 'while :; do head -c 300000 /dev/zero > /tmp/busy; done' >/dev/null 2>&1 </dev/null &")
    wait_until = time.monotonic() + 10
    while box.exec("test -s /tmp/busy").exit_code != 0 and time.monotonic() < wait_until:
        time.sleep(0.1)
    for _ in range(40):
        try:
            data = box.read_file("/tmp/busy")
        except FileChanged:
            continue
        assert set(data) <= {0} and len(data) <= 300_000


def test_diff_round_trips_through_git_apply_on_a_fresh_sandbox(name: str, box: Sandbox) -> None:
    box.exec("printf 'new file\\n' > added.txt && rm README.md && echo '# touched' >> $(git ls-files '*.py' | head -1)")
    box.exec("mkdir -p pkg_cache/__pycache__ && echo x > pkg_cache/__pycache__/m.pyc")
    box.exec("printf '\\x00\\x01binary' > blob.bin")  # a NUL byte: binary to git
    box.exec("git add -A && git -c user.name=a -c user.email=a@a commit -qm agent")  # agent commits: irrelevant
    patch = box.diff()
    assert "added.txt" in patch and "README.md" in patch
    assert "__pycache__" not in patch and "blob.bin" not in patch
    fresh = start(name)
    try:
        apply_patch(fresh, patch)
        assert fresh.exec("cat added.txt").output == "new file\n"
        assert fresh.exec("test -e README.md").exit_code == 1
        assert fresh.diff() == patch
    finally:
        fresh.close()


def test_diff_ignores_the_agents_git_configuration_and_hooks(box: Sandbox) -> None:
    box.exec("echo '# touched' >> README.md")
    honest = box.diff()
    box.exec("git config diff.external /bin/false && git config diff.noprefix true && "
             "git config core.fsmonitor 'echo broken; exit 1' && git config core.hooksPath /nowhere && "
             "git config filter.x.clean false && echo '* filter=x' > .git/info/attributes && "
             "git config --global diff.external /bin/false && git config --global diff.mnemonicPrefix true")
    assert box.diff() == honest and honest.startswith("diff --git a/README.md b/README.md")


@pytest.mark.parametrize("breakage", ["rm -rf .git", "rm -rf .git/objects/pack .git/objects/??",
                                      "rm -f $(command -v git)"])
def test_a_repository_the_agent_broke_is_no_patch_not_an_engine_error(box: Sandbox, breakage: str) -> None:
    box.exec("echo '# touched' >> README.md && " + breakage)
    with pytest.raises(NoPatch, match="git diff failed in the sandbox"):
        box.diff()


# ---------------------------------------------------------------- isolation and limits
def test_no_network(box: Sandbox) -> None:
    probe = "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\""
    done = box.exec(probe, timeout=20)
    assert done.exit_code != 0 and "Network is unreachable" in done.output


def test_the_hosts_files_are_out_of_reach(box: Sandbox, tmp_path: Path) -> None:
    marker = tmp_path / f"host-{secrets.token_hex(4)}"
    marker.write_text("host\n")
    assert box.exec(f"cat {marker}").exit_code != 0  # not visible inside
    box.exec(f"mkdir -p {tmp_path} && echo sandbox > {marker}; echo x >> /etc/hostname")
    assert marker.read_text() == "host\n"  # and writing there changes nothing here
    assert "x" not in Path("/etc/hostname").read_text().split()


DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/tty")


def test_the_hosts_device_nodes_are_out_of_reach(box: Sandbox) -> None:
    """Root inside may use the device nodes but not change the host's (bwrap binds the host's own)."""
    before = {dev: os.stat(dev) for dev in DEVICES if os.path.exists(dev)}
    try:
        done = box.exec("echo x > /dev/null && head -c 4 /dev/zero | wc -c && "
                        + "; ".join(f"chmod 600 {dev} 2>/dev/null; chown 1:1 {dev} 2>/dev/null" for dev in before)
                        + "; stat -c %a /dev/shm")
        assert done.output.split()[0] == "4" and done.output.split()[-1] == "1777", done.output  # /dev/shm as Docker's
        for dev, was in before.items():
            now = os.stat(dev)
            assert (now.st_mode, now.st_uid, now.st_gid) == (was.st_mode, was.st_uid, was.st_gid), dev
    finally:  # (a provider that fails this must not leave this machine's devices changed)
        for dev, was in before.items():
            now = os.stat(dev)
            if (now.st_mode, now.st_uid, now.st_gid) != (was.st_mode, was.st_uid, was.st_gid):
                os.chmod(dev, stat.S_IMODE(was.st_mode))
                os.chown(dev, was.st_uid, was.st_gid)


def test_other_sandboxes_are_invisible(name: str, box: Sandbox) -> None:
    other = start(name)
    try:
        other.exec("(setsid sleep 4321 > /dev/null 2>&1 &) ; echo only-in-other > /tmp/mine")
        assert "sleep 4321" not in box.exec("ps -eo args").output
        assert box.exec("cat /tmp/mine").exit_code != 0
    finally:
        other.close()


CONNECT = ("python3 -c \"import socket, sys; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); "
           "s.sendall(b'ping'); print(s.recv(64).decode())\"")


def test_a_port_inside_the_sandbox_is_served_from_outside_and_reached_from_nowhere_else(name: str,
                                                                                        box: Sandbox) -> None:
    """`Listenable`: how an installed agent reaches the run's model gateway with the network cut."""
    assert isinstance(box, Listenable)
    listener = box.listen(PORT)
    answered: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            answered.append(conn.recv(64))
            conn.sendall(b"pong from outside")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        done = box.exec(CONNECT.format(port=PORT), timeout=30)
        assert done.exit_code == 0 and done.output.strip() == "pong from outside", done.output
        server.join(5)
        assert answered == [b"ping"]
        # not on the host's loopback, not in another sandbox (each has its own namespace)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        other = start(name)
        try:
            assert other.exec(CONNECT.format(port=PORT), timeout=30).exit_code != 0
        finally:
            other.close()
        with pytest.raises(SandboxError, match="port"):  # taken there already: one clear error
            box.listen(PORT)
    finally:
        listener.close()


def test_memory_hog_is_killed_and_sandbox_survives(name: str, box: Sandbox) -> None:
    if not Probe.limits_enforced(name):
        pytest.skip("this machine gives the provider no cgroup for limits (it says so once at run time)")
    done = box.exec("python3 -c \"x = bytearray(1024 * 1024 * 1024)\"", timeout=60)
    assert done.exit_code == 137 and not done.timed_out
    assert box.exec("echo alive").output == "alive\n"


def test_fork_bomb_is_contained(name: str, box: Sandbox) -> None:
    if not Probe.limits_enforced(name):
        pytest.skip("this machine gives the provider no cgroup for limits (it says so once at run time)")
    done = box.exec("bomb() { bomb | bomb & }; bomb; sleep 3", timeout=5)
    assert "Resource temporarily unavailable" in done.output  # the pids limit was hit
    for _ in range(20):  # the bomb's processes die with their process group
        if box.exec("echo alive", timeout=10).output == "alive\n":
            break
        time.sleep(0.5)
    else:
        pytest.fail("sandbox did not recover from the fork bomb")
    host = subprocess.run(["bash", "-c", "echo ok"], capture_output=True, text=True)
    assert host.stdout == "ok\n"  # and the host can still fork


def test_eight_sandboxes_at_once(name: str) -> None:
    def one(i: int) -> tuple[str, str]:
        sandbox = start(name)
        try:
            sandbox.exec(f"echo {i} > /tmp/who")
            return Probe.handle(sandbox), sandbox.exec("cat /tmp/who; ls /tmp").output
        finally:
            sandbox.close()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(8)))
    for i, (handle, output) in enumerate(results):
        assert output.split()[0] == str(i) and output.split().count("who") == 1
        assert not Probe.exists(name, handle)


# ---------------------------------------------------------------- cleanup
def test_close_removes_the_sandbox(name: str) -> None:
    sandbox = start(name)
    handle = Probe.handle(sandbox)
    assert Probe.exists(name, handle)
    sandbox.exec("(setsid sleep 600 > /dev/null 2>&1 &)")
    sandbox.close()
    sandbox.close()  # idempotent
    assert not Probe.exists(name, handle)
    with pytest.raises(SandboxError, match="closed"):
        sandbox.exec("true")


_CHILD = """import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job starts with it ignored
from harness.sandbox.interface import SandboxLimits
from harness.sandbox.providers import provider
box = provider(sys.argv[1]).start(sys.argv[2], SandboxLimits())
handle = getattr(box, "container", None)
print(handle.id if handle is not None else f"{box.directory}|users|{box.builder}|{box.run_uid}"
      if hasattr(box, "builder") else f"{box.directory}|{box._pidns}", flush=True)
box.exec("sleep 300", timeout=600)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_sandbox_outlives_no_signal_to_its_owner(name: str, sig: signal.Signals) -> None:
    # SIGINT and SIGTERM: the owner removes its sandboxes on the way out; SIGKILL: the next cleanup does.
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, name, image_for(name)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    handle = proc.stdout.readline().strip()
    assert Probe.exists(name, handle)
    time.sleep(0.5)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    if sig == signal.SIGKILL:
        assert Probe.exists(name, handle)
        # (the next cleanup ends it: this one, or another process's run starting meanwhile, which sweeps the
        # machine's orphans too, so how many this call removed is not asserted)
        provider(name).cleanup("orphans")
    assert not Probe.exists(name, handle)


# ---------------------------------------------------------------- the scaffolds on each provider
@pytest.mark.parametrize("scaffold", ["codeact", "mini_swe", "terminus"])
def test_each_scaffold_runs_the_oracle_to_the_expert_patch(name: str, scaffold: str, tmp_path: Path) -> None:
    # codeact's persistent shell and editor, mini_swe's fresh processes, terminus's tmux: the same episode
    # as on Docker (its image exported to a directory for bwrap).
    from harness.tasks.folder import load_task
    from scaffolds import make_scaffold
    from scaffolds.limits import Limits
    from tests.conftest import write_task
    from tests.scaffold_support import bound_model, same_effect

    tiny = load_task(write_task(tmp_path))
    image = task_image(tiny)
    if name == "bwrap":
        from harness.sandbox.bwrap import rootfs
        rootfs.export(provider("docker"), image)
    options = {"max_duration_s": 0.3} if scaffold == "terminus" else {}
    with provider(name).start(image, SandboxLimits()) as sandbox:
        episode = make_scaffold(scaffold, options).run(tiny, sandbox, bound_model("scripted/oracle", tiny),
                                                       Limits(snapshot_every=0))
        assert episode.exit_reason == "submitted", episode.exit_message
        assert same_effect(tiny, sandbox.diff(), tiny.expert_patch)


# ---------------------------------------------------------------- Freezable: the grader's view from outside
def test_freezable_sees_from_outside_what_the_sandbox_did(box: Sandbox, tmp_path: Path) -> None:
    from harness.sandbox.interface import Freezable

    assert isinstance(box, Freezable)
    box.write_files({"/hidden_tests/test_a.py": "a\n", "/hidden_tests/refs/r1": b"\x00ref"})
    box.exec("rm README.md && mkdir -p /var/cache/zz && echo 1 > /var/cache/zz/f && "
             "ln -s /etc/passwd /hidden_tests/test_link.py && (setsid sleep 777 > /dev/null 2>&1 &)")
    changed = box.changed_paths()
    for path in ("/hidden_tests/test_a.py", "/hidden_tests/refs/r1", "/testbed/README.md", "/var/cache/zz/f"):
        assert path in changed, (path, changed)
    assert "/var/cache" not in changed and "/hidden_tests" not in changed  # the deepest paths only
    # merged, from the layers or the engine, never through the sandbox's link
    assert box.read_tree("/hidden_tests") == {"test_a.py": b"a\n", "refs/r1": b"\x00ref"}
    assert box.read_tree("/nowhere") == {}
    # Seen within a few seconds: once (one make test run in many) Docker's listing missed the process right
    # after the command returned, and the cause was not found; a provider that never lists it still fails.
    seen = [box.processes()]
    deadline = time.monotonic() + 5
    while not any("sleep 777" in line for line in seen[-1]) and time.monotonic() < deadline:
        time.sleep(0.2)
        seen.append(box.processes())
    assert any("sleep 777" in line for line in seen[-1]), seen
    box.restart()
    assert box.processes() == [] and box.exec("cat /hidden_tests/test_a.py").output == "a\n"
