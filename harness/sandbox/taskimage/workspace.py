"""The workspace of a task whose image is its own (Harbor), whichever provider builds it: what makes its
working directory diffable without putting anything into it.

The working directory (the image's WORKDIR) is committed into a git repository kept outside it (GIT_DIR),
so a sandbox reports the agent's change as a binary-safe diff while the agent sees no .git of ours;
/logs/agent and /logs/verifier exist (Harbor's layout); and the files the agent may not change (the
task's pinned globs) are hashed, for the grader to check before it verifies.
"""
from __future__ import annotations

import posixpath
import shlex

from harness.sandbox.interface import ImageBuildError

GIT_DIR = "/.optrunner/git"
SNAPSHOT = """set -e
mkdir -p /logs/agent /logs/verifier /.optrunner
command -v git >/dev/null || {{ echo "the image has no git (needed to diff the working directory)"; exit 3; }}
git config --system safe.directory '*'
export GIT_DIR={git_dir} GIT_WORK_TREE={workdir}
git init -q
cd {workdir}
git add -A -f .
git commit -q --allow-empty -m 'task environment'
git rev-parse HEAD
"""
# Pinned files: every file whose working-directory path or name matches a glob, with its hash (find and
# sha256sum only, so images without python work too).
PINS = """cd {workdir} && find . \\( -name .git -o -name node_modules -o -name __pycache__ \\) -prune \\
  -o -type f \\( {tests} \\) -print0 | xargs -0 -r sha256sum; echo optrunner-pins-done"""


def pins_command(workdir: str, pinned: tuple[str, ...] | list[str]) -> str:
    """The shell command that hashes the files `pinned` names under `workdir` (parse_pins reads its output)."""
    tests = " -o ".join(f"-name {shlex.quote(g)} -o -path {shlex.quote('./' + g)}" for g in pinned)
    return PINS.format(workdir=shlex.quote(workdir), tests=tests)


def parse_pins(out: str, what: str) -> dict[str, str]:
    """Working-directory path -> sha256 from pins_command's output."""
    if "optrunner-pins-done" not in out:
        raise ImageBuildError(f"{what}: could not hash the pinned files (find, sha256sum): {out[-300:]}")
    pins: dict[str, str] = {}
    for line in out.splitlines():
        digest, sep, path = line.partition("  ")
        if sep and len(digest) == 64:
            pins[posixpath.normpath(path)] = digest
    return pins
