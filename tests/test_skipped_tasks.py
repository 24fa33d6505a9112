"""A task whose images cannot be made is skipped with its reason and the other tasks run (runner.run,
harness.sandbox.providers.ensure_each): one broken task of a benchmark must not stop the whole run. Its
rollouts stay unfinished, counted as failures and said in the report, until the same command, run again
after the fix, builds and runs them. When no task can be built the run stops in one line, as before."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import write_task
from tests.test_runner import FAST, ROOT, SLOW, results, runner

pytestmark = pytest.mark.docker
BROKEN = ["echo compiling; echo 'error: no compiler for this' >&2; exit 3"]


def test_a_task_that_cannot_be_built_is_skipped_and_the_others_run(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    write_task(tasks, "alpha", slow_src=SLOW, fast_src=FAST)
    write_task(tasks, "broken", slow_src=SLOW, fast_src=FAST, install_commands=BROKEN)
    args = ("model=noop", "scaffold=mini_swe", f"tasks.selector={tasks}", "rollouts=1", "grade=none", "name=skips")

    done = runner(*args, out=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[broken] skipped: install command: command failed (exit 3)" in done.stdout
    assert "warning: 1 of 2 tasks skipped" in done.stdout
    run = tmp_path / "runs" / "skips"
    assert [r["instance_id"] for r in results(run)] == ["alpha"]
    report = json.loads((run / "report.json").read_text())
    assert list(report["skipped_tasks"]) == ["broken"]
    assert report["skipped_tasks"]["broken"].startswith("install command: command failed (exit 3)")
    assert report["summary"]["n_missing"] == 1  # the skipped task's rollout counts as a failure
    assert "Task `broken` was skipped" in (run / "report.md").read_text()

    # Fixed, the same command builds it and runs only what is missing.
    meta = yaml.safe_load((tasks / "broken" / "task.yaml").read_text())
    (tasks / "broken" / "task.yaml").write_text(yaml.safe_dump({**meta, "install_commands": ["true"]}))
    again = runner(*args, out=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "1 rollouts already finished, 1 to run" in again.stdout
    assert sorted(r["instance_id"] for r in results(run)) == ["alpha", "broken"]
    assert "skipped_tasks" not in json.loads((run / "report.json").read_text())

    # Broken again, a regrade grades the others and keeps its stored result as it was.
    (tasks / "broken" / "task.yaml").write_text(yaml.safe_dump({**meta, "install_commands": BROKEN}))
    before = {r["instance_id"]: r for r in results(run)}
    regrade = subprocess.run([sys.executable, "-m", "runner.grade", str(run), "--rounds", "2"], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    assert regrade.returncode == 0, regrade.stderr[-2000:]
    after = {r["instance_id"]: r for r in results(run)}
    assert list(after) == ["alpha", "broken"] and after["broken"] == before["broken"]
    assert after["alpha"]["grading"]["status"] == "empty_patch"  # (the no-op's patch, graded now)
    assert list(json.loads((run / "report.json").read_text())["skipped_tasks"]) == ["broken"]


def test_a_run_whose_every_task_fails_to_build_stops_in_one_line(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    write_task(tasks, "broken", slow_src=SLOW, fast_src=FAST, install_commands=BROKEN)
    done = runner("model=noop", "scaffold=mini_swe", f"tasks.selector={tasks}", "rollouts=1", "grade=none",
                  out=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "error: image build failed: task broken: install command: command failed (exit 3)" in done.stderr
