"""`optrunner tasks init NAME`: a new task folder in the suite's format (docs/tasks.md), working as written.

The template is a small library with one slow function (pairs of close integers counted by a double loop),
the spec script the agent sees, one hidden test in GSO's protocol and the expert's change (sort and bisect)
as a real git diff made here. `optrunner validate --tasks DIR/NAME` accepts it as it is: the expert passes
and beats the base, the empty patch does not. Replace each part with your library's, keeping the layout;
validate again after each change.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.tasks.folder import ID_PATTERN
from harness.tasks.task import TaskError

TASK_YAML = """\
# A task of this tool's own format (docs/tasks.md, "Your own task folders"); the id is the folder's name.
id: {id}
repo: {package}                     # the library's name
api: {package}.count_close_pairs    # what the hidden tests time
description: >-
  Counting the pairs of values that lie within a gap of each other gets slow as the list grows.
languages: [python]
setup_commands: []    # shell commands run once in the image (e.g. apt-get install ...)
install_commands: []  # run in /testbed before every state is timed (e.g. pip install -e . or make)
tags: []
test_timeout: 120     # seconds for one hidden test's run
"""

INIT = '''"""{package}: the library the agent optimizes (its /testbed). Replace it with yours."""
from {package}.pairs import count_close_pairs

__all__ = ["count_close_pairs"]
'''

BASE = '''"""Pairs of close values."""


def count_close_pairs(values, gap):
    """How many pairs i < j have |values[i] - values[j]| <= gap (integers)."""
    count = 0
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            if abs(values[i] - values[j]) <= gap:
                count += 1
    return count
'''

EXPERT = '''"""Pairs of close values."""
import bisect


def count_close_pairs(values, gap):
    """How many pairs i < j have |values[i] - values[j]| <= gap (integers)."""
    ordered = sorted(values)
    count = 0
    for i, value in enumerate(ordered):  # the pairs (i, j > i) in sorted order that are close
        count += bisect.bisect_right(ordered, value + gap, lo=i + 1) - (i + 1)
    return count
'''

PROB_SCRIPT = '''"""What the agent is shown: {package}.count_close_pairs timed on one list of random integers."""
import random
import time

from {package} import count_close_pairs

rng = random.Random(0)
values = [rng.randrange(1_000_000) for _ in range(1_500)]
start = time.perf_counter()
pairs = count_close_pairs(values, 500)
print(f"count_close_pairs: {{pairs}} pairs among {{len(values)}} values, time: {{time.perf_counter() - start:.4f}}s")
'''

TEST = '''"""Hidden test: close pairs in three lists of random integers with different spreads (GSO's protocol:
setup, experiment, store_result, load_result, check_equivalence, run_test)."""
import random

import perfkit
from perfkit import load_result, store_result  # noqa: F401  (the reference result, pickled)
from {package} import count_close_pairs


def setup():
    rng = random.Random(7)
    return {{"lists": [([rng.randrange(spread) for _ in range(2_000)], gap)
                      for spread, gap in ((1_000_000, 500), (100_000, 20), (10_000_000, 4_000))]}}


def experiment(data):
    return {{"pairs": [count_close_pairs(values, gap) for values, gap in data["lists"]]}}


def check_equivalence(reference, current):
    assert reference == current, (reference, current)


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
'''


def init_task(name: str, parent: Path) -> Path:
    """Write the task folder `parent/name`; TaskError (one line) for a bad name or a folder that exists.
    Written in a temporary folder and moved in whole: a failure leaves nothing."""
    if not ID_PATTERN.fullmatch(name):
        raise TaskError(f"task name {name!r}: use lower-case letters, digits, _ and - (a task folder's id matches "
                        f"{ID_PATTERN.pattern})")
    target = parent / name
    if target.exists():
        raise TaskError(f"{target} exists already: choose another name or remove it")
    if not parent.is_dir():
        raise TaskError(f"{parent}: no such folder (give --dir an existing folder)")
    package = name.replace("-", "_")
    if not package.isidentifier():
        raise TaskError(f"task name {name!r}: its package name {package!r} must be a Python identifier "
                        "(start with a letter)")
    with tempfile.TemporaryDirectory(dir=parent, prefix=f".{name}-") as tmp:
        task = Path(tmp) / name
        files = {"task.yaml": TASK_YAML.format(id=name, package=package),
                 f"repo/{package}/__init__.py": INIT.format(package=package),
                 f"repo/{package}/pairs.py": BASE,
                 "prob_script.py": PROB_SCRIPT.format(package=package),
                 "tests/test_close_pairs.py": TEST.format(package=package)}
        for relative, text in files.items():
            (task / relative).parent.mkdir(parents=True, exist_ok=True)
            (task / relative).write_text(text)
        (task / "expert.patch").write_text(_diff(task / "repo", {f"{package}/pairs.py": EXPERT}))
        shutil.move(str(task), target)
    return target


def _diff(repo: Path, changed: dict[str, str]) -> str:
    """The git diff that turns `repo` into `repo` with the files `changed` (made in a scratch copy)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(repo, work)
        git = ["git", "-C", str(work), "-c", "user.name=optrunner", "-c", "user.email=optrunner@localhost"]
        try:
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
                subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)
            for relative, text in changed.items():
                (work / relative).write_text(text)
            return subprocess.run([*git, "diff"], check=True, capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as err:
            raise TaskError(f"could not make the expert's patch with git ({err}): is git installed?") from None
