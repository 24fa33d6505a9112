"""The network of a bubblewrap sandbox that may use it: a namespace of its own with a user-mode uplink.

A sandbox given the network (a `rootfs=host` build, Harbor's `allow_internet`, `sandbox.network=true`) no
longer shares the host's network namespace, where every service on the host's loopback (a Ray dashboard,
a model server, another rollout's gateway) answered it as root. It gets its own, like every sandbox, and
`slirp4netns` (Debian's package) connects it to the outside through sockets of the host's: a tap device
with 10.0.2.100, the gateway 10.0.2.2 (never mapped to the host's loopback: `--disable-host-loopback`) and
a DNS forwarder at 10.0.2.3, which the sandbox's /etc/resolv.conf names. So the sandbox reaches what the
host reaches on its other interfaces, and never the host's loopback. slirp4netns exits with the process
that started it (`--exit-fd`: a pipe only that process holds), and a cleanup ends it by its record.
(pasta, of Debian's passt 2023-03, drops to `nobody` before it opens the namespace: it cannot serve one
that root made.)

Without slirp4netns, a sandbox that asked for the network has none (its own loopback only), and the run
says so once: a build step that needed it fails naming that step.
"""
from __future__ import annotations

import os
import shutil
import select
import signal
import subprocess
import sys
from pathlib import Path

from harness.sandbox.bwrap.outside import command_line, host_env
from harness.sandbox.interface import SandboxError

READY_TIMEOUT = 10.0
RESOLV_CONF = "nameserver 10.0.2.3\n"  # slirp4netns's DNS forwarder
_warned: list[bool] = []


def namespace(directory: Path, network: bool) -> list[str]:
    """bwrap's arguments for a sandbox's network: a namespace of its own always, and given the network, the
    resolver the uplink serves (a file in the sandbox's `directory`) as its /etc/resolv.conf."""
    if not network:
        return ["--unshare-net"]
    (directory / "resolv.conf").write_text(RESOLV_CONF)
    return ["--unshare-net", "--ro-bind", str(directory / "resolv.conf"), "/etc/resolv.conf"]


class Uplink:
    """A running slirp4netns for one sandbox; `stop` ends it."""

    def __init__(self, proc: subprocess.Popen[bytes], exit_w: int) -> None:
        self.proc, self._exit_w = proc, exit_w
        self.pid = proc.pid

    def stop(self) -> None:
        if self._exit_w >= 0:
            os.close(self._exit_w)  # (its --exit-fd: it ends by itself; the kill is for one that hangs)
            self._exit_w = -1
        stop(self.pid)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


def start(init: int, directory: Path) -> Uplink | None:
    """slirp4netns serving the network namespace of `init` (a host pid); None (and a warning, once) where
    it is missing."""
    binary = shutil.which("slirp4netns")
    if binary is None:
        if not _warned:
            _warned.append(True)
            print("bwrap: a sandbox asked for the network, but slirp4netns is not installed (apt-get install "
                  "slirp4netns): it runs without one", file=sys.stderr)
        return None
    exit_r, exit_w = os.pipe()
    ready_r, ready_w = os.pipe()
    joins = [] if os.geteuid() == 0 else [f"--userns-path=/proc/{init}/ns/user"]
    argv = [binary, "--configure", "--mtu=65520", "--disable-host-loopback", f"--exit-fd={exit_r}",
            f"--ready-fd={ready_w}", *joins, str(init), "tap0"]
    try:
        with open(directory / "uplink.log", "wb") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=host_env(),
                                    pass_fds=(exit_r, ready_w), start_new_session=True)
    except BaseException:
        os.close(exit_w)
        os.close(ready_r)
        raise
    finally:
        os.close(exit_r)
        os.close(ready_w)
    link = Uplink(proc, exit_w)
    try:
        ready, _, _ = select.select([ready_r], [], [], READY_TIMEOUT)
        if ready and os.read(ready_r, 1) == b"1":
            return link
    finally:
        os.close(ready_r)
    link.stop()
    tail = (directory / "uplink.log").read_text(errors="replace").strip().splitlines()
    raise SandboxError(f"bwrap: the sandbox's network did not come up: {(tail or ['no output'])[-1][:200]}")


def stop(pid: int) -> None:
    """End the slirp4netns process `pid`, if that pid is still one (pids are reused). Its parent reaps it."""
    if pid > 0 and Path(command_line(pid).split(" ")[0]).name == "slirp4netns":
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
