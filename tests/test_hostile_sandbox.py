"""What a hostile agent (or patch) does as root in a sandbox must not reach the harness's own commands or
outlive the grader's fenced runs, on every provider this machine has (issue 45):
- a shim for `setpriv` (the tool bwrap once cut root's powers with) and an /etc/profile.d hook: a harness
  command still runs with the kept capabilities only, no_new_privs, no start-up file and none of its
  exports;
- a POSIX message queue and a kernel key made by one fenced run are gone for the next (neither is a file
  the fence's walk of the file system would see unless /dev/mqueue is mounted; the keyring is not
  namespaced at all, so its calls are refused);
- a service on the host's loopback is out of reach, with the network and without it (a sandbox given the
  network reaches the host's other addresses, as anything outside).
Each case failed on the bwrap provider before: the shim left every capability, /dev/mqueue was not
mounted, the keyring calls were allowed, and a sandbox given the network shared the host's.
"""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from harness.grader import isolation
from harness.sandbox.docker import containers
from harness.sandbox.interface import Sandbox, SandboxLimits, harness_exec
from harness.sandbox.providers import provider
from tests.docker_support import bwrap_here, providers_here, smoke_task, task_image
from tests.test_hardening_sandbox import mask

pytestmark = pytest.mark.docker  # the images come from Docker for both providers

# A stand-in for every setpriv the sandbox has: it ignores its options and runs the command as it is.
SHIM = "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\n[ \"$1\" = -- ] && shift\nexec \"$@\"\n"
HOOK = "touch /tmp/profile-hook-ran\nexport PYTHONPATH=/tmp/evil\nexport OPTRUNNER_HOOKED=1\n"
# Python in the sandbox reaching libc (the keyring's syscall numbers are the machine's own).
KEYS = ("import ctypes, platform; libc = ctypes.CDLL(None, use_errno=True); "
        "nr = {'x86_64': (248, 249), 'aarch64': (217, 218)}[platform.machine()]; ")
ADD_KEY = KEYS + ("r = libc.syscall(nr[0], b'user', b'optrunner-cache', b'answer', 6, -4); "
                  "print('add_key', r, ctypes.get_errno())")
FIND_KEY = KEYS + ("r = libc.syscall(nr[1], b'user', b'optrunner-cache', None, -4); "
                   "print('request_key', r, ctypes.get_errno())")
MQ = ("import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); "
      "flags = os.O_RDWR | (os.O_CREAT if sys.argv[1] == 'make' else 0); "
      "fd = libc.mq_open(b'/optrunner-cache', flags, ctypes.c_uint(0o600), None); "
      "print('mq_open', fd, ctypes.get_errno())")


CONNECT = ("import socket, sys\n"
           "for host in sys.argv[2:]:\n"
           "    s = socket.socket(); s.settimeout(5)\n"
           "    try:\n"
           "        s.connect((host, int(sys.argv[1]))); print(host, 'reached', s.recv(16).decode())\n"
           "    except OSError as e:\n"
           "        print(host, 'unreachable', e)\n")


def start(name: str, network: bool = False) -> Sandbox:
    image = task_image(smoke_task())
    if name == "bwrap":
        from harness.sandbox.bwrap import rootfs
        rootfs.export(provider("docker"), image)
    return provider(name).start(image, SandboxLimits(memory="512m", pids=128, network=network))


@pytest.fixture(params=providers_here())
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    sandbox = start(request.param)
    try:
        yield sandbox
    finally:
        sandbox.close()


def test_a_setpriv_shim_and_a_profile_hook_do_not_reach_the_harnesss_commands(box: Sandbox) -> None:
    box.write_files({"/usr/local/bin/setpriv": SHIM, "/etc/profile.d/zz-hook.sh": HOOK})
    planted = box.exec("chmod 755 /usr/local/bin/setpriv && for f in $(which -a setpriv); do "
                       "[ \"$f\" = /usr/local/bin/setpriv ] || cp /usr/local/bin/setpriv \"$f\"; done; "
                       "echo $OPTRUNNER_HOOKED; rm /tmp/profile-hook-ran", timeout=30)
    assert planted.exit_code == 0 and planted.output.strip() == "1", planted.output  # the agent's shell: hooked
    done = harness_exec(box, "cat /proc/self/status; echo \"pythonpath=[$PYTHONPATH] hooked=[$OPTRUNNER_HOOKED]\"; "
                        "test -e /tmp/profile-hook-ran && echo hook-ran", timeout=30, cwd="/")
    fields = dict(re.findall(r"^(\w+):\s*(.*)$", done.output, re.MULTILINE))
    kept = mask(containers.KEPT_CAPS)
    for key in ("CapEff", "CapPrm", "CapBnd"):
        assert int(fields[key], 16) == kept, f"{key}={fields[key]}, expected {kept:016x}"
    assert fields["NoNewPrivs"] == "1"
    assert "pythonpath=[] hooked=[]" in done.output and "hook-ran" not in done.output, done.output


def test_a_new_user_namespace_is_refused_and_threads_still_start(box: Sandbox) -> None:
    """Inside a user namespace of its own a process regains every capability over namespaces it makes:
    refused as under Docker's default profile (unshare, clone with CLONE_NEWUSER). clone3, whose flags
    a filter cannot read, answers ENOSYS, and the C library's threads fall back to clone."""
    done = box.exec("unshare -U true; echo unshare=$?; python3 -c 'import ctypes; libc = ctypes.CDLL(None, "
                    "use_errno=True); print(\"unshare(2)\", libc.unshare(0x10000000), ctypes.get_errno())'; "
                    "python3 -c 'import threading; t = threading.Thread(target=print, args=(\"thread-ran\",)); "
                    "t.start(); t.join()'", timeout=60)
    assert "unshare=0" not in done.output and "unshare(2) -1 1" in done.output, done.output  # (1: EPERM)
    assert "thread-ran" in done.output, done.output


def _fenced(box: Sandbox, fence: isolation.Fence, command: str) -> str:
    done = harness_exec(box, isolation.wrap(fence, command), timeout=120, cwd="/")
    return isolation.parse(done.output)[0]


def test_a_message_queue_or_a_key_made_by_one_fenced_run_is_gone_for_the_next(box: Sandbox) -> None:
    fence = isolation.fence(box, ())
    made = _fenced(box, fence, f"python3 -c \"{MQ}\" make; python3 -c \"{ADD_KEY}\"")
    # the queue is made (it is the fence's wipe that must end it); the key is refused outright or made
    assert re.search(r"^mq_open [0-9]+ ", made, re.MULTILINE), made
    key = re.search(r"^add_key (-?\d+) (\d+)$", made, re.MULTILINE)
    assert key and (int(key[1]) > 0 or int(key[2]) == 1), made  # (1: EPERM, the filter's answer)
    found = _fenced(box, fence, f"python3 -c \"{MQ}\" find; python3 -c \"{FIND_KEY}\"")
    assert re.search(r"^mq_open -1 2$", found, re.MULTILINE), found  # ENOENT: the queue went with the run
    assert re.search(r"^request_key -1 ", found, re.MULTILINE), found


def _outward_address() -> str | None:
    """The host's address on its default route (no packet is sent), or None without one."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("203.0.113.1", 9))
        return str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("name", providers_here())
def test_the_hosts_loopback_is_out_of_reach_with_and_without_the_network(name: str, network: bool) -> None:
    """A host service on every address answers "host" to whoever connects: from inside, 127.0.0.1 is the
    sandbox's own loopback (and 10.0.2.2, bwrap's gateway, is never mapped to the host's); the host's
    outward address is reached exactly when the sandbox has the network."""
    server = socket.create_server(("0.0.0.0", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def answer() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.sendall(b"host")
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    outward = _outward_address()
    box = start(name, network)
    try:
        box.write_file("/tmp/connect.py", CONNECT)
        done = box.exec(f"python3 /tmp/connect.py {port} 127.0.0.1 10.0.2.2 {outward or ''}", timeout=60)
    finally:
        box.close()
        stop.set()
        server.close()
    lines = dict(line.split(" ", 1) for line in done.output.strip().splitlines())
    assert lines["127.0.0.1"].startswith("unreachable") and lines["10.0.2.2"].startswith("unreachable"), done.output
    if outward:
        assert lines[outward].startswith("reached host" if network else "unreachable"), done.output


@pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")
def test_both_bwrap_entry_helpers_cut_the_same_powers_and_say_when_the_init_is_gone() -> None:
    """The compiled helper (enter.c) and the interpreter's (enter.py, where there is no C compiler) leave
    the same: the kept capabilities, no_new_privs, the keyring refused; a sandbox whose init is gone is
    exit 252 (a SandboxError to the caller), never a command's output."""
    from harness.sandbox.bwrap import hardening

    box = start("bwrap")
    init = box._init  # type: ignore[attr-defined]
    compiled = hardening.enter(init, "/")
    helper = hardening._helper("enter")
    assert helper[0].endswith(tuple("0123456789abcdef")), helper  # (this machine has a C compiler)
    prefix = len(hardening.nofile())
    interpreted = [*compiled[:prefix], sys.executable, "-I", "-S", str(hardening.HERE / "enter.py"),
                   *compiled[prefix + len(helper):]]
    probe = ["sh", "-c", f"grep -E '^(CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; python3 -c \"{ADD_KEY}\""]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    try:
        seen = [subprocess.run([*argv, *probe], capture_output=True, text=True, env=env, timeout=60)
                for argv in (compiled, interpreted)]
    finally:
        box.close()
    for done in seen:
        assert done.returncode == 0, done.stderr
        fields = dict(re.findall(r"^(\w+):\s*(.*)$", done.stdout, re.MULTILINE))
        assert int(fields["CapBnd"], 16) == mask(containers.KEPT_CAPS) and fields["NoNewPrivs"] == "1"
        assert fields["Seccomp"] == "2" and "add_key -1 1" in done.stdout, done.stdout
    for argv in (compiled, interpreted):
        gone = subprocess.run([*argv, "true"], capture_output=True, text=True, env=env, timeout=60)
        assert gone.returncode == 252 and "init is gone" in gone.stderr, gone
