"""The base tree of a task taken from a repository's history (a GSO row): the tree at `base_commit`,
from a local bare mirror (offline) or a clone of the repository kept in a cache.

Only the tree goes into the image, never the history: the image's /testbed is a fresh repository whose
one commit is that tree, so the expert's commit is nowhere in the agent's container.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from harness.sandbox.interface import ImageBuildError
from harness.tasks.task import Task

CACHE = Path(os.environ.get("OPTRUNNER_REPO_CACHE", Path.home() / ".cache" / "optrunner" / "repos"))


def _git(args: list[str], what: str, timeout: float = 600) -> bytes:
    try:
        done = subprocess.run(["git", *args], capture_output=True, timeout=timeout,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except subprocess.TimeoutExpired:
        raise ImageBuildError(f"{what}: git {args[0]} took over {timeout:g} s") from None
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise ImageBuildError(f"{what}: {last}")
    return done.stdout


def repository(task: Task) -> Path:
    """A local git directory holding the task's history: its mirror, or a cached clone of its URL."""
    url = task.repo_url or ""
    if not url.startswith(("https://", "http://", "git@", "ssh://")):
        path = Path(url)
        if not path.exists():
            raise ImageBuildError(f"task {task.id}: no repository at {path} (the mirror should hold "
                                  f"{path.name}, a bare clone of {task.repo})")
        return path
    cached = CACHE / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--mirror", "--quiet", url, str(cached)],
             f"task {task.id}: cloning {url} (offline? pass tasks.repo_mirror=DIR holding owner__name.git)")
    return cached


def base_tree_tar(task: Task) -> bytes:
    """The tree at the task's base commit, as a tar archive."""
    if not task.base_commit:
        raise ImageBuildError(f"task {task.id}: no base commit to build from")
    repo = repository(task)
    return _git(["--git-dir", str(repo), "archive", "--format=tar", task.base_commit],
                f"task {task.id}: base commit {task.base_commit[:12]} is not in {repo}")
