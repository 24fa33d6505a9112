"""Join a running bubblewrap sandbox and run a command there with root's powers cut, all from the host.

The way every command (the agent's and the harness's) enters a sandbox: `enter.c` compiled by the host's
C compiler where it has one (hardening.enter builds it once), else this file run by the host's own
interpreter, isolated (`python -I -S enter.py PID CWD CAPS root|keep FILTER -- argv...`); both take the
seccomp program (seccomp.py) from the FILTER file hardening writes. It does what `nsenter` did,
and what the sandbox's own `setpriv` did after it, without running any program of the sandbox's until
the command itself:
- open the init's namespaces and root first (a dead or dying init: exit GONE, one line on stderr);
- join them (what the caller may join as itself first, then the user namespace and the rest), and
  take the init's root and the working directory;
- take every capability but CAPS out of the bounding set, set no_new_privs, and load the seccomp filter
  (the kernel keyring and new user namespaces refused, as Docker's default profile does: seccomp.py);
- fork (a pid namespace holds only the children of who joined it), exec the command, and exit as it did.

Why not the host's `setpriv` before nsenter: joining a user namespace resets the bounding set to full
(the kernel's set_cred_user_ns), so a drop made before the join is lost; and a `setpriv` run after the
join is the sandbox's file, which its root may have replaced. Standard library only: nothing on a path
the sandbox could reach is imported.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

GONE = 252  # exit code: the sandbox's init (or one of its namespaces) is gone
NAMESPACES = (("user", 0x10000000), ("ipc", 0x08000000), ("uts", 0x04000000), ("net", 0x40000000),
              ("pid", 0x20000000), ("mnt", 0x00020000))
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 24, 22, 2
def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _harden(libc: ctypes.CDLL, keep: set[int], program: bytes) -> None:
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        if cap not in keep:
            _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping a capability")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")
    buffer = ctypes.create_string_buffer(program, len(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "loading seccomp")


def _exec(command: list[str]) -> int:
    """execvp's search, written out: past the chroot no module of the standard library can be imported
    (os.execvp imports one), so nothing here may need one."""
    name, denied = command[0], False
    folders = [""] if "/" in name else os.environ.get("PATH", "/usr/bin:/bin").split(":")
    for folder in folders:
        try:
            os.execv(f"{folder or '.'}/{name}" if folder or "/" not in name else name, command)
        except PermissionError:
            denied = True
        except OSError:
            pass
    sys.stderr.write(f"optrunner-enter: {name}: {'permission denied' if denied else 'command not found'}\n")
    return 126 if denied else 127


def main(argv: list[str]) -> int:
    pid, cwd, caps, creds, filter_path, sep, *command = argv
    if sep != "--" or not command:
        print("optrunner-enter: usage: enter.py PID CWD CAPS root|keep FILTER -- COMMAND...", file=sys.stderr)
        return 2
    with open(filter_path, "rb") as fh:
        program = fh.read()
    libc = ctypes.CDLL(None, use_errno=True)
    try:  # everything opened before anything is joined (as nsenter): a half-entered process runs nothing
        fds = [(os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC), flag) for name, flag in NAMESPACES]
        root = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        print(f"optrunner-enter: the sandbox's init is gone ({err.strerror})", file=sys.stderr)
        return GONE
    try:
        # Two passes, as nsenter: what the caller may join as itself first (root: all but the user
        # namespace, among them the host's own network when the sandbox shares it), then the user
        # namespace and, through its powers, the rest.
        joined: set[int] = set()
        for last in (False, True):
            for fd, flag in fds if last else fds[1:]:
                if fd in joined:
                    continue
                if libc.setns(fd, flag) == 0:
                    joined.add(fd)
                elif last:
                    _check(-1, "joining a namespace")
        for fd, _ in fds:
            os.close(fd)
        os.fchdir(root)
        os.chroot(".")
        os.close(root)
        if creds == "root":  # run by root: the sandbox's root exactly (as nsenter without --preserve-credentials)
            os.setgroups([])
            os.setgid(0)
            os.setuid(0)
        _harden(libc, {int(c) for c in caps.split(",") if c}, program)
    except OSError as err:
        print(f"optrunner-enter: {err}", file=sys.stderr)
        return 125
    try:
        os.chdir(cwd)
    except OSError as err:
        print(f"optrunner-enter: cannot change directory to {cwd}: {err.strerror}", file=sys.stderr)
        return 126
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)  # (Python's own dispositions must not reach the command)
    child = os.fork()
    if child == 0:
        os._exit(_exec(command))
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):  # die as it died, so the caller sees the same signal
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
