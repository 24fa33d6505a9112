"""Task ids are plain names, whatever source they come from (issue 33): a GSO row's `instance_id`, a
Harbor directory's name, a folder task's id, a rollout read back from a run directory copied here. A
hostile id (a path, a hidden name, a space, a NUL, a newline) is refused in one line naming it, before it
names a file, a folder or an image. Fixtures are written in each source's real format."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.tasks import TaskError, select_tasks
from harness.tasks.folder import SUITE_DIR, load_task
from harness.tasks.ids import ID_RULE, check_id
from tests.gso_rows import gso_row

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ["../../etc", "a/b", ".hidden", "x y", "nul\x00id", "new\nline", "trailing\n", "-flag", "", "..", "a" * 201]
GOOD = ["Acme__fastsum-1a2b3c4", "numpy__numpy-7ff7ec7", "task.v2", "T_1", "9lives"]
RUN_FIXTURE = Path(__file__).parent / "fixtures" / "run_a718ad9"


def one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and "\x00" not in text, f"not one line: {text!r}"
    return text


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_check_id_refuses_a_hostile_id_in_one_line_naming_it(value: str) -> None:
    with pytest.raises(TaskError) as caught:
        check_id("somewhere", value)
    text = one_line(caught.value)
    assert text.startswith("somewhere: ")
    assert (repr(value[:40]) if len(value) > 200 else repr(value)) in text


@pytest.mark.parametrize("value", GOOD)
def test_check_id_passes_plain_names(value: str) -> None:
    assert check_id("somewhere", value) == value


# ---------------------------------------------------------------- GSO rows (a JSONL file of rows)
@pytest.mark.parametrize("value", ["../../etc", "a/b", ".hidden", "x y", "nul\x00id", "new\nline"], ids=repr)
def test_a_gso_row_with_a_hostile_instance_id_is_refused(tmp_path: Path, value: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(gso_row()) + "\n" + json.dumps(gso_row(value)) + "\n")
    with pytest.raises(TaskError) as caught:
        select_tasks(str(rows), "gso")
    text = one_line(caught.value)
    assert repr(value) in text and "row 2" in text and ID_RULE in text


def test_gso_rows_with_plain_ids_still_load(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(gso_row(i)) + "\n" for i in GOOD[:2]))
    assert [t.id for t in select_tasks(str(rows), "gso")] == GOOD[:2]


def test_the_harness_cli_refuses_a_hostile_gso_row_in_one_line(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(gso_row("../../etc")) + "\n")
    done = subprocess.run([sys.executable, "-m", "harness", "tasks", "--source", "gso", "--tasks", str(rows)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "'../../etc'" in lines[0], done.stderr


# ---------------------------------------------------------------- Harbor task directories
def harbor_task(folder: Path) -> Path:
    """A minimal Harbor task directory in Harbor's layout."""
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text('version = "1.0"\n[metadata]\ntags = ["t"]\n[verifier]\ntimeout_sec = 60\n'
                                      "[environment]\ncpus = 1\n")
    (folder / "instruction.md").write_text("Make it faster.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    return folder


@pytest.mark.parametrize("name", [".hidden", "x y", "new\nline", "-flag", "tab\there"], ids=repr)
def test_a_harbor_directory_with_a_hostile_name_is_refused(tmp_path: Path, name: str) -> None:
    harbor_task(tmp_path / "tasks" / "fine-task")
    harbor_task(tmp_path / "tasks" / name)
    with pytest.raises(TaskError) as caught:
        select_tasks(str(tmp_path / "tasks"), "harbor")
    assert repr(name) in one_line(caught.value)
    with pytest.raises(TaskError):  # named alone, too
        select_tasks(str(tmp_path / "tasks" / name), "harbor")


def test_a_harbor_directory_named_through_dot_dot_takes_its_real_name(tmp_path: Path) -> None:
    """`tasks.path=task/sub/..` (or `.`) names the task directory itself: its id is the folder's name, not
    "..", which would have named rollouts/../ and trajectories/../ in the run directory."""
    task = harbor_task(tmp_path / "real-task")
    (task / "sub").mkdir()
    [found] = select_tasks(str(task / "sub" / ".."), "harbor")
    assert found.id == "real-task"


# ---------------------------------------------------------------- folder tasks (task.yaml)
def folder_task(tmp_path: Path, folder_name: str, task_id: str) -> Path:
    source = SUITE_DIR / "rollstats"
    target = tmp_path / folder_name
    shutil.copytree(source, target)
    text = (target / "task.yaml").read_text()
    (target / "task.yaml").write_text(text.replace("id: rollstats", f"id: {json.dumps(task_id)}", 1))
    return target


@pytest.mark.parametrize("task_id", ["../../etc", "a/b", ".hidden", "x y", "nul\x00id", "new\nline"], ids=repr)
def test_a_folder_task_with_a_hostile_id_is_refused(tmp_path: Path, task_id: str) -> None:
    with pytest.raises(TaskError) as caught:
        load_task(folder_task(tmp_path, "etc", task_id))
    text = one_line(caught.value)
    assert repr(task_id) in text and ID_RULE in text


def test_a_folder_task_in_a_hostile_folder_name_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(TaskError) as caught:
        load_task(folder_task(tmp_path, "new\nline", "new\nline"))
    assert repr("new\nline") in one_line(caught.value)


# ---------------------------------------------------------------- a run directory copied from elsewhere
def test_a_copied_run_with_a_hostile_rollout_id_writes_no_page_outside_and_warns(tmp_path: Path) -> None:
    """A rollout record whose instance_id is a path would have put its page outside pages/; it gets one
    warning line and no page, and every other rollout still gets its page."""
    run = tmp_path / "deep" / "er" / "run"
    shutil.copytree(RUN_FIXTURE, run)
    record_path = sorted(run.glob("rollouts/*/0.json"))[0]
    record = json.loads(record_path.read_text())
    record["instance_id"] = "../../../escaped"
    record_path.write_text(json.dumps(record))
    before = {p for p in tmp_path.rglob("*")}
    done = subprocess.run([sys.executable, "-m", "runner.view", str(run)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "escaped" in line]
    assert len(warnings) == 1 and "'../../../escaped'" in warnings[0] and "Traceback" not in done.stderr
    made = {p for p in tmp_path.rglob("*")} - before
    assert made and all(p.is_relative_to(run) for p in made), sorted(map(str, made))
    assert not list(tmp_path.rglob("escaped*"))
    pages = sorted(run.glob("pages/*/*.html"))
    assert len(pages) == len(list(run.glob("rollouts/*/*.json"))) - 1


def test_a_trajectory_named_outside_the_run_is_not_read(tmp_path: Path) -> None:
    from runner.pages import write_run_pages

    run = tmp_path / "run"
    shutil.copytree(RUN_FIXTURE, run)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"messages": [{"role": "user", "content": "SECRET-OUTSIDE-THE-RUN"}]}))
    record_path = sorted(run.glob("rollouts/*/0.json"))[0]
    record = json.loads(record_path.read_text())
    record["trajectory"] = "../secret.json"
    record_path.write_text(json.dumps(record))
    write_run_pages(run)
    page = run / "pages" / record["instance_id"] / "0.html"
    assert page.exists() and "SECRET-OUTSIDE-THE-RUN" not in page.read_text()
