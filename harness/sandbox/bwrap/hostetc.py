"""The /etc a sandbox over the host's system sees (`sandbox.rootfs=host`): made, never the host's own.

The host's /etc holds what no task may read: ssh host keys, a container engine's key, cluster
credentials, keys in /etc/environment, password hashes, private TLS keys. So a sandbox gets a folder made
from an allow-list of what programs need to run (the loader's cache, certificates, name service and time
zone settings, Debian's alternatives, the shells' system files, Python's), copied from the host, plus
`passwd` and `group` with the system's accounts only (no person's name or home), and a `hosts` of its
own. A file the host keeps from other users (not readable by all) is never copied, even when its name is
allowed. The folder is named after its contents: a changed host /etc makes a new one (for sandboxes
started from RECHECK seconds after the change on: reading it costs more than starting a sandbox, so a
process reads it that often at most), and sandboxes running on the old one keep it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

# What is copied (those present): files, links and folders, under /etc.
ALLOWED = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "host.conf", "gai.conf",
           "protocols", "services", "ssl", "ca-certificates.conf", "alternatives", "localtime", "timezone",
           "os-release", "debian_version", "lsb-release", "mime.types", "bash.bashrc", "profile", "inputrc",
           "python3", "matplotlibrc", "magic", "magic.mime", "terminfo", "fonts", "login.defs", "shells",
           "mailcap")
SKIPPED = ("ssl/private",)  # inside an allowed folder, never copied
FIRST_PERSON_ID = 1000  # accounts from here up are people's (Debian's policy), except nobody
NOBODY = 65534
RECHECK = 60.0  # seconds a process uses the /etc it made before it reads the host's again
_recent: dict[tuple[Path, Path], tuple[float, Path]] = {}  # (cache, source) -> (when made, the folder)
_lock = threading.Lock()
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\toptrunner\n"


def _readable(info: os.stat_result) -> bool:
    return stat.S_ISLNK(info.st_mode) or stat.S_ISDIR(info.st_mode) or bool(info.st_mode & stat.S_IROTH)


def _entries(source: Path) -> list[tuple[str, os.stat_result]]:
    """(path under /etc, its lstat) of what is copied: the allowed names, the folders walked."""
    found = []
    for name in sorted(set(ALLOWED)):
        top = source / name
        if not os.path.lexists(top):
            continue
        found.append((name, top.lstat()))
        if top.is_dir() and not top.is_symlink():
            for folder, dirs, files in os.walk(top):
                kept = {e: str((Path(folder) / e).relative_to(source)) for e in sorted([*dirs, *files])}
                kept = {e: relative for e, relative in kept.items() if relative not in SKIPPED}
                dirs[:] = [d for d in sorted(dirs) if d in kept]  # (a skipped folder is not walked either)
                found += [(relative, (Path(folder) / e).lstat()) for e, relative in kept.items()]
    return [(path, info) for path, info in found if _readable(info)]


def _accounts(text: str, id_field: int) -> str:
    """The system's accounts of a passwd or group file (ids below FIRST_PERSON_ID, and nobody); a group's
    member list emptied."""
    kept = []
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) < 4 or not fields[id_field].isdigit():
            continue
        ident = int(fields[id_field])
        if ident < FIRST_PERSON_ID or ident == NOBODY:
            fields[1] = "x"
            if id_field == 2 and len(fields) == 4:  # group: name:x:gid:members
                fields[3] = ""
            kept.append(":".join(fields))
    return "\n".join(kept) + "\n"


def _generated(source: Path) -> dict[str, str]:
    def read(name: str) -> str:
        try:
            return (source / name).read_text(errors="replace")
        except OSError:
            return ""
    passwd = _accounts(read("passwd"), 2) or "root:x:0:0:root:/root:/bin/bash\n"
    group = _accounts(read("group"), 2) or "root:x:0:\n"
    return {"passwd": passwd, "group": group, "hosts": HOSTS}


def made(cache: Path, source: Path = Path("/etc")) -> Path:
    """The sandbox's /etc for the host's `source` (made under `cache` once per contents; the host's read
    again after RECHECK seconds)."""
    with _lock:
        when, folder = _recent.get((cache, source), (0.0, Path()))
        if time.monotonic() - when < RECHECK and folder.is_dir():
            return folder
    folder = _made(cache, source)
    with _lock:
        _recent[(cache, source)] = (time.monotonic(), folder)
    return folder


def _made(cache: Path, source: Path) -> Path:
    entries, generated = _entries(source), _generated(source)
    digest = hashlib.sha256()
    for path, info in entries:
        full = source / path
        digest.update(f"{path}\0{info.st_mode}\0".encode())
        if stat.S_ISLNK(info.st_mode):
            digest.update(os.readlink(full).encode())
        elif stat.S_ISREG(info.st_mode):
            digest.update(f"{info.st_size}:{info.st_mtime_ns}".encode())
    for name, text in sorted(generated.items()):
        digest.update(f"{name}\0{text}".encode())
    target = cache / f"etc-{digest.hexdigest()[:16]}"
    if target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".etc-", dir=cache))
    try:
        os.chmod(work, 0o755)
        for path, info in entries:
            full, copy = source / path, work / path
            copy.parent.mkdir(parents=True, exist_ok=True)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(full), copy)
            elif stat.S_ISDIR(info.st_mode):
                copy.mkdir(exist_ok=True)
                os.chmod(copy, stat.S_IMODE(info.st_mode))
            elif stat.S_ISREG(info.st_mode):
                shutil.copy2(full, copy)
        for name, text in generated.items():
            (work / name).write_text(text)
            os.chmod(work / name, 0o644)
        try:
            work.rename(target)
        except OSError:  # another process made it meanwhile
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target
