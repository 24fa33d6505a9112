"""How root starts a bubblewrap sandbox whose ids are not the host's (launch.c, for a host with no compiler).

`python -I -S launch.py VIEWS BASE COUNT SPEC... -- COMMAND...`: take a mount namespace of its own; show
each SPEC (`i:PATH` through an idmapped mount, the host's ids 0.. seen as BASE..; `p:PATH` as it is; both
without the mounts under PATH, as overlay layers; `r:PATH` as it is with them) read-only at VIEWS/<its
index>; take a user namespace whose ids 0..COUNT-1 are the host's BASE.. (mapped by a child still root on
the host); become its root and exec COMMAND. Exit 125 and one line on stderr when
a step fails. Standard library only.
"""
from __future__ import annotations

import ctypes
import os
import struct
import sys

NEWNS, NEWUSER = 0x00020000, 0x10000000
MS_REC, MS_PRIVATE, MS_NOSUID, MS_NODEV = 0x4000, 0x40000, 0x2, 0x4
OPEN_TREE, MOVE_MOUNT, MOUNT_SETATTR = 428, 429, 442  # (one table on every architecture)
CLONE_TREE, CLOEXEC, EMPTY_PATH, RECURSIVE, AT_FDCWD = 1, 0o2000000, 0x1000, 0x8000, -100
ATTR_RDONLY, ATTR_IDMAP, MOVE_FROM_EMPTY = 0x1, 0x100000, 0x4


class Failed(Exception):
    pass


def _call(result: int, what: str) -> int:
    if result < 0:
        raise Failed(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def _show(libc: ctypes.CDLL, parent: int, views: str, base: str, count: str, specs: list[str]) -> None:
    """The child's part, as root on the host: map the parent's ids, then make the views."""
    for kind in ("uid", "gid"):
        with open(f"/proc/{parent}/{kind}_map", "w") as fh:
            fh.write(f"0 {base} {count}\n")
    userns = os.open(f"/proc/{parent}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    for n, spec in enumerate(specs):
        kind, source = spec[0], spec[2:]
        target = f"{views}/{n}"
        if os.path.isdir(source):
            os.mkdir(target, 0o755)
        else:  # (a file bound alone: a file to mount on)
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        deep = RECURSIVE if kind == "r" else 0  # (overlay layers without the mounts under them: launch.c)
        tree = _call(libc.syscall(OPEN_TREE, AT_FDCWD, source.encode(), CLONE_TREE | CLOEXEC | deep),
                     f"opening {source}")
        attr = struct.pack("QQQQ", ATTR_RDONLY | (ATTR_IDMAP if kind == "i" else 0), 0, 0,
                           userns if kind == "i" else 0)
        what = "an idmapped view of (the file system may not support them)" if kind == "i" else "a read-only view of"
        _call(libc.syscall(MOUNT_SETATTR, tree, b"", EMPTY_PATH | deep, attr, len(attr)), f"{what} {source}")
        _call(libc.syscall(MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_FROM_EMPTY), f"showing {source}")
        os.close(tree)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") < 4 or argv.index("--") + 1 >= len(argv):
        print("optrunner-launch: usage: launch VIEWS BASE COUNT SPEC... -- COMMAND...", file=sys.stderr)
        return 2
    dash = argv.index("--")
    views, base, count, specs, command = argv[1], argv[2], argv[3], argv[4:dash], argv[dash + 1:]
    bad = [spec for spec in specs if spec[:2] not in ("i:", "p:", "r:")]
    if bad:
        print(f"optrunner-launch: a view is i:PATH, p:PATH or r:PATH, not {bad[0]}", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    _call(libc.unshare(NEWNS), "taking a mount namespace")
    _call(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "taking a mount namespace")
    _call(libc.mount(b"tmpfs", views.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755"),
          f"mounting the views at {views}")
    go_r, go_w = os.pipe()
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(go_w)
        code = 125
        try:
            if os.read(go_r, 1) == b"1":
                _show(libc, parent, views, base, count, specs)
                code = 0
        except (Failed, OSError) as why:
            print(f"optrunner-launch: {why}", file=sys.stderr)
        os._exit(code)
    os.close(go_r)
    unshared = libc.unshare(NEWUSER)
    saved = ctypes.get_errno()
    os.write(go_w, b"1")
    os.close(go_w)
    _, status = os.waitpid(child, 0)
    if unshared != 0:
        raise Failed(f"taking a user namespace: {os.strerror(saved)}")
    if os.waitstatus_to_exitcode(status) != 0:
        return 125  # (the child said why)
    os.setresgid(0, 0, 0)
    os.setgroups([])
    os.setresuid(0, 0, 0)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        raise Failed(f"running {command[0]}: {error.strerror}") from None
    return 125


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (Failed, OSError) as failure:
        print(f"optrunner-launch: {failure}", file=sys.stderr)
        sys.exit(125)
