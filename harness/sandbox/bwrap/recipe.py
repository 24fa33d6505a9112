"""A Harbor task's Dockerfile read as steps to run over the host's own system (`sandbox.rootfs=host`).

The Dockerfile is read by the reader both providers share (harness.dockerfile).
With no Docker, no image is pulled: the host's system takes the place of the `FROM` image, and the
instructions that shape the task's files are applied in a build sandbox over it (hostfs.py): COPY and ADD
of the build context, WORKDIR, ENV and ARG, RUN. What cannot be done that way is refused before anything
is built, in one line naming the instruction: a second stage, a file fetched by URL, a BuildKit mount, a
heredoc, another user, another shell, and system packages the host lacks. An `apt-get install` whose
packages the host already has (dpkg says so) is satisfied by the host and not run; each such change is
listed, as the Docker provider lists its substitutions.
"""
from __future__ import annotations

import io
import json
import posixpath
import re
import shlex
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import dockerfile
from harness.sandbox.taskimage.contents import DEFAULT_PATH
from harness.dockerfile import arg_pairs, from_parts, substitute

IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "VOLUME", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER", "ONBUILD"}
# A shell command of a system package manager (with its arguments, up to the next ; & | or line end).
_APT = re.compile(r"(?:\b[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*\b(apt-get|apt|aptitude)\s+([^;&|\n]*)")
_OTHER_MANAGERS = re.compile(r"\b(apk|yum|dnf|microdnf|zypper|pacman)\s+(add|install|update|upgrade)\b")
_ARCHIVE = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst")


class NotReplayable(Exception):
    """The recipe cannot be built over the host; the message is one line naming the instruction."""


@dataclass(frozen=True)
class BuildStep:
    """One thing the build sandbox does: `run` a shell command, or `copy` files (a tar unpacked at /)."""
    kind: str  # "run" | "copy"
    text: str  # the instruction on one line, for messages
    workdir: str
    env: tuple[tuple[str, str], ...]
    command: str = ""  # run: the shell command
    archive: bytes = b""  # copy: unpacked at /


@dataclass
class Recipe:
    steps: list[BuildStep] = field(default_factory=list)
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)  # the image's ENV
    adapted: list[str] = field(default_factory=list)  # what was changed to build it over the host


def host_has(packages: list[str]) -> list[str]:
    """The packages of `packages` that dpkg does not report installed on this host."""
    missing = []
    for package in packages:
        try:
            done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True,
                                  timeout=30)
            installed = done.returncode == 0 and done.stdout.strip().endswith(" installed")
        except (OSError, subprocess.TimeoutExpired):
            installed = False
        if not installed:
            missing.append(package)
    return missing


def _apt_packages(arguments: str) -> list[str]:
    words = shlex.split(arguments, comments=False) if arguments.strip() else []
    if "install" not in words:
        return []
    after = words[words.index("install") + 1:]
    # `pkg=1.2-3ubuntu4` names pkg: the host's version stands in for the pinned one
    return [w.split("=", 1)[0].split(":", 1)[0] for w in after if not w.startswith("-")]


def system_packages(command: str, text: str, has: Callable[[list[str]], list[str]] = host_has) -> tuple[str, list[str]]:
    """`command` with each `apt-get ...` the host satisfies replaced by `true`, and what was changed;
    NotReplayable when it installs a package the host lacks or uses another package manager."""
    other = _OTHER_MANAGERS.search(command)
    if other:
        raise NotReplayable(f"'{_short(text)}' runs {other.group(1)}, which sandbox.rootfs=host cannot run; "
                      "use sandbox.rootfs=image")
    packages = [p for m in _APT.finditer(command) for p in _apt_packages(m.group(2))]
    if not _APT.search(command):
        return command, []
    missing = has(packages) if packages else []
    if missing:
        raise NotReplayable(f"'{_short(text)}' installs system packages this host lacks ({', '.join(missing)}); "
                      "install them on the host or use sandbox.rootfs=image")
    said = f"apt-get install {' '.join(packages)}" if packages else "apt-get"
    def replaced(match: re.Match[str]) -> str:  # (the whitespace before the next operator stays)
        text = match.group(0)
        return "true" + text[len(text.rstrip()):]
    return _APT.sub(replaced, command), [f"{said}: already on this host, not run"]


def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _copy(args: list[str], text: str, keyword: str, context: Path, workdir: str) -> bytes:
    """A COPY/ADD of the build context as a tar archive to unpack at / (its members name their full paths)."""
    mode: int | None = None
    words = []
    for word in args:
        if word.startswith("--from"):
            raise NotReplayable(f"'{_short(text)}' copies from another stage or image, which sandbox.rootfs=host "
                          "cannot build; use sandbox.rootfs=image")
        if word.startswith("--chmod="):
            mode = int(word.split("=", 1)[1], 8)
        elif not word.startswith("--"):  # --chown: everything the recipe copies is root's here
            words.append(word)
    if len(words) < 2:
        raise NotReplayable(f"'{_short(text)}' names no source and destination")
    sources, dest = words[:-1], words[-1]
    target = posixpath.normpath(posixpath.join(workdir, dest))
    root = context.resolve()
    found: list[Path] = []
    for source in sources:
        if "://" in source or source.lower().endswith(_ARCHIVE) and keyword == "ADD":
            raise NotReplayable(f"'{_short(text)}' fetches or unpacks {source}, which sandbox.rootfs=host does not do; "
                          "use sandbox.rootfs=image")
        inner = source.lstrip("/")
        matches = sorted(root.glob(inner)) if any(c in source for c in "*?[") else [root / inner]
        for path in matches:
            if not path.exists() or not path.resolve().is_relative_to(root):
                raise NotReplayable(f"'{_short(text)}': {source} is not in the build context {context}")
            found.append(path)
    as_folder = dest.endswith("/") or len(found) > 1 or any(c in "".join(sources) for c in "*?[")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in found:
            if path.is_dir():  # a folder's contents go into the destination
                base, members = target, sorted(p for p in path.rglob("*"))
                for member in members:
                    _add(tar, member, posixpath.join(base, str(member.relative_to(path))), mode)
            else:
                _add(tar, path, posixpath.join(target, path.name) if as_folder else target, mode)
    return buf.getvalue()


def _add(tar: tarfile.TarFile, path: Path, dest: str, mode: int | None) -> None:
    info = tar.gettarinfo(str(path), arcname=dest.lstrip("/"))
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if mode is not None and not path.is_dir():
        info.mode = mode
    if info.isreg():
        with open(path, "rb") as fh:
            tar.addfile(info, fh)
    else:
        tar.addfile(info)


def read(context: Path, has: Callable[[list[str]], list[str]] = host_has) -> Recipe:
    """The steps of `context`/Dockerfile over the host; NotReplayable (one line) when it cannot be built that way."""
    recipe = Recipe()
    global_args: dict[str, str] = {}  # ARGs before FROM: a stage sees one only when it declares it again
    args: dict[str, str] = {}
    stages = 0
    for instruction in dockerfile.read((context / "Dockerfile").read_text()):
        keyword, rest, whole = instruction.keyword, instruction.arguments, instruction.line
        values = {"PATH": DEFAULT_PATH, **args, **recipe.env}  # ($PATH: the host's, where the base image's was)
        if instruction.heredoc:
            raise NotReplayable(f"'{_short(whole)}': a heredoc, which sandbox.rootfs=host does not read")
        if keyword == "FROM":
            stages += 1
            if stages > 1:
                raise NotReplayable(f"'{_short(whole)}': a second build stage, which sandbox.rootfs=host cannot build; "
                              "use sandbox.rootfs=image")
            image, _ = from_parts(rest)
            recipe.adapted.append(f"FROM {image or rest} -> this host's system (sandbox.rootfs=host)")
        elif keyword == "ARG":
            for name, default in arg_pairs(rest):
                if stages == 0:
                    global_args[name] = substitute(default or "", global_args)
                elif default is not None:
                    args[name] = substitute(default, values)
                elif name in global_args:  # `ARG NAME` in the stage: the global default, as Docker gives it
                    args[name] = global_args[name]
        elif keyword == "ENV":
            recipe.env.update(_env_pairs(rest, values))
        elif keyword == "WORKDIR":
            recipe.workdir = posixpath.normpath(posixpath.join(recipe.workdir, substitute(rest.strip('"'), values)))
            recipe.steps.append(BuildStep("run", whole, "/", (), command=f"mkdir -p {shlex.quote(recipe.workdir)}"))
        elif keyword in ("COPY", "ADD"):
            words = json.loads(rest) if rest.startswith("[") else shlex.split(substitute(rest, values))
            archive = _copy(words, whole, keyword, context, recipe.workdir)
            recipe.steps.append(BuildStep("copy", whole, recipe.workdir, (), archive=archive))
        elif keyword == "RUN":
            if rest.startswith("--"):
                raise NotReplayable(f"'{_short(whole)}': BuildKit options, which sandbox.rootfs=host does not run")
            command = shlex.join(json.loads(rest)) if rest.startswith("[") else rest
            command, changes = system_packages(command, whole, has)
            recipe.adapted += changes
            env = {"PATH": DEFAULT_PATH, **args, **recipe.env}
            recipe.steps.append(BuildStep("run", whole, recipe.workdir, tuple(env.items()), command=command))
        elif keyword == "USER":
            if substitute(rest, values).split(":")[0] not in ("root", "0"):
                raise NotReplayable(f"'{_short(whole)}': the recipe runs as another user, which sandbox.rootfs=host "
                              "does not do; use sandbox.rootfs=image")
        elif keyword == "SHELL":
            raise NotReplayable(f"'{_short(whole)}': another shell for RUN, which sandbox.rootfs=host does not use")
        elif keyword not in IGNORED:
            raise NotReplayable(f"'{_short(whole)}': an instruction sandbox.rootfs=host does not know")
    if stages == 0:
        raise NotReplayable("the Dockerfile has no FROM")
    return recipe


def _env_pairs(rest: str, values: dict[str, str]) -> dict[str, str]:
    words = shlex.split(rest)
    if words and "=" not in words[0]:  # the legacy `ENV NAME value with spaces`
        return {words[0]: substitute(rest.split(None, 1)[1] if len(words) > 1 else "", values)}
    out: dict[str, str] = {}
    for word in words:
        name, _, value = word.partition("=")
        out[name] = substitute(value, {**values, **out})
    return out

