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

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scaffolds.installed.agents import AgentSpec

STAMP = ".complete"
# Probes an image's interpreter: the system's python3 (never a task's virtualenv, which may be older)
PROBE = ("for p in /usr/local/bin/python3 /usr/bin/python3 $(command -v python3); do [ -x \"$p\" ] && "
         "exec \"$p\" -I -S -c 'import os, platform, sys; print(sys.executable, \"%d.%d\" % sys.version_info[:2], "
         "platform.machine(), (os.confstr(\"CS_GNU_LIBC_VERSION\") or \"glibc 0.0\").split()[-1])'; done; "
         "echo none")


def cache_root() -> Path:
    return Path(os.environ.get("OPTRUNNER_AGENTS_CACHE") or Path.home() / ".cache" / "optrunner" / "agents")


@dataclass(frozen=True)
class Interpreter:
    path: str  # inside the image
    version: tuple[int, int]
    machine: str  # x86_64, aarch64
    glibc: tuple[int, int]

    @classmethod
    def parse(cls, output: str) -> "Interpreter | None":
        """From PROBE's output; None when the image has no python3."""
        words = output.strip().splitlines()[-1].split() if output.strip() else []
        if len(words) != 4:
            return None
        major, minor = (int(x) for x in words[1].split("."))
        libc = tuple(int(x) for x in words[3].split(".")[:2])
        return cls(words[0], (major, minor), words[2], (libc[0], libc[1]) if len(libc) == 2 else (0, 0))

    @property
    def tag(self) -> str:
        return f"py{self.version[0]}{self.version[1]}-{self.machine}"


def refusal(spec: AgentSpec, found: Interpreter | None, image: str) -> str | None:
    """Why the agent cannot run in this image (one line), or None."""
    if spec.registry != "pypi":
        return None
    need = ".".join(map(str, spec.python))
    if found is None:
        return f"installed/{spec.name} needs python3 >= {need} in the task image; {image} has none"
    if found.version < spec.python:
        return (f"installed/{spec.name} needs python3 >= {need} in the task image; {image} has "
                f"{found.version[0]}.{found.version[1]} ({found.path})")
    if found.glibc < (2, 17):
        return f"installed/{spec.name} needs glibc >= 2.17 (manylinux wheels) in the task image; {image} has none"
    return None


def launcher(spec: AgentSpec) -> str:
    module, _, function = spec.module.partition(":")
    return ("import os, sys\n"
            "here = os.path.dirname(os.path.abspath(__file__))\n"
            "sys.path[:0] = [os.path.join(here, 'lib')]  # the agent's packages, and no others but the stdlib\n"
            f"sys.argv[0] = {spec.name!r}\n"
            f"from {module} import {function}\n"
            f"{function}()\n")


def ensure_folder(spec: AgentSpec, found: Interpreter, log=print) -> Path:  # noqa: ANN001 - a print-like
    """The agent's folder for this interpreter, installed from its registry on this machine once."""
    folder = cache_root() / f"{spec.name}-{spec.version}-{found.tag}"
    if (folder / STAMP).exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    log(f"installing {spec.package} for Python {found.version[0]}.{found.version[1]} ({found.machine}) "
        f"from {spec.registry} into {folder} (once)")
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        # every manylinux tag up to the image's glibc: pip takes the newest wheel that runs there
        platforms = [f"manylinux_{found.glibc[0]}_{found.glibc[1]}_{found.machine}", f"manylinux2014_{found.machine}"]
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
               "--target", str(work / "lib"), "--only-binary=:all:", "--implementation", "cp",
               "--python-version", f"{found.version[0]}.{found.version[1]}",
               *(arg for p in platforms for arg in ("--platform", p)), spec.package]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise RuntimeError(f"installing {spec.package} from {spec.registry} failed: {tail[0][:300]}")
        (work / "launch.py").write_text(launcher(spec))
        (work / "python").write_text(found.path + "\n")
        (work / STAMP).write_text(f"{spec.package}\n")
        os.chmod(work, 0o755)
        if folder.exists():  # a half-made folder from an interrupted install
            shutil.rmtree(folder)
        work.rename(folder)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return folder
