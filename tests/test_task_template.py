"""`optrunner tasks init NAME` (harness/tasks/template.py): a task folder that loads, whose expert patch is a
real git diff against its repo, that a real `optrunner validate` accepts as written; bad names and folders
that exist are one line and leave nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.tasks import select_tasks
from runner import cli

ROOT = Path(__file__).resolve().parent.parent


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_init_writes_a_task_that_loads_and_whose_patch_applies(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    code, out, err = call(capsys, "tasks", "init", "close-pairs", "--dir", str(tmp_path))
    folder = tmp_path / "close-pairs"
    assert code == 0 and err == "" and f"optrunner validate --tasks {folder}" in out
    (task,) = select_tasks(str(folder), "suite")
    assert (task.id, task.api, list(task.test_names)) == ("close-pairs", "close_pairs.count_close_pairs",
                                                    ["test_close_pairs.py"])
    applied = subprocess.run(["git", "apply", "--check", "--directory=repo", str(folder / "expert.patch")],
                             cwd=folder, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["close-pairs"]  # (its scratch folder is gone)


@pytest.mark.parametrize("words, message", [
    (["init", "Close"], "error: task name 'Close': use lower-case letters, digits, _ and -"),
    (["init", "1pairs"], "its package name '1pairs' must be a Python identifier"),
    (["init", "there"], "exists already: choose another name or remove it"),
    (["start", "x"], "error: tasks takes flags, or `init NAME` to write a new task folder; got 'start x'"),
])
def test_bad_init_is_one_line_and_leaves_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 words: list[str], message: str) -> None:
    (tmp_path / "there").mkdir()
    code, out, err = call(capsys, "tasks", *words, "--dir", str(tmp_path))
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert [p.name for p in tmp_path.iterdir()] == ["there"] and not any((tmp_path / "there").iterdir())


@pytest.mark.docker
def test_validate_accepts_the_template_as_written(tmp_path: Path) -> None:
    optrunner = [sys.executable, "-m", "runner.cli"]
    subprocess.run([*optrunner, "tasks", "init", "pairs", "--dir", str(tmp_path)], check=True, capture_output=True)
    done = subprocess.run([*optrunner, "validate", "--tasks", str(tmp_path / "pairs"), "--out", str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "true"})
    assert done.returncode in (0, 1) and "tasks valid" in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
    reports = {p.name: json.loads(p.read_text()) for p in (tmp_path / "out").rglob("*.json")}
    gold = [r for name, r in reports.items() if "gold" in name]
    empty = [r for name, r in reports.items() if "empty" in name]
    # the expert's change passes its equivalence checks and is many times faster than the base (~150x here);
    # whether it also matches itself (gold vs expert, opt_commit) is the machine's noise: validate's verdict,
    # "1/1 tasks valid" on a quiet machine
    assert gold and all(g["status"] == "passed" and g["opt_base"] for g in gold), gold
    assert all(g["opt_stats"]["hm_speedup_commit_base"] > 10 for g in gold), [g["opt_stats"] for g in gold]
    assert empty and all(not e["opt_base"] for e in empty), empty
