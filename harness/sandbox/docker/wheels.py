"""Python packages for a build on a local substitute, fetched on the host: pip inside a build cannot reach
the package index on machines like these (TLS fails inside containers), while the host's pip can.

A `pip install` (also `python -m pip install`, `uv pip install`) in a stage built on a substitute is found
and rewritten to install from a wheelhouse only (`--no-index --find-links /opt/optrunner/wheels`). The
host downloads what those lines name, for the substitute's interpreter (Debian 12's Python 3.11) and this
machine's architecture, with `pip download --only-binary=:all:`: the requirements written on the line,
the requirement and constraint files (`-r`, `-c`) the Dockerfile copied in, and the index URLs given.
The wheels travel in an image of their own (`FROM scratch`), copied into the stage with `COPY --from`,
so the task's build context, and whatever `COPY . /app/` takes from it, stays as the task wrote it.
A package with no wheel for that interpreter cannot be installed so: the build fails with pip's reason.

Pure parsing here, and one function that runs pip on the host (`download`).
"""
from __future__ import annotations

import os
import platform
import posixpath
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

IN_IMAGE = "/opt/optrunner/wheels"
PYTHON = "3.11"  # Debian 12's python3, the interpreter of every substitute
GLIBC = 36  # Debian 12's glibc is 2.36: manylinux wheels up to manylinux_2_36 run on it
WHEELS_IMAGE = "{wheels}"  # stands for the wheels image's tag until the wheels are downloaded

_VALUED = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
           "--find-links", "-t", "--target", "--prefix", "--root", "--python", "-p", "--platform",
           "--python-version", "--implementation", "--abi", "--src", "--upgrade-strategy", "--progress-bar",
           "--cache-dir", "--log", "--trusted-host", "--timeout", "--retries", "--proxy", "--exists-action",
           "-e", "--editable", "--config-settings", "-C", "--index-strategy", "--resolution", "--prerelease",
           "--extra", "--keyring-provider", "--only-binary", "--no-binary", "--group"}
_PASSED = {"-i": "--index-url", "--index-url": "--index-url", "--extra-index-url": "--extra-index-url",
           "-f": "--find-links", "--find-links": "--find-links"}
_INSTALL = re.compile(r"(?<![\w/.-])((?:\S*/)?(?:pip3?(?:\.\d+)?|python3?(?:\.\d+)?\s+-m\s+pip|uv\s+pip)\s+install)"
                      r"(?=\s)")


@dataclass
class PipInstall:
    """What one install line asks for: requirements as written, files (-r, -c: paths in the image),
    index options to pass to the host's pip, and whether it installs a local project (which builds with
    setuptools from the wheelhouse)."""
    requirements: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    index: list[str] = field(default_factory=list)
    local: bool = False


_SEPARATOR = re.compile(r"(&&|\|\||;|\||(?<!\\)\n)")  # between simple commands (a continuation is not one)


def _words(command: str) -> list[str]:
    """A simple command's words (none when shlex cannot split it), `RUN` and subshell parentheses dropped."""
    text = re.sub(r"^\s*RUN\s+", "", re.sub(r"\\\n", " ", command), flags=re.IGNORECASE).strip().lstrip("(")
    try:
        return shlex.split(text.rstrip(")"))
    except ValueError:
        return []


def _parse(words: list[str], workdir: str) -> PipInstall | None:
    """The install a command asks for, when it is pip's (pip, pip3, python -m pip, uv pip), else None."""
    while words and (re.fullmatch(r"\w+=.*", words[0]) or words[0] in ("sudo", "env", "exec", "command")):
        words = words[1:]  # VAR=value pip install ..., sudo pip install ...
    if len(words) > 1 and re.fullmatch(r"pip3?(\.\d+)?", posixpath.basename(words[0])) and words[1] == "install":
        rest = words[2:]
    elif words[:1] == ["uv"] and words[1:3] == ["pip", "install"]:
        rest = words[3:]
    elif words and re.fullmatch(r"python3?(\.\d+)?", posixpath.basename(words[0])) and words[1:4] == ["-m", "pip",
                                                                                                    "install"]:
        rest = words[4:]
    else:
        return None
    got, args = PipInstall(), iter(rest)
    for word in args:
        name, eq, value = word.partition("=")
        if word.startswith("-") and name in _VALUED:
            value = value if eq else next(args, "")
            if name in ("-r", "--requirement", "-c", "--constraint"):
                got.files.append(posixpath.normpath(posixpath.join(workdir, value)))
            elif name in _PASSED:
                got.index += [_PASSED[name], value]
            elif name in ("-e", "--editable"):
                got.local = True
        elif word.startswith("-"):
            continue
        elif word.startswith((".", "/")) or word.startswith("file:"):
            got.local = True
        else:
            got.requirements.append(word)
    return got


def offline_pip(run: str, workdir: str) -> tuple[str, list[PipInstall]]:
    """A RUN instruction with every pip install made to use the wheelhouse only, and what each asks for."""
    parts, installs = _SEPARATOR.split(run), []
    for i in range(0, len(parts), 2):  # the odd parts are the separators
        got = _parse(_words(parts[i]), workdir)
        if got is not None:
            installs.append(got)
            parts[i] = _INSTALL.sub(lambda m: f"{m.group(1)} --no-index --find-links {IN_IMAGE}", parts[i], count=1)
    return "".join(parts), installs


def copy_sources(args: Sequence[str], workdir: str) -> list[tuple[str, str]]:
    """(path in the image, path in the build context) pairs a `COPY src... dest` may have made: a single
    source onto `dest` itself, and each source into the folder `dest` (a file by its name, a folder's
    contents); `context_file` keeps the pair that names a real file."""
    sources = [a for a in args[:-1] if not a.startswith("--")]
    if not sources:
        return []
    dest = posixpath.normpath(posixpath.join(workdir, args[-1]))
    pairs = [(dest, s) for s in sources]
    pairs += [(posixpath.join(dest, posixpath.basename(s.rstrip("/"))), s) for s in sources if s.strip("./")]
    return pairs


def context_file(path: str, copies: Sequence[tuple[str, str]], context: Path) -> Path | None:
    """The build context's file that became `path` in the image, by the latest COPY that could have put it
    there (None: not copied from the context)."""
    for dest, source in reversed(copies):
        dest = dest.rstrip("/") or "/"
        if path == dest:
            candidate = context / source
        elif path.startswith(dest.rstrip("/") + "/"):
            candidate = context / source / path[len(dest.rstrip("/")) + 1:]
        else:
            continue
        if candidate.is_file():
            return candidate
    return None


def download(installs: Sequence[PipInstall], files: Mapping[str, Path], dest: Path) -> None:
    """Download the wheels `installs` need into `dest` with the host's pip. Raises RuntimeError with pip's
    last lines when it fails."""
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    tag = PYTHON.replace(".", "")
    base = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input", "--dest",
            str(dest), "--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp",
            "--abi", f"cp{tag}", "--abi", "abi3", "--abi", "none"]
    # pip takes each platform tag literally: every manylinux the substitute's glibc runs is named
    for name in [f"manylinux_2_{minor}" for minor in range(GLIBC, 4, -1)] + ["manylinux2014", "manylinux2010",
                                                                               "manylinux1"]:
        base += ["--platform", f"{name}_{arch}"]
    for install in installs:
        args = list(install.requirements) + list(install.index)
        for path in install.files:
            args += ["-r", str(files[path])] if path in files else []
        if install.local:
            args += ["setuptools", "wheel"]  # pip builds a local project in isolation, from the wheelhouse
        if not install.requirements and not install.local and not any(p in files for p in install.files):
            continue
        done = subprocess.run(base + args, capture_output=True, text=True, env={**os.environ, "PIP_NO_INPUT": "1"},
                              timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(" ".join(shlex.quote(a) for a in args) + ": "
                               + " ".join((done.stderr or done.stdout).strip().splitlines()[-3:]))
