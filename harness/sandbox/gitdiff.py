"""The script every provider runs in a sandbox to read its change as a patch (`Sandbox.diff`).

Taken through a repository made for it (its objects borrowed from the sandbox's repository by an
alternate, its own index and configuration), so nothing the agent set there counts: not its index or
commits, not its git config (external diff drivers, filters, fsmonitor, prefixes, hooks), not the
system's or root's. Build and tooling paths are left out. In a repository of the task's own (/testbed)
binary files are left out too, as GSO and OpenHands do; a working directory snapshotted outside itself
(Harbor tasks, `git_dir`) gets a binary-safe diff, since there the files are the task.

Run as the grader's own command (`harness_exec`: no login shell, no profile or rc file, a fixed
environment and PATH), so no shell function, alias or variable the agent left in its profile stands in
for git. The patch is written into a folder mktemp makes for this diff alone (a fixed path could be a
symlink or a directory the agent left there), at most `max_bytes` + 1 of it: a larger change is
PatchTooLarge, and the runner never holds more of it than that.
"""
from __future__ import annotations

import re
import shlex

from harness.sandbox.interface import (DIFF_EXCLUDES, FileTooLarge, NoPatch, PatchTooLarge, Sandbox, SandboxError,
                                       harness_exec)

TOO_LARGE = 4  # the script's exit code for a patch over the limit
_AT = re.compile(r"^optrunner-diff-at (/tmp/\.optrunner-diff\.[A-Za-z0-9]+)$", re.MULTILINE)


def diff_script(workdir: str, base_commit: str, git_dir: str | None, max_bytes: int) -> str:
    """A bash script (run from /) that writes the change since `base_commit` to a new folder's `patch`
    and prints that folder (`optrunner-diff-at DIR`); it exits TOO_LARGE when the patch has more than
    `max_bytes`, and otherwise non-zero when the repository or git is missing or broken (NoPatch)."""
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
T=$(mktemp -d /tmp/.optrunner-diff.XXXXXXXXXX)
trap 'rm -rf "$T"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory \
  GIT_CONFIG_VALUE_0='*'
git init -q "$T/r"
echo {source}/objects > "$T/r/.git/objects/info/alternates"
cp {source}/info/exclude "$T/r/.git/info/exclude" 2>/dev/null || true
export GIT_DIR="$T/r/.git" GIT_WORK_TREE={workdir} GIT_INDEX_FILE="$T/index"
git read-tree {base_commit}
git add -A {"-f " if binary else ""}-- . {excludes}
# (git is cut off by head past the limit: its SIGPIPE, 141, is the expected end then)
{drop_binaries}{{ rc=0; git diff --cached --no-color --no-renames --no-ext-diff --no-textconv \
  {"--binary " if binary else ""}{base_commit} || rc=$?; echo $rc > "$T/rc"; }} | head -c {max_bytes + 1} > "$T/patch"
rc=$(cat "$T/rc"); [ "$rc" = 0 ] || [ "$rc" = 141 ] || {{ echo "git diff failed ($rc)"; exit 3; }}
[ "$(wc -c < "$T/patch")" -le {max_bytes} ] || {{ echo "the patch has more than {max_bytes} bytes"; exit {TOO_LARGE}; }}
rm -rf "$T/r" "$T/index" "$T/rc"
trap - EXIT
echo "optrunner-diff-at $T"
"""


def take_diff(sandbox: Sandbox, base_commit: str | None, git_dir: str | None) -> str:
    """`Sandbox.diff` for any provider: the script run in `sandbox`, its patch read back. A repository or
    git the agent broke gives NoPatch (its outcome), a patch over `limits.max_patch_bytes` PatchTooLarge,
    a lost sandbox SandboxError."""
    if not base_commit:
        raise SandboxError("the image has no base commit label; build it with 'optrunner build'")
    limit = sandbox.limits.max_patch_bytes
    # No login shell, a fixed environment (harness_exec): a `git` shell function or an alias in the agent's
    # profile would otherwise run in place of git and print whatever patch it likes.
    done = harness_exec(sandbox, diff_script(sandbox.workdir, base_commit, git_dir, limit), timeout=300, cwd="/")
    if done.exit_code == TOO_LARGE:
        raise PatchTooLarge(f"the change is over sandbox.max_patch_bytes ({limit} bytes); it was not read")
    found = _AT.search(done.output)
    if done.exit_code != 0 or found is None:
        raise NoPatch(f"git diff failed in the sandbox: {done.output.strip()[-500:]}")
    folder = found.group(1)
    try:  # (its size as the script counted it is not trusted: the read has the cap too)
        return sandbox.read_file(f"{folder}/patch", limit).decode("utf-8", errors="replace")
    except FileTooLarge:
        raise PatchTooLarge(f"the change is over sandbox.max_patch_bytes ({limit} bytes); it was not read") from None
    except OSError as err:  # replaced under the script's feet by something the agent left running
        raise NoPatch(f"the patch could not be read back: {type(err).__name__}: {err}") from None
    finally:
        harness_exec(sandbox, f"rm -rf {shlex.quote(folder)}", timeout=60, cwd="/")
