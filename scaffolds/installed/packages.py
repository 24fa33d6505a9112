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

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scaffolds.installed import pythons
from scaffolds.installed.agents import INSTALL_ROOT, AgentSpec

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
    """The agent's folder for this image's platform, installed from its registry on this machine once."""
    brought = brought_python(spec, found)
    tag = found.tag(spec.registry) if brought is None else f"py{brought[1][0]}{brought[1][1]}-{found.machine}-" \
        f"brought{'.'.join(map(str, brought[1]))}"
    if spec.registry == "pypi":  # our own glue (launcher, driver) changes without the agent's version
        glue = hashlib.sha256(launcher(spec).encode())
        for name in spec.files:
            glue.update((Path(__file__).parent / name).read_bytes())
        tag += f"-{glue.hexdigest()[:8]}"
    folder = cache_root() / f"{spec.name}-{spec.version}-{tag}"
    if (folder / STAMP).exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    package = spec.package.format(arch=NPM_ARCH.get(found.machine, found.machine),
                                  musl="-musl" if found.libc == "musl" else "")
    log(f"installing {package} ({tag}) from {spec.registry} into {folder} (once)")
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        if spec.registry == "pypi":
            python, version = found.python, found.version
            if brought is not None:  # the agent runs on this machine's interpreter, copied into its folder
                pythons.copy(brought[0], brought[1], work / "interpreter")
                python = f"{INSTALL_ROOT}/{spec.name}/interpreter/bin/{pythons.WRAPPER}"
                version = brought[1][:2]
            assert python is not None
            _pip(package, found, version, work, spec.sdists)
            (work / "python").write_text(python + "\n")  # what the start command runs
            for name in spec.files:  # the project's own glue the agent's module needs (a driver)
                shutil.copy2(Path(__file__).parent / name, work / "lib" / Path(name).name)
            (work / "launch.py").write_text(launcher(spec))
        else:
            _npm(package, work)
        (work / STAMP).write_text(f"{package}\n")
        os.chmod(work, 0o755)
        if folder.exists():  # a half-made folder from an interrupted install
            shutil.rmtree(folder)
        work.rename(folder)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return folder


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"installing {what} failed: {tail[0][:300]}")


def _pip(package: str, found: Platform, version: tuple[int, int], work: Path, sdists: tuple[str, ...] = ()) -> None:
    """Wheels for the interpreter, the image's machine and glibc: every manylinux tag it runs (pip takes
    `--platform` literally, so a wheel tagged only manylinux_2_28 needs that tag named). A pure-Python
    requirement that ships only sources (`sdists`) gets its wheel built here first: pip will not build one for
    another interpreter."""
    platforms = [f"manylinux_{found.glibc[0]}_{minor}_{found.machine}" for minor in range(found.glibc[1], 16, -1)]
    platforms += [f"manylinux2014_{found.machine}"]
    wheels = work / ".wheels"
    if sdists:
        _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
              "--wheel-dir", str(wheels), *sdists], f"wheels for {' '.join(sdists)}")
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
          "--target", str(work / "lib"), "--only-binary=:all:", "--implementation", "cp",
          "--python-version", f"{version[0]}.{version[1]}", *(["--find-links", str(wheels)] if sdists else []),
          *(arg for p in platforms for arg in ("--platform", p)), *package.split()], f"{package} from PyPI")
    shutil.rmtree(wheels, ignore_errors=True)


def _npm(package: str, work: Path) -> None:
    """The package's own tarball (a native build: no Node is needed in the image), unpacked as `package/`."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"installing {package} needs npm on this machine (it fetches from the npm registry)")
    _run([npm, "pack", "--silent", package], f"{package} from npm", cwd=work)
    (tarball,) = work.glob("*.tgz")
    with tarfile.open(tarball) as tar:
        tar.extractall(work, filter="data")
    tarball.unlink()
