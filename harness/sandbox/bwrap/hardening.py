"""What a bubblewrap sandbox's root may do: the capabilities it keeps, no new privileges, open files.

bwrap itself drops its init's capabilities (`--cap-drop ALL`, then CAPS back) and sets its no_new_privs.
But every command joins a running sandbox from the host, and joining a user namespace gives a process
every capability in it (and nothing of the init's). So each command is started through
- the host's prlimit (`nofile`): rlimits survive the join and exec;
- the entry helper (`enter`: enter.c compiled by the host's C compiler once, else enter.py run by the
  host's interpreter), which joins the namespaces, takes all but CAPS out of the bounding set, sets
  no_new_privs and loads the seccomp filter (seccomp.py) before it execs the command: nothing of the sandbox's runs
  until then, so no file the sandbox's root wrote can undo it.
"""
from __future__ import annotations

import hashlib
import os
import resource
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path

from harness.sandbox.bwrap import seccomp
from harness.sandbox.bwrap.outside import state_folder

# What root in a sandbox keeps: what the grader's fence does as root, as in Docker's sandboxes
# (harness.sandbox.docker.containers.KEPT_CAPS, which says why each). The rest (CAP_SYS_ADMIN: mounts and
# namespaces of its own, ...) goes: worth nothing on the host, but each is kernel surface.
CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
        "CAP_NET_BIND_SERVICE")
NOFILE = 16384  # open files per process (soft and hard), as in Docker's sandboxes (containers.NOFILE)


def cap_args() -> list[str]:
    """bwrap's arguments for its init's capabilities."""
    return ["--cap-drop", "ALL", *[arg for cap in CAPS for arg in ("--cap-add", cap)]]


@cache  # (every command goes through it; the host's programs and limits stay)
def nofile() -> tuple[str, ...]:
    """The host's prlimit setting the open-files limit of what follows: at most this process's own hard
    limit (another user cannot raise it); nothing where prlimit is missing."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return ()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    limit = NOFILE if hard == resource.RLIM_INFINITY else min(NOFILE, hard)
    return (prlimit, f"--nofile={limit}:{limit}", "--")


HERE = Path(__file__).parent
CAP_NUMBERS = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_KILL": 5, "CAP_SETGID": 6,
               "CAP_SETUID": 7, "CAP_NET_BIND_SERVICE": 10}  # (linux/capability.h)
CACHE = state_folder() / "bin"  # the compiled helpers and the seccomp program


def enter(init: int, cwd: str) -> list[str]:
    """The host command that runs what follows it in the sandbox of `init` (a host pid), in `cwd`, as its
    root with CAPS only, no_new_privs and the seccomp filter. Run by another user, that user's ids are
    kept (root inside: the only ones mapped) rather than set, which its user namespace denies."""
    creds = "root" if os.geteuid() == 0 else "keep"
    keep = ",".join(str(CAP_NUMBERS[cap]) for cap in CAPS)
    return [*nofile(), *_helper("enter"), str(init), cwd, keep, creds, _filter_file(), "--"]


def launch(views: str, base: int, count: int, specs: list[str]) -> list[str]:
    """The host command (root's) that starts what follows it (bwrap) as root of a user namespace of its own
    whose ids are the host's `base`.. (`count` of them), with `specs` shown at `views` (launch.c says how)."""
    return [*_helper("launch"), views, str(base), str(count), *specs, "--"]


_building = threading.Lock()  # (one build per process: threads starting sandboxes at once wait for it)


def _helper(name: str) -> tuple[str, ...]:
    with _building:
        return _found_helper(name)


@cache
def _filter_file() -> str:
    """The seccomp program's file (written once per program)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    program = seccomp.program(os.uname().machine)
    filter_file = CACHE / f"seccomp-{hashlib.sha256(program).hexdigest()[:12]}.bpf"
    if not filter_file.exists():
        _write_once(filter_file, lambda tmp: tmp.write_bytes(program))
    return str(filter_file)


@cache
def _found_helper(name: str) -> tuple[str, ...]:
    """The command of helper `name` (enter, launch): its C source compiled into CACHE once per source (a
    few milliseconds a command), else its Python twin by this interpreter (tens of milliseconds)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    source = HERE / f"{name}.c"
    binary = CACHE / f"{name}-{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}"
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not binary.exists() and compiler:
        def build(tmp: Path) -> None:
            subprocess.run([compiler, "-O2", "-o", str(tmp), str(source)], check=True, capture_output=True,
                           timeout=120)
        try:
            _write_once(binary, build)
        except (subprocess.SubprocessError, OSError):
            pass
    if binary.exists():
        return (str(binary),)
    return (sys.executable, "-I", "-S", str(HERE / f"{name}.py"))


def _write_once(target: Path, make: Callable[[Path], object]) -> None:
    """`target` made through a temporary file renamed into place (two processes may race for it)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        make(tmp)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
