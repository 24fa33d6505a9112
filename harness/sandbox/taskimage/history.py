"""The history of a task taken from a repository (a GSO row): a local bare mirror (offline) or a clone
of the repository kept in a cache, checked to hold the task's base and expert commits, and packed into a
tar archive for the image build (either provider's). That history goes into the grading image only; the
agent's image keeps none of it after the base commit (contents.CUT_HISTORY).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
from pathlib import Path
from typing import IO

from harness.sandbox.interface import ImageBuildError
from harness.tasks.task import Task, TaskError, refuse_links_out

CACHE = Path(os.environ.get("OPTRUNNER_REPO_CACHE", Path.home() / ".cache" / "optrunner" / "repos"))


def _git(args: list[str], what: str, timeout: float = 600) -> bytes:
    try:
        done = subprocess.run(["git", *args], capture_output=True, timeout=timeout,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except subprocess.TimeoutExpired:
        raise ImageBuildError(f"{what}: git {args[0]} took over {timeout:g} s") from None
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or [""])[-1]
        raise ImageBuildError(f"{what}: {last}" if last else what)
    return done.stdout


def repository(task: Task) -> Path:
    """A local git directory holding the task's history: its mirror, or a cached clone of its URL."""
    url = task.repo_url or ""
    if not url.startswith(("https://", "http://", "git@", "ssh://")):
        path = Path(url)
        if not path.exists():
            raise ImageBuildError(f"task {task.id}: no repository at {path} (the mirror should hold "
                                  f"{path.name}, a bare clone of {task.repo})")
        try:  # the mirror goes into the image as it is: a link out of it would carry this machine's files
            refuse_links_out(path, f"task {task.id}: the mirror {path}")
        except TaskError as err:
            raise ImageBuildError(str(err)) from None
        return path
    cached = CACHE / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--mirror", "--quiet", url, str(cached)],
             f"task {task.id}: cloning {url} (offline? pass tasks.repo_mirror=DIR holding owner__name.git)")
    return cached


def repository_tar(task: Task, out: IO[bytes], arcname: str) -> None:
    """Write the task's repository (a bare git directory) as a tar archive whose root is `arcname`."""
    if not task.base_commit:
        raise ImageBuildError(f"task {task.id}: no base commit to build from")
    repo = repository(task)
    for name, sha in (("base", task.base_commit), ("expert", task.opt_commit)):
        if sha:
            _git(["--git-dir", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"],
                 f"task {task.id}: the {name} commit {sha[:12]} is not in {repo}")

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(str(repo), arcname=arcname.lstrip("/"), filter=as_root)
