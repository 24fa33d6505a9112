"""What every task image holds, whichever provider builds it.

A folder task's /testbed is a git repository whose ONLY commit is its base tree (`repo_tar`, committed
with GIT_ENV's fixed identity and dates, so the base commit's sha is the same on every machine); a task
from a repository's history gets that history (history.py), and its agent's image the history after the
base commit cut (CUT_HISTORY). Every shell gets IMAGE_ENV, and the task's virtualenv, when it has one,
first on PATH. `task_image_tag` names an image by a hash of all its inputs, so an unchanged one is reused
and a changed one rebuilt.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

from harness.tasks.task import Task
from harness.sandbox.interface import TESTBED

RECIPE_VERSION = "1"  # bump when what a task image holds, or the steps that make it, change meaning
HISTORY_RECIPE = "2"  # 2: the repository's history checked out at the base commit (1: the base tree alone)
IMAGE_ENV = {"PYTHONPATH": TESTBED, "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
# Fixed identity and dates make the base commit's sha the same on every machine.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "optrunner", "GIT_AUTHOR_EMAIL": "optrunner@localhost",
    "GIT_COMMITTER_NAME": "optrunner", "GIT_COMMITTER_EMAIL": "optrunner@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}
# A folder task's tree as one fresh commit (run in it with GIT_ENV: no history, so no later commit is reachable
# from the image), printing its sha last.
BASE_COMMIT = "git init -q && git add -A && git commit -q -m 'base commit' && git rev-parse HEAD"
VENV = f"{TESTBED}/.venv"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The image's label: what was changed to build it on this machine (a JSON list of lines), e.g. a FROM image
# replaced by a local substitute, or the host's system standing in for it.
ADAPTED = "optrunner.adapted"

# The task's virtualenv made every shell's python: found by a token (login shells may print errors of an
# image's profile scripts), then a profile.d script for login shells (/etc/profile resets PATH) beside the
# image ENV that `venv_env` gives.
VENV_FOUND = f"test -x {VENV}/bin/python && echo optrunner-venv || true"
VENV_PROFILE = (f"mkdir -p /etc/profile.d && printf 'export VIRTUAL_ENV={VENV}\\nexport PATH={VENV}/bin:$PATH\\n' "
                "> /etc/profile.d/zz-task-venv.sh")

# The agent's image keeps only what HEAD (the base commit) reaches: HEAD's history moves to a fresh
# repository and the old .git (every other object, the expert's commit among them) is removed.
CUT_HISTORY = """set -e
cd /testbed
git rev-parse --verify -q HEAD >/dev/null
rm -rf /tmp/.agent.git
git init -q --bare /tmp/.agent.git
git push -q /tmp/.agent.git HEAD:refs/heads/main
[ -f .git/info/exclude ] && cp .git/info/exclude /tmp/.agent.git/info/exclude
rm -rf .git
mv /tmp/.agent.git .git
git config --bool core.bare false
git symbolic-ref HEAD refs/heads/main
git reset -q
rm -f .git/ORIG_HEAD
git reflog expire --expire=now --all
git rev-parse HEAD
"""


def venv_env(path: str = DEFAULT_PATH) -> dict[str, str]:
    """The ENV that makes the task's virtualenv every shell's python, `path` after it."""
    return {"VIRTUAL_ENV": VENV, "PATH": f"{VENV}/bin:{path}"}


def content_hash(*chunks: bytes) -> str:
    """A short hash of `chunks`, each length-prefixed (so ("ab", "c") and ("a", "bc") differ)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))
        h.update(chunk)
    return h.hexdigest()[:16]


def repo_files(task: Task) -> list[Path]:
    """The files of a folder task's repository that go to /testbed (no .git, no __pycache__)."""
    return sorted(p for p in task.repo_dir.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and ".git" not in p.parts)


def task_image_tag(task: Task, base_tag: str) -> str:
    """The task image's tag over `base_tag`: its hash covers the repository (or the commits naming it) and
    the task's set-up and install commands."""
    chunks = [RECIPE_VERSION.encode(), base_tag.encode(),
              json.dumps([task.setup_commands, task.install_commands]).encode()]
    if task.base_commit:  # a tree from a repository's history: its commits name it
        chunks += [HISTORY_RECIPE.encode(), task.repo.encode(), task.base_commit.encode(),
                   str(task.opt_commit).encode(), str(task.install_block).encode()]
    else:
        for path in repo_files(task):
            chunks += [str(path.relative_to(task.repo_dir)).encode(), path.read_bytes(),
                       str(os.access(path, os.X_OK)).encode()]
    return f"optrunner/task-{task.id.lower()}:{content_hash(*chunks)}"


def repo_tar(task: Task) -> bytes:
    """A folder task's repository as a tar archive (owned by root) to unpack at /testbed."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in repo_files(task):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(task.repo_dir)))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            with open(path, "rb") as fh:
                tar.addfile(info, fh)
    return buf.getvalue()
