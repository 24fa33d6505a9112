"""What of the caller's machine a layer over the host runs beyond its /usr: a Python interpreter, CUDA.

A GPU machine keeps torch in an interpreter outside /usr (a venv at /opt/torch/.venv) and may keep nvcc under
a CUDA folder that is on nobody's fixed PATH; a sandbox over the host sees neither (hostfs.py), and its
shells start from a fixed PATH with nothing of the caller's environment.

- **python** (`sandbox.host_python`, exported as OPTRUNNER_HOST_PYTHON): an interpreter's path, `system`
  (/usr/bin/python3 as it is) or `auto` (the default): for a task that needs GPUs, the first python3 on the
  caller's PATH that imports torch; else the system's. A chosen interpreter becomes the layer's
  /usr/local/bin/python3 and python: wrapper scripts that exec it (a symlink would not do: a venv is known by
  the path its interpreter is started from), and its folders outside the system's are bound read-only
  (its venv and its base installation; not what a .pth adds, which may be anything of the caller's).
- **CUDA**, for a task that needs GPUs: the toolkit's folder (the caller's CUDA_HOME or CUDA_PATH, else
  the folder above an nvcc on the caller's PATH when it holds a toolkit, else /usr/local/cuda): its bin/ is
  put first on the layer's PATH, CUDA_HOME names it, and the caller's LD_LIBRARY_PATH entries inside it or
  inside the system's folders are kept: in the layer's environment and in a profile script (a login
  shell's /etc/profile sets PATH anew), and the folder bound read-only when it is outside /usr.

Both are read when a layer is built: they are part of the layer's hash (a different interpreter is a
different layer) and are listed in the task's `adapted` lines, which the run's provenance shows.
"""
from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.interface import ImageBuildError
from harness.sandbox.providers import HOST_PYTHON as VARIABLE

SYSTEM_PYTHON = "/usr/bin/python3"
WRAPPED = ("/usr/local/bin/python3", "/usr/local/bin/python")
CUDA_PROFILE = "/etc/profile.d/optrunner-cuda.sh"  # (before the task's venv, zz-task-venv.sh: the venv first)
# What every sandbox over the host sees anyway (hostfs's system folders): nothing under them is bound.
VISIBLE = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
_PATHS = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix]))"


@dataclass(frozen=True)
class HostExtras:
    """What a task's layers take from the caller's machine (empty: nothing beyond the system)."""
    python: str = ""  # the interpreter python3 runs ("": the system's, unwrapped)
    cuda: str = ""  # the CUDA folder ("": none found)
    env: dict[str, str] = field(default_factory=dict)  # CUDA_HOME, LD_LIBRARY_PATH; PATH's addition as PATH+
    binds: tuple[str, ...] = ()  # the host's folders bound read-only

    def key(self) -> str:
        """What of it a layer's hash covers."""
        return json.dumps([self.python, self.cuda, self.env, self.binds]) if (self.python or self.cuda) else ""

    def adapted(self) -> list[str]:
        """One line each, as the run's provenance shows what was changed to build a task here."""
        out = [f"python3 is {self.python} (sandbox.host_python)"] if self.python else []
        if self.cuda:
            out.append(f"CUDA from {self.cuda} ({self.env.get('PATH+') or 'no nvcc'} on PATH, CUDA_HOME"
                       + (", LD_LIBRARY_PATH" if self.env.get("LD_LIBRARY_PATH") else "") + ")")
        return out

    def apply(self, env: dict[str, str]) -> dict[str, str]:
        """A layer's environment with the CUDA variables in (the toolkit's bin/ first: its nvcc, not another)."""
        out = dict(env)
        extra = self.env.get("PATH+")
        if extra and extra not in out.get("PATH", "").split(":"):
            out["PATH"] = f"{extra}:{out['PATH']}" if out.get("PATH") else extra
        out.update({k: v for k, v in self.env.items() if k != "PATH+"})
        return out

    def wrapper(self) -> str:
        """The script that runs as python3 and python (WRAPPED): it execs the chosen interpreter."""
        return f'#!/bin/sh\nexec {shlex.quote(self.python)} "$@"\n'

    def setup(self) -> str:
        """The shell command that puts them into a layer ("" when there is nothing to put): the interpreter's
        wrappers, and a profile script with the CUDA variables (a login shell's /etc/profile sets PATH anew)."""
        steps = []
        if self.python:
            lines = " ".join(shlex.quote(line) for line in self.wrapper().splitlines())
            steps += ["mkdir -p /usr/local/bin"] + [f"printf '%s\\n' {lines} > {path} && chmod 755 {path}"
                                                    for path in WRAPPED]
        if self.cuda:
            exports = [f"export {name}={shlex.quote(value)}" for name, value in self.env.items() if name != "PATH+"]
            if self.env.get("PATH+"):
                exports.append(f'export PATH={shlex.quote(self.env["PATH+"])}:"$PATH"')
            steps += ["mkdir -p /etc/profile.d",
                      f"printf '%s\\n' {' '.join(shlex.quote(e) for e in exports)} > {CUDA_PROFILE}"]
        return " && ".join(steps)


def extras(needs_gpu: bool, environ: dict[str, str] | None = None) -> HostExtras:
    """What a task's layers take from this machine, read from the caller's environment (`environ`, default
    this process's). ImageBuildError (one line) for an OPTRUNNER_HOST_PYTHON that is no interpreter."""
    environ = dict(os.environ if environ is None else environ)
    python = _python(environ.get(VARIABLE, "").strip() or "auto", needs_gpu, environ.get("PATH", ""))
    binds: list[str] = []
    if python:
        binds += _outside(list(_interpreter_paths(python)))
    cuda, env = _cuda(environ) if needs_gpu else ("", {})  # (a CPU task's layers stay as they were)
    if cuda:
        binds += _outside([cuda])
        if env.get("LD_LIBRARY_PATH"):
            env["LD_LIBRARY_PATH"] = ":".join(p for p in env["LD_LIBRARY_PATH"].split(":")
                                              if _under(p, (cuda, *VISIBLE)))
            if not env["LD_LIBRARY_PATH"]:
                del env["LD_LIBRARY_PATH"]
    return HostExtras(python, cuda, env, tuple(_topmost(binds)))


def _python(choice: str, needs_gpu: bool, path: str) -> str:
    if choice == "system" or (choice == "auto" and not needs_gpu):
        return ""
    if choice == "auto":
        for folder in path.split(":"):
            found = Path(folder or ".") / "python3"
            if folder.startswith("/") and os.access(found, os.X_OK) and _imports(str(found), "torch"):
                return "" if str(found) == SYSTEM_PYTHON else str(found)
        return ""
    if not choice.startswith("/") or not os.access(choice, os.X_OK) or not _imports(choice, "sys"):
        raise ImageBuildError(f"sandbox.host_python: {choice} is not a Python interpreter of this machine (an "
                              "absolute path, 'system' or 'auto')")
    return "" if choice == SYSTEM_PYTHON else choice


@functools.cache  # (per process: each task's layers ask, and importing torch takes seconds)
def _imports(python: str, module: str) -> bool:
    try:
        return subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def _interpreter_paths(python: str) -> tuple[str, ...]:
    """The folders of the interpreter: its venv, its prefixes, where its binary is. Not the rest of its
    sys.path: a .pth may name any folder (a project's source, with its tasks' hidden tests), and what is
    bound here every agent of the task can read."""
    done = subprocess.run([python, "-s", "-c", _PATHS], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise ImageBuildError(f"sandbox.host_python: {python} could not say where it reads from: "
                              f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    found = [p for p in json.loads(done.stdout) if p and p.startswith("/")]
    # its venv: the folder above bin/ (a venv's interpreter is a link out of it, so not its realpath)
    return (str(Path(python).parent.parent), *found, str(Path(os.path.realpath(python)).parent))


def _cuda(environ: dict[str, str]) -> tuple[str, dict[str, str]]:
    given = environ.get("CUDA_HOME") or environ.get("CUDA_PATH") or ""
    roots = [given] if given else []
    for folder in environ.get("PATH", "").split(":"):  # the folder above an nvcc on PATH, if a CUDA folder
        if folder.startswith("/") and os.access(Path(folder) / "nvcc", os.X_OK):
            roots.append(str(Path(os.path.realpath(Path(folder) / "nvcc")).parent.parent))
    roots.append("/usr/local/cuda")
    root = next((r for r in roots if r == given or _is_cuda(r)), "")
    if not root or not Path(root).is_dir():
        return "", {}
    root = os.path.normpath(root)
    env = {"CUDA_HOME": root}
    if os.access(Path(root) / "bin" / "nvcc", os.X_OK):
        env["PATH+"] = f"{root}/bin"
    if environ.get("LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = environ["LD_LIBRARY_PATH"]
    return root, env


def _is_cuda(root: str) -> bool:
    """A CUDA toolkit's folder (not /usr/local, where a wrapper script for nvcc may live)."""
    return os.access(Path(root) / "bin" / "nvcc", os.X_OK) and (Path(root) / "include" / "cuda_runtime.h").is_file()


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _outside(paths: list[str]) -> list[str]:
    """The existing folders among `paths` that a sandbox over the host does not see already."""
    out = []
    for path in paths:
        path = os.path.normpath(path)
        if path != "/" and Path(path).is_dir() and not _under(path, VISIBLE):
            out.append(path)
    return out


def _topmost(paths: list[str]) -> list[str]:
    """`paths` without those inside another of them, in order, each once."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not _under(path, tuple(kept)):
            kept.append(path)
    return sorted(kept)


def describe_for_check() -> str:
    """The python3 and nvcc a GPU task's sandbox would see here (tools/gpu_check.sh's probe)."""
    found = extras(needs_gpu=True)
    nvcc = shutil.which("nvcc", path=found.apply({"PATH": "/usr/local/bin:/usr/bin:/bin"})["PATH"])
    return f"python3 {found.python or SYSTEM_PYTHON}, nvcc {nvcc or 'absent'}, binds {', '.join(found.binds) or '-'}"
