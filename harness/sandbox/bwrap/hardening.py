"""What a bubblewrap sandbox's root may do: the capabilities it keeps, no new privileges, open files.

bwrap itself drops its init's capabilities (`--cap-drop ALL`, then CAPS back) and sets its no_new_privs.
But every command joins a running sandbox through nsenter, and joining a user namespace gives a process
every capability in it (and nothing of the init's). So each command is started through
- the host's prlimit (`nofile`): rlimits survive nsenter and exec;
- the sandbox's own setpriv (`inside`, util-linux: in every Debian image), which takes all but CAPS out of
  the bounding set and sets no_new_privs before the command runs: after that exec, root holds CAPS only;
- where the sandbox has no setpriv, the host's (`outside`), for no_new_privs alone (it survives nsenter);
  the capabilities then stay, and the sandbox says so (`BwrapSandbox.hardened`).
"""
from __future__ import annotations

import resource
import shutil
from functools import cache

# What root in a sandbox keeps: what the grader's fence does as root, as in Docker's sandboxes
# (harness.sandbox.docker.containers.KEPT_CAPS, which says why each). The rest (CAP_SYS_ADMIN: mounts and
# namespaces of its own, ...) goes: worth nothing on the host, but each is kernel surface.
CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
        "CAP_NET_BIND_SERVICE")
NOFILE = 16384  # open files per process (soft and hard), as in Docker's sandboxes (containers.NOFILE)
PROBE = "command -v setpriv"  # run in the sandbox (sh -c) once it runs: whether `inside` can be used


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


def inside() -> list[str]:
    """The sandbox's setpriv, leaving root CAPS only and setting no_new_privs for what follows."""
    keep = ",".join("+" + cap.removeprefix("CAP_").lower() for cap in CAPS)
    return ["setpriv", "--no-new-privs", f"--bounding-set=-all,{keep}", "--"]


@cache
def outside() -> tuple[str, ...]:
    """The host's setpriv setting no_new_privs for what follows (nsenter and the command it starts)."""
    setpriv = shutil.which("setpriv")
    return (setpriv, "--no-new-privs", "--") if setpriv else ()


def before(hardened: bool) -> list[str]:
    """What goes before nsenter, on the host: the nofile limit, and no_new_privs where the sandbox cannot set
    it itself (`hardened`: it has setpriv)."""
    return [*nofile(), *(() if hardened else outside())]
