"""Task format: the bundled suite loads, selectors work, and every kind of bad task folder gets one
line that names the task and the field or file."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.__main__ import main as harness_main
from harness.sandbox.taskimage.history import repository
from harness.sandbox.interface import ImageBuildError
from harness.tasks import TaskError, select_tasks
from harness.tasks.folder import load_task
from tests.conftest import write_task

ROOT = Path(__file__).resolve().parents[1]


def test_bundled_suite_meets_the_issue_shape() -> None:
    suite = select_tasks("suite")
    assert len(suite) >= 10
    assert sum("c" in t.languages for t in suite) >= 4
    for task in suite:
        assert len(task.test_names) >= 4, task.id
        assert task.prob_script.strip(), task.id
        assert "diff --git" in task.expert_patch, task.id


def test_selectors() -> None:
    suite = select_tasks("suite")
    smoke = select_tasks("smoke")
    assert 2 <= len(smoke) <= 3 and all("smoke" in t.tags for t in smoke)
    ids = [suite[1].id, suite[0].id]
    assert [t.id for t in select_tasks(",".join(ids))] == ids  # order of the selector is kept
    assert [t.id for t in select_tasks(str(suite[0].path))] == [suite[0].id]


def test_path_selector_loads_a_folder_of_user_tasks(tmp_path: Path) -> None:
    write_task(tmp_path, "alpha")
    write_task(tmp_path, "beta")
    assert [t.id for t in select_tasks(str(tmp_path))] == ["alpha", "beta"]


def test_unknown_id_names_it() -> None:
    with pytest.raises(TaskError, match="unknown task id 'nope'"):
        select_tasks("nope")


@pytest.mark.parametrize(("fields", "message"), [
    ({"api": None}, "missing field 'api'"),
    ({"languages": "python"}, "field 'languages' should be a list of strings"),
    ({"languages": ["cobol"]}, "field 'languages' should list some of"),
    ({"install_commands": [1]}, "field 'install_commands' should be a list of non-empty strings"),
    ({"id": "other"}, "folder is named 'tiny'"),
    ({"test_timeout": "long"}, "field 'test_timeout' should be a number"),
    ({"colour": "blue"}, "unknown field 'colour'"),
])
def test_bad_fields_are_named(tmp_path: Path, fields: dict, message: str) -> None:
    path = write_task(tmp_path, **fields)
    with pytest.raises(TaskError, match=message) as err:
        load_task(path)
    assert str(err.value).startswith("task 'tiny': ") and "\n" not in str(err.value)


def test_malformed_yaml(tiny_task: Path) -> None:
    (tiny_task / "task.yaml").write_text("id: tiny\nrepo: [unclosed\n")
    with pytest.raises(TaskError, match="task.yaml is not valid YAML at line"):
        load_task(tiny_task)


@pytest.mark.parametrize(("remove", "message"), [
    ("expert.patch", "missing file expert.patch"),
    ("prob_script.py", "missing file prob_script.py"),
    ("tests/test_sum.py", "missing hidden tests"),
])
def test_missing_files_are_named(tiny_task: Path, remove: str, message: str) -> None:
    (tiny_task / remove).unlink()
    with pytest.raises(TaskError, match=message):
        load_task(tiny_task)


def test_a_link_out_of_the_task_is_refused(tiny_task: Path) -> None:
    (tiny_task / "tests" / "secrets.txt").symlink_to("/proc/self/environ")
    with pytest.raises(TaskError, match="tests/secrets.txt is a symlink to /proc/self/environ, outside the task"):
        load_task(tiny_task)


def test_a_gso_mirror_with_a_link_out_is_refused(tiny_task: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror" / "acme__tiny.git"
    subprocess.run(["git", "init", "-q", "--bare", str(mirror)], check=True)
    (mirror / "hooks" / "keys").symlink_to(Path.home())
    task = dataclasses.replace(load_task(tiny_task), repo_url=str(mirror))
    with pytest.raises(ImageBuildError, match="hooks/keys is a symlink to .*, outside the task directory"):
        repository(task)
    (mirror / "hooks" / "keys").unlink()
    assert repository(task) == mirror


def test_expert_patch_that_does_not_apply(tiny_task: Path) -> None:
    (tiny_task / "repo" / "tiny" / "__init__.py").write_text("def total(xs):\n    return 0\n")
    with pytest.raises(TaskError, match="expert.patch does not apply to repo/"):
        load_task(tiny_task)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True, text=True)


def test_cli_lists_tasks_as_json() -> None:
    done = _cli("tasks", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) >= 10 and all({"id", "languages"} <= set(row) for row in rows)


@pytest.mark.parametrize("make_bad", ["unknown-id", "malformed-yaml", "patch-does-not-apply"])
def test_cli_bad_input_is_one_line(tmp_path: Path, make_bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    selector = "no-such-task"
    if make_bad != "unknown-id":
        path = write_task(tmp_path)
        selector = str(tmp_path)
        if make_bad == "malformed-yaml":
            (path / "task.yaml").write_text(": : :\n")
        else:
            (path / "repo" / "tiny" / "__init__.py").write_text("changed\n")
    code = harness_main(["tasks", "--tasks", selector])  # in this process: an unexpected exception propagates
    stderr = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
