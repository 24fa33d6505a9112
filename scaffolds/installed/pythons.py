"""A Python for an agent that needs a newer one than the task image has, brought from this machine.

Harbor (terminus-2) needs Python >= 3.12; Debian bookworm's images have 3.11. Task images must not change for an
agent, and no registry here gives an image another interpreter, so the agent's folder brings one: a CPython
prefix found on this machine (`OPTRUNNER_AGENT_PYTHONS`, a list of prefixes separated by `:`; else uv's
managed builds and pyenv's versions), copied without its tests, IDLE, Tk and site-packages. It runs in the
image only where the image's C library is at least this machine's (a build here links against it) and the
image has the shared libraries the standard library's extension modules load (libssl, libffi: a Debian image
with python3 has them); `prepare_images` checks both in the image before a rollout starts.

A pyenv or python.org build finds libpython through an absolute run path (this machine's prefix), so the
interpreter starts through a wrapper that puts the copy's own lib/ on LD_LIBRARY_PATH; the launcher takes it off
again, so the commands the agent runs never see it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

WRAPPER = "optrunner-python"
LD_SAVED = "OPTRUNNER_AGENT_LD"  # the caller's LD_LIBRARY_PATH, restored by the launcher (launcher.py)
# what the standard library keeps that no agent imports (tests alone are 130 MB)
SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages", "__phello__"}
# imports that must work in the image: TLS for the model calls; ctypes, lzma and bz2 load system libraries too
CHECK = "import ssl, ctypes, lzma, bz2, zlib"


def host_glibc() -> tuple[int, int]:
    text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    found = re.search(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def candidates() -> list[Path]:
    """Prefixes that may hold a CPython (bin/python3.X), the user's first."""
    if "OPTRUNNER_AGENT_PYTHONS" in os.environ:  # set, even empty: only these
        return [Path(p) for p in os.environ["OPTRUNNER_AGENT_PYTHONS"].split(os.pathsep) if p]
    home = Path.home()
    return sorted(home.glob(".local/share/uv/python/cpython-3.*")) + sorted(home.glob(".pyenv/versions/3.*"))


def version_of(prefix: Path) -> tuple[int, int, int] | None:
    """The interpreter's version, asked of it (None when it is not a runnable CPython)."""
    for exe in sorted(prefix.glob("bin/python3.*[0-9]")):
        try:
            done = subprocess.run([str(exe), "-I", "-S", "-c",
                                   "import sys, platform; print(sys.implementation.name, *sys.version_info[:3], "
                                   "platform.machine())"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        words = done.stdout.split()
        if done.returncode == 0 and len(words) == 5 and words[0] == "cpython":
            return int(words[1]), int(words[2]), int(words[3])
    return None


def choose(need: tuple[int, int], machine: str, glibc: tuple[int, int],
           prefixes: Iterable[Path] | None = None) -> tuple[Path, tuple[int, int, int]] | None:
    """The oldest interpreter here that is at least `need`, for an image of this machine with this glibc."""
    import platform
    if machine != platform.machine() or glibc < host_glibc():
        return None
    found = [(v, p) for p in (candidates() if prefixes is None else prefixes) if (v := version_of(p))]
    fitting = sorted((v, str(p)) for v, p in found if v[:2] >= need)
    return (Path(fitting[0][1]), fitting[0][0]) if fitting else None


def copy(prefix: Path, version: tuple[int, int, int], dest: Path) -> None:
    """The interpreter at `dest` (bin/, lib/), with the wrapper that starts it."""
    short = f"python{version[0]}.{version[1]}"

    def skip(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        if here == prefix / "lib" / short:
            return {n for n in names if n in SKIP_STDLIB or n.startswith("config-")}
        if here == prefix / "lib":
            return {n for n in names if n not in {short} and not n.startswith("libpython")}
        if here.name == "lib-dynload":
            return {n for n in names if n.startswith(("_test", "_tkinter", "xxlimited"))}
        return set()

    (dest / "bin").mkdir(parents=True)
    shutil.copy2(prefix / "bin" / short, dest / "bin" / short)
    shutil.copytree(prefix / "lib", dest / "lib", ignore=skip, symlinks=True)
    wrapper = dest / "bin" / WRAPPER
    wrapper.write_text(
        "#!/bin/sh\n"
        "# the brought interpreter, its own lib/ (libpython) found first; the launcher restores the caller's path\n"
        'here=$(cd "$(dirname "$0")" && pwd)\n'
        f'export {LD_SAVED}="${{LD_LIBRARY_PATH-}}"\n'
        'export LD_LIBRARY_PATH="$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"\n'
        f'exec "$here/{short}" "$@"\n')
    wrapper.chmod(0o755)
