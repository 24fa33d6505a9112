"""The script every provider runs in a sandbox to read its change as a patch (`Sandbox.diff`).

Taken through a repository made for it (its objects borrowed from the sandbox's repository by an
alternate, its own index and configuration), so nothing the agent set there counts: not its index or
commits, not its git config (external diff drivers, filters, fsmonitor, prefixes, hooks), not the
system's or root's. Build and tooling paths are left out. In a repository of the task's own (/testbed)
binary files are left out too, as GSO and OpenHands do; a working directory snapshotted outside itself
(Harbor tasks, `git_dir`) gets a binary-safe diff, since there the files are the task.
"""
from __future__ import annotations

from harness.sandbox.interface import DIFF_EXCLUDES, NoPatch, Sandbox, SandboxError

DIFF_PATH = "/tmp/.optrunner.diff"  # where the script leaves the patch, read back with read_file


def diff_script(workdir: str, base_commit: str, git_dir: str | None) -> str:
    """A bash script (run from /) that writes the change since `base_commit` to DIFF_PATH; it exits
    non-zero when the repository or git is missing or broken (the agent's outcome: NoPatch)."""
    excludes = " ".join(f"':(exclude,glob)**/{p}' ':(exclude,glob)**/{p}/**'" for p in DIFF_EXCLUDES)
    binary = git_dir is not None
    source = git_dir or f"{workdir}/.git"
    drop_binaries = "" if binary else f"""git diff --cached --numstat --no-renames -z {base_commit} |
  while IFS=$'\\t' read -r -d '' added deleted name; do
    if [ "$added" = "-" ]; then git reset -q {base_commit} -- "$name"; fi
  done
"""
    return f"""set -e
cd {workdir} || {{ echo "no working directory {workdir}"; exit 3; }}
[ -d {source}/objects ] || {{ echo "no repository at {source}"; exit 3; }}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory \
  GIT_CONFIG_VALUE_0='*'
git init -q "$T/r"
echo {source}/objects > "$T/r/.git/objects/info/alternates"
cp {source}/info/exclude "$T/r/.git/info/exclude" 2>/dev/null || true
export GIT_DIR="$T/r/.git" GIT_WORK_TREE={workdir} GIT_INDEX_FILE="$T/index"
git read-tree {base_commit}
git add -A {"-f " if binary else ""}-- . {excludes}
{drop_binaries}git diff --cached --no-color --no-renames --no-ext-diff --no-textconv {"--binary " if binary else ""}\
  {base_commit} > {DIFF_PATH}
"""


def take_diff(sandbox: Sandbox, base_commit: str | None, git_dir: str | None) -> str:
    """`Sandbox.diff` for any provider: the script run in `sandbox`, its patch read back. A repository or
    git the agent broke gives NoPatch (its outcome), a lost sandbox SandboxError."""
    if not base_commit:
        raise SandboxError("the image has no base commit label; build it with 'optrunner build'")
    done = sandbox.exec(diff_script(sandbox.workdir, base_commit, git_dir), timeout=300, cwd="/")
    if done.exit_code != 0:
        raise NoPatch(f"git diff failed in the sandbox: {done.output.strip()[-500:]}")
    return sandbox.read_file(DIFF_PATH).decode("utf-8", errors="replace")
