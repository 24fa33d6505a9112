"""An installed agent's folder, made on this machine from its registry, for the interpreter of a task image.

Registries answer from this machine, not from inside a sandbox (no network there; in containers the
registries' certificates may not even be trusted: ../docs/installed.md). So pip runs here, for the image's
Python (`--python-version`, `--platform`, wheels only) into a folder of its own, and the folder goes into a
layer on top of the task image (`add_folder`). The agent runs with `python -I -S` on a launcher that puts
the folder first on its path: the task's own interpreter, site-packages and virtualenv never see the
agent's packages, and the agent never sees theirs.

A folder is complete once its stamp exists; it is named after the agent, its version and the interpreter,
so a finished folder is reused by every task and run on this machine.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffolds.installed import locks, pythons
from scaffolds.installed.specs import INSTALL_ROOT, AgentSpec

STAMP = ".complete"
# What an image is, asked with its own shell (an agent from npm needs no Python): machine, C library and
# its version, the system's python3 (never a task's virtualenv, which may be older) and its version.
PROBE = ("m=$(uname -m); libc=glibc; v=$(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2); "
         "if [ -z \"$v\" ]; then v=0.0; ls /lib/ld-musl-* >/dev/null 2>&1 && libc=musl; fi; py=none; pv=0.0; "
         "for p in /usr/local/bin/python3 /usr/bin/python3 $(command -v python3); do if [ -x \"$p\" ]; then "
         "py=$p; pv=$(\"$p\" -I -S -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])') && break; fi; done; "
         "tm=no; command -v tmux >/dev/null 2>&1 && tm=yes; echo \"optrunner-platform $m $libc $v $py $pv $tm\"")
NPM_ARCH = {"x86_64": "x64", "aarch64": "arm64"}  # npm's names for the machines its native packages build for


def cache_root() -> Path:
    return Path(os.environ.get("OPTRUNNER_AGENTS_CACHE") or Path.home() / ".cache" / "optrunner" / "agents")


@dataclass(frozen=True)
class Platform:
    """A task image as an agent's install sees it."""
    machine: str  # x86_64, aarch64
    libc: str  # glibc or musl
    glibc: tuple[int, int]  # (0, 0) for musl
    python: str | None  # the system's python3 inside the image, if any
    version: tuple[int, int]  # its version ((0, 0) without one)
    tmux: bool = False  # terminus-2 drives its shell through tmux (and cannot install it offline)

    @classmethod
    def parse(cls, output: str) -> "Platform | None":
        """From PROBE's output; None when it did not answer."""
        line = next((ln for ln in output.splitlines() if ln.startswith("optrunner-platform ")), "")
        words = line.split()[1:]
        if len(words) != 6:
            return None
        machine, libc, libc_version, python, version, tmux = words
        return cls(machine, libc, _pair(libc_version), None if python == "none" else python, _pair(version),
                   tmux == "yes")

    def tag(self, registry: str) -> str:
        """What an installed folder depends on: the interpreter (PyPI wheels) or the machine and C library."""
        if registry == "pypi":
            return f"py{self.version[0]}{self.version[1]}-{self.machine}"
        return f"{self.machine}-{self.libc}"


def _pair(text: str) -> tuple[int, int]:
    parts = [int(x) for x in text.split(".")[:2] if x.isdigit()]
    return (parts + [0, 0])[0], (parts + [0, 0])[1]


def refusal(spec: AgentSpec, found: Platform | None, image: str) -> str | None:
    """Why the agent cannot run in this image (one line), or None."""
    if found is None:
        return f"installed/{spec.name}: the task image {image} did not answer what it is (no POSIX shell?)"
    if spec.registry == "npm":
        if found.machine not in NPM_ARCH:
            return f"installed/{spec.name} ships no build for {found.machine} (task image {image})"
        return None
    need = ".".join(map(str, spec.python))
    if found.libc != "glibc" or found.glibc < (2, 17):
        return f"installed/{spec.name} needs glibc >= 2.17 (manylinux wheels) in the task image; {image} has none"
    if "tmux" in spec.programs and not found.tmux:
        return f"installed/{spec.name} needs tmux in the task image; {image} has none (add it to its Dockerfile)"
    if found.python is None or found.version < spec.python:
        if brought_python(spec, found) is not None:
            return None
        has = "none" if found.python is None else f"{found.version[0]}.{found.version[1]} ({found.python})"
        return (f"installed/{spec.name} needs python3 >= {need}: the task image {image} has {has}, and no "
                f"interpreter on this machine can be brought in (a CPython >= {need} for {found.machine} built "
                f"against glibc <= {found.glibc[0]}.{found.glibc[1]}: set OPTRUNNER_AGENT_PYTHONS to its prefix)")
    return None


def brought_python(spec: AgentSpec, found: Platform) -> tuple[Path, tuple[int, int, int]] | None:
    """The interpreter this machine brings for an agent the image's own python is too old for (pythons.py)."""
    if spec.registry != "pypi" or (found.python is not None and found.version >= spec.python):
        return None
    return pythons.choose(spec.python, found.machine, found.glibc)


def launcher(spec: AgentSpec) -> str:
    module, _, function = spec.module.partition(":")
    return ("import os, sys\n"
            "here = os.path.dirname(os.path.abspath(__file__))\n"
            "sys.path[:0] = [os.path.join(here, 'lib')]  # the agent's packages, and no others but the stdlib\n"
            f"if {pythons.LD_SAVED!r} in os.environ:  # a brought interpreter's library path: not for its commands\n"
            f"    saved = os.environ.pop({pythons.LD_SAVED!r})\n"
            "    if saved:\n"
            "        os.environ['LD_LIBRARY_PATH'] = saved\n"
            "    else:\n"
            "        os.environ.pop('LD_LIBRARY_PATH', None)\n"
            f"sys.argv[0] = {spec.name!r}\n"
            f"from {module} import {function}\n"
            f"{function}()\n")


def ensure_folder(spec: AgentSpec, found: Platform, log=print) -> Path:  # noqa: ANN001 - a print-like
    """The agent's folder for this image's platform, installed from its registry on this machine once, exactly
    as its lock says (locks.py); a cached folder is used only while its stamp and files match that lock."""
    brought = brought_python(spec, found)
    tag = found.tag(spec.registry) if brought is None else f"py{brought[1][0]}{brought[1][1]}-{found.machine}-" \
        f"brought{'.'.join(map(str, brought[1]))}"
    version = found.version if brought is None else brought[1][:2]
    key = f"py{version[0]}{version[1]}-{found.machine}" if spec.registry == "pypi" else \
        f"{NPM_ARCH.get(found.machine, found.machine)}{'-musl' if found.libc == 'musl' else ''}"
    locked = locks.entry(spec, key)
    if spec.registry == "pypi" and found.glibc < tuple(locked["glibc"]):
        floor = ".".join(map(str, locked["glibc"]))
        raise locks.LockError(f"installed/{spec.name}'s locked wheels for {key} need glibc >= {floor}; the task "
                              f"image has {found.glibc[0]}.{found.glibc[1]}")
    if spec.registry == "pypi":  # our own glue (launcher, driver) changes without the agent's version
        glue = hashlib.sha256(launcher(spec).encode())
        for name in spec.files:
            glue.update((Path(__file__).parent / name).read_bytes())
        tag += f"-{glue.hexdigest()[:8]}"
    folder = cache_root() / f"{spec.name}-{spec.version}-{tag}-{locks.digest(locked)[:8]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    # One install per folder at a time, across processes (two runs, or test workers, meeting an empty cache):
    # the second waits, then finds the folder made, instead of replacing it while the first one reads it.
    fd = os.open(folder.parent / f".{folder.name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not _verified(folder, locked):
            _install(spec, found, brought, version, key, locked, folder, tag, log)
    finally:
        os.close(fd)
    return folder


def _install(spec: AgentSpec, found: Platform, brought: tuple[Path, tuple[int, int, int]] | None,
             version: tuple[int, int], key: str, locked: dict[str, Any], folder: Path, tag: str,
             log: Any) -> None:
    package = spec.package.format(arch=NPM_ARCH.get(found.machine, found.machine),
                                  musl="-musl" if found.libc == "musl" else "")
    log(f"installing {package} ({tag}) from {spec.registry} into {folder} (once; as its lock says)")
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        if spec.registry == "pypi":
            python = found.python
            if brought is not None:  # the agent runs on this machine's interpreter, copied into its folder
                pythons.copy(brought[0], brought[1], work / "interpreter")
                python = f"{INSTALL_ROOT}/{spec.name}/interpreter/bin/{pythons.WRAPPER}"
            assert python is not None
            _pip(locked, found.machine, version, work)
            (work / "python").write_text(python + "\n")  # what the start command runs
            for name in spec.files:  # the project's own glue the agent's module needs (a driver)
                shutil.copy2(Path(__file__).parent / name, work / "lib" / Path(name).name)
            (work / "launch.py").write_text(launcher(spec))
            packages = [f"{w['name']}=={w['version']}" for w in [*locked["wheels"], *locked["sources"]]]
        else:
            _npm(package, locked["integrity"], work)
            packages = [package]
        stamp = {"package": spec.package, "lock": locks.digest(locked), "key": key, "packages": sorted(packages),
                 "files": locks.folder_digest(work)}
        (work / STAMP).write_text(json.dumps(stamp) + "\n")
        os.chmod(work, 0o755)
        if folder.exists():  # a half-made folder from an interrupted install, or one that no longer verifies
            shutil.rmtree(folder)
        work.rename(folder)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _verified(folder: Path, locked: dict[str, Any]) -> bool:
    """The folder was made from this lock entry and no file in it changed since (a cache is not trusted for
    ever: anything on this machine could have written to it)."""
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("lock") == locks.digest(locked) and \
        stamp.get("files") == locks.folder_digest(folder)


def installed_stamp(text: str) -> dict[str, Any] | None:
    """What a rollout records of the folder it ran (its stamp, read from the sandbox): lock and packages."""
    try:
        stamp = json.loads(text)
    except ValueError:
        return None
    return {k: stamp.get(k) for k in ("lock", "key", "packages")} if isinstance(stamp, dict) else None


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"installing {what} failed: {tail[0][:300]}")


def _pip(locked: dict[str, Any], machine: str, version: tuple[int, int], work: Path) -> None:
    """Exactly the locked wheels (`--require-hashes --no-deps`), for the interpreter and the lock's glibc floor
    (the tags it was resolved with: pip then picks the very files locked); then the locked pure-Python sources,
    their package folders copied out of the verified archives (no build step runs here)."""
    requirements = work / ".requirements.txt"
    requirements.write_text(locks.requirements(locked))
    platforms = locks.pip_platforms(machine, (locked["glibc"][0], locked["glibc"][1]))
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
          "--require-hashes", "--no-deps", "--target", str(work / "lib"), "--only-binary=:all:", "--implementation",
          "cp", "--python-version", f"{version[0]}.{version[1]}", *(a for p in platforms for a in ("--platform", p)),
          "-r", str(requirements)], "the locked wheels from PyPI")
    requirements.unlink()
    for source in locked["sources"]:
        locks.unpack_sdist(source, work / "lib")


def _npm(package: str, integrity: str, work: Path) -> None:
    """The package's own tarball (a native build: no Node is needed in the image), checked against its locked
    integrity, unpacked as `package/`."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"installing {package} needs npm on this machine (it fetches from the npm registry)")
    _run([npm, "pack", "--silent", package], f"{package} from npm", cwd=work)
    (tarball,) = work.glob("*.tgz")
    if locks.npm_integrity(tarball) != integrity:
        raise locks.LockError(f"{package}: the tarball npm fetched does not match its locked integrity")
    with tarfile.open(tarball) as tar:
        tar.extractall(work, filter="data")
    tarball.unlink()
