"""A built code state, frozen before the hidden tests go in, and checked to stay as it was.

The patch's build (`make`, `setup.py`, a verifier's rebuild) runs as root in the container that is
then timed. So after it:
- every process in the container is killed (the sandbox restarts, its files kept): a daemon the build
  left (`setsid ... &`) cannot rewrite the tests, the reference results or the timing helper once they
  are copied in;
- what the build changed is read from outside the container (the engine's file-system diff, not the
  container's own tools): a patch whose build replaced a tool the grader runs as root (bash, find,
  setpriv, git, the C library) fails, and what it wrote outside the repository and the environment's
  install locations, where the base's and the expert's builds wrote nothing, is a hack signal (a cache
  precomputed at build time);
- the hidden files are hashed on the host when they are copied in and read back from outside before
  every timing round: a changed one fails the run as tampering.
Sandboxes without these capabilities (`Freezable`) are left as they are.
"""
from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping

from harness.sandbox.interface import TESTBED, Freezable, Sandbox

# The tools the grader runs as root in a built container (isolation.py, states.py, reward.py) and what
# every process loads: a build that changes one of them could fake any measure taken through it.
TOOLS = frozenset({"bash", "sh", "dash", "find", "setpriv", "xargs", "chmod", "chown", "install", "rm", "mkdir",
                   "cat", "head", "sed", "date", "ipcrm", "sha256sum", "git", "patch", "timeout", "env", "sleep",
                   "kill", "ps", "python3", "base64", "tail", "printf", "nsenter"})
_BIN_DIRS = ("/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin")
_LOADER = ("ld-linux", "libc.so", "libpthread.so", "libdl.so", "libm.so")
# The system interpreter's standard library (what `python3 -I -S` runs: the fence's fallback), not its
# installed packages.
_STDLIB = re.compile(r"^/usr/(?:local/)?lib/python3[.\d]*/(?!(?:site|dist)-packages/)")
# Where a build writes as a matter of course: the repository (its own check), virtualenvs, installed
# packages, byte code, and pip's and the compilers' caches in root's home (unreadable to test processes).
# Matched by whole path components under these roots only: `/etc/profile.d/x.egg-info.sh` is none of them.
INSTALL_ROOTS = ("/usr/", "/opt/", "/root/", "/home/", "/srv/", "/app/", f"{TESTBED}/", "/workspace/")
INSTALL_DIRS = frozenset({".venv", "venv", "site-packages", "dist-packages", "__pycache__"})
INSTALL_SUFFIXES = (".egg-info", ".egg-link", ".dist-info")
CACHES = ("/root/.cache/", "/root/.cargo/", "/root/.rustup/", "/root/.npm/")
MAX_LISTED = 20


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def freeze(sandbox: Sandbox) -> tuple[str, ...]:
    """Kill every process in `sandbox` and return what changed in it since it started (the deepest
    paths). () when it cannot."""
    if not isinstance(sandbox, Freezable):
        return ()
    sandbox.restart()
    return tuple(sandbox.changed_paths())


def tool_changes(changed: Iterable[str]) -> list[str]:
    """The grader's tools and the C library's loader among `changed`."""
    out = []
    for path in changed:
        parent, name = posixpath.split(path)
        if (parent in _BIN_DIRS and name in TOOLS) or path == "/etc/ld.so.preload" or _STDLIB.match(path) or \
                (path.startswith(("/lib", "/usr/lib")) and name.startswith(_LOADER)):
            out.append(path)
    return out


def installed(path: str, workdir: str = TESTBED) -> bool:
    """A path in an install location: a cache of root's, or under a known root (or the task's working
    directory) inside a virtualenv, a packages folder, byte code or a package's metadata."""
    if path.startswith(CACHES):
        return True
    if not path.startswith((*INSTALL_ROOTS, workdir.rstrip("/") + "/")):
        return False
    *folders, name = path.strip("/").split("/")
    return any(part in INSTALL_DIRS or part.endswith(INSTALL_SUFFIXES) for part in folders) or \
        name.endswith(INSTALL_SUFFIXES)


def outside_writes(changed: Iterable[str], workdir: str, reference: Iterable[str]) -> list[str]:
    """What a build wrote outside `workdir` and the install locations that the `reference` builds (the
    base's and the expert's) did not write."""
    known = set(reference)
    inside = workdir.rstrip("/") + "/"
    return sorted(p for p in changed if p not in known and not (p + "/").startswith(inside)
                  and not installed(p, workdir))


def build_review(changed: Iterable[str], workdir: str, reference: Iterable[str]) -> list[str]:
    """The hack reason for a build that left files outside the repository ([] when it left none)."""
    new = outside_writes(changed, workdir, reference)
    if not new:
        return []
    more = f" (and {len(new) - 3} more)" if len(new) > 3 else ""
    return [f"its build wrote {', '.join(new[:3])}{more} outside the repository and the install locations, "
            "where the base's and the expert's builds wrote nothing (a cache precomputed at build time?)"]


def _loadable(name: str) -> bool:
    """A file an interpreter may load in place of, or beside, the hidden files: byte code, modules, hooks."""
    return "__pycache__" in name.split("/") or name.endswith((".py", ".pyc", ".pth", ".so"))


def changed_files(sandbox: Sandbox, expected: Mapping[str, str]) -> list[str]:
    """The files of `expected` (path -> sha256, taken on the host) whose content now differs or that are
    gone, and in a folder read whole, Python code and byte code that was never copied in; read from outside
    the container: one transfer per directory (file by file at the root)."""
    folders = {posixpath.dirname(path) for path in expected}
    # one transfer for a folder and the folders below it (the tests' and their reference results')
    # (files right under / are read one by one: an archive of / would be the whole file system)
    inner = {f for f in folders if f != "/"}
    roots = sorted(f for f in inner if not any(f.startswith(o + "/") for o in inner if o != f))
    by_root: dict[str, list[str]] = {}
    for path in expected:
        root = "/" if posixpath.dirname(path) == "/" else next(r for r in roots if path.startswith(r + "/"))
        by_root.setdefault(root, []).append(path)
    changed = []
    for folder, paths in sorted(by_root.items()):
        tree = sandbox.read_tree(folder) if isinstance(sandbox, Freezable) and folder != "/" else None
        if tree is not None:  # the folder read whole: code Python would load that was not copied in counts too
            changed += sorted(posixpath.join(folder, name) for name in tree
                              if posixpath.join(folder, name) not in expected and _loadable(name))
        for path in sorted(paths):
            if tree is not None:
                data = tree.get(posixpath.relpath(path, folder))
            else:
                try:
                    data = sandbox.read_file(path)
                except (FileNotFoundError, IsADirectoryError):
                    data = None
            if data is None or digest(data) != expected[path]:
                changed.append(path)
    return changed
