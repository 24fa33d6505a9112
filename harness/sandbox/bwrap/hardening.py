"""What a bubblewrap sandbox's root may do: the capabilities it keeps, no new privileges, open files.

bwrap itself drops its init's capabilities (`--cap-drop ALL`, then CAPS back) and sets its no_new_privs.
But every command joins a running sandbox from the host, and joining a user namespace gives a process
every capability in it (and nothing of the init's). So each command is started through
- the host's prlimit (`nofile`): rlimits survive the join and exec;
- `enter.py`, run by the host's interpreter, which joins the namespaces, takes all but CAPS out of the
  bounding set, sets no_new_privs and loads the keyring filter before it execs the command: nothing of
  the sandbox's runs until then, so no file the sandbox's root wrote can undo it (`enter`).
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
from functools import cache
from pathlib import Path

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


ENTER = str(Path(__file__).with_name("enter.py"))
CAP_NUMBERS = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_KILL": 5, "CAP_SETGID": 6,
               "CAP_SETUID": 7, "CAP_NET_BIND_SERVICE": 10}  # (linux/capability.h)


def enter(init: int, cwd: str) -> list[str]:
    """The host command that runs what follows it in the sandbox of `init` (a host pid), in `cwd`, as its
    root with CAPS only, no_new_privs and the keyring filter (enter.py). Run by another user, that user's
    ids are kept (root inside: the only ones mapped) rather than set, which its user namespace denies."""
    creds = "root" if os.geteuid() == 0 else "keep"
    keep = ",".join(str(CAP_NUMBERS[cap]) for cap in CAPS)
    return [*nofile(), sys.executable, "-I", "-S", ENTER, str(init), cwd, keep, creds, "--"]
