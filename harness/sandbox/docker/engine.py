"""Make sure a Docker engine answers; set one up (and the host tools image builds use) on Debian-as-root.

Only an explicit setup installs or starts anything: `make docker` (which runs this module), `optrunner
setup` and the test and bench harnesses. A run only checks (`ensure_engine(start=False)`) and, when no
engine answers, says in one line what to run instead.

Standard library only (and the interface's errors, also standard library), so `make` can run it before
the virtualenv exists:
    python3 -m harness.sandbox.docker.engine
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness.sandbox.interface import SandboxUnavailable

WAIT_SECONDS = 60
LOG = Path("/var/log/dockerd-harness.log")


class DockerUnavailable(SandboxUnavailable):
    """The engine is not running and this machine cannot start it for us."""


def engine_answers() -> bool:
    if not shutil.which("docker"):
        return False
    probe = subprocess.run(["docker", "info"], capture_output=True, timeout=30)
    return probe.returncode == 0


def _is_debian_root() -> bool:
    return os.geteuid() == 0 and Path("/etc/debian_version").exists()


def _say(msg: str) -> None:
    print(f"[docker] {msg}", file=sys.stderr, flush=True)


def _apt_install(package: str, why: str) -> None:
    _say(f"installing {package} with apt-get ({why})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", package]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise DockerUnavailable(f"'{' '.join(cmd)}' failed: {tail[0]}")


def _start_daemon() -> None:
    _say(f"starting dockerd in the background (log: {LOG})")
    log = open(LOG, "ab")
    # start_new_session: the daemon must outlive make/pytest and ignore their Ctrl-C.
    subprocess.Popen(["dockerd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)


SETUP_HINT = ("run 'optrunner setup' (or 'make docker') to install and start one, or start Docker yourself; "
              "with no Docker, bubblewrap over this host's system: sandbox=bwrap sandbox.rootfs=host "
              "(grading commands: --provider bwrap --rootfs host)")


def ensure_engine(wait_seconds: float = WAIT_SECONDS, start: bool = True) -> str:
    """Return a short description of what was done; raise DockerUnavailable with a one-line reason.
    `start=False` (a run) only checks: installing or starting an engine is for an explicit setup."""
    if engine_answers():
        return "engine already running"
    if not start:
        reason = "cannot reach a Docker engine ('docker info' failed)"
        raise DockerUnavailable(f"{reason}: {SETUP_HINT}", reason)
    if not _is_debian_root():
        raise DockerUnavailable(
            "cannot reach a Docker engine ('docker info' failed): start Docker (e.g. 'sudo systemctl start docker') "
            "or give this user access to it, then retry"
        )
    if not shutil.which("dockerd"):
        _apt_install("docker.io", "engine missing")
    if not engine_answers():
        _start_daemon()
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if engine_answers():
            return "engine started"
        time.sleep(1)
    raise DockerUnavailable(f"dockerd did not answer within {wait_seconds:.0f}s; see {LOG}")


def ensure_host_tools() -> None:
    """debootstrap builds the base image where no registry answers (harness.sandbox.docker.images)."""
    if not shutil.which("debootstrap") and _is_debian_root():
        _apt_install("debootstrap", "base images without a registry")


def setup() -> str:
    """Everything Docker sandboxes need on this machine: a running engine and the host's image tools."""
    done = ensure_engine()
    ensure_host_tools()
    return done


def main() -> int:
    try:
        _say(setup())
    except DockerUnavailable as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
