"""`python -m harness grade | validate`: bad input is one line and writes nothing; a real run writes
a report per instance and a summary with Opt@1 / Opt@K."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.__main__ import main as harness_main
from tests.conftest import write_task
from tests.test_grading import SLOW_PATCH

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize(("content", "message"), [
    ('{"instance_id": "tiny", "model_patch": ""}\nnot json\n', "preds.jsonl:2: not a JSON object"),
    ('{"instance_id": "tiny"}\n', "preds.jsonl:1: missing 'model_patch'"),
    ('{"model_patch": ""}\n', "preds.jsonl:1: missing 'instance_id'"),
    ('{"instance_id": "ghost", "model_patch": ""}\n', "unknown instance_id 'ghost'"),
    ('{"instance_id": "tiny", "model_patch": ""}\n{"instance_id": "tiny", "model_patch": "x"}\n',
     "preds.jsonl:2: duplicate instance_id 'tiny' (first at"),
    ('[{"instance_id": "tiny", "model_patch": 3}]', "item 1: 'model_patch' should be a string"),
    ('[{"instance_id": "tiny"', "not valid JSON at line 1"),
    ("", "no predictions in the file"),
    ('{"tiny": {"instance_id": "other", "model_patch": ""}}', "key 'tiny': the key and its 'instance_id'"),
])
def test_bad_predictions_are_one_line_and_write_nothing(tmp_path: Path, content: str, message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks"
    write_task(tasks)
    preds = tmp_path / "preds.jsonl"
    preds.write_text(content)
    out = tmp_path / "out"
    # In this process (harness.__main__.main, what `python -m harness` runs): an unexpected exception would
    # propagate here; test_selector_matching_nothing runs the command itself.
    code = harness_main(["grade", "--predictions", str(preds), "--tasks", str(tasks), "--out", str(out)])
    stderr = capsys.readouterr().err
    assert code == 2 and "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], stderr
    assert not out.exists()


def test_selector_matching_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"instance_id": "x", "model_patch": ""}\n')
    for command in (["grade", "--predictions", str(preds)], ["validate"]):
        done = _cli(*command, "--tasks", str(tmp_path / "empty"))
        assert done.returncode == 2 and "no task folders" in done.stderr and "Traceback" not in done.stderr


def _prediction_files(folder: Path, patches: list[str], ids: tuple[str, ...] = ("tiny",)) -> list[str]:
    """One GSO predictions file per rollout, each with the patch of that rollout for every task in `ids`."""
    files = []
    for i, patch in enumerate(patches):
        path = folder / f"rollout_{i}.jsonl"
        path.write_text("".join(json.dumps({"instance_id": task_id, "model_patch": patch, "model_name_or_path": "m"})
                                + "\n" for task_id in ids))
        files.append(str(path))
    return files


@pytest.mark.timed  # verdicts on CPU-bound code: alone (make test's second pass)
@pytest.mark.docker
def test_grade_two_rollouts_end_to_end(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    task = write_task(tasks)
    gold = (task / "expert.patch").read_text()
    files = _prediction_files(tmp_path, [SLOW_PATCH, gold])  # rollout 0 slows down, 1 is the expert's change
    out = tmp_path / "out"
    done = _cli("grade", "--predictions", *files, "--tasks", str(tasks), "--out", str(out), "--rounds", "2")
    assert done.returncode == 0, done.stderr
    slow = json.loads((out / "rollout_0" / "tiny" / "report.json").read_text())
    good = json.loads((out / "rollout_1" / "tiny" / "report.json").read_text())
    assert slow["status"] == good["status"] == "passed" and not slow["opt_base"] and good["opt_base"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rollouts"] == 2 and summary["per_task"]["tiny"]["opt_commit"][0] is False
    expected_k = 1.0 if good["opt_commit"] else 0.0
    # The two Opt@K estimators under their own names: GSO's "any of the first K" and the unbiased one.
    assert summary["opt_at_k_first"] == {"1": 0.0, "2": expected_k}
    assert summary["opt_at_k"] == {"1": expected_k / 2, "2": expected_k}
    assert summary["avg_at_k"]["1"] == pytest.approx((slow["score"] + (good["score"] or 0.0)) / 2)
    assert "Opt@1" in done.stdout and "first 2" in done.stdout
    # Re-running the same command resumes: finished reports are reused, not graded again.
    before = (out / "rollout_1" / "tiny" / "report.json").stat().st_mtime_ns
    again = _cli("grade", "--predictions", *files, "--tasks", str(tasks), "--out", str(out), "--rounds", "2")
    assert again.returncode == 0 and again.stderr.count("already graded") == 2
    assert (out / "rollout_1" / "tiny" / "report.json").stat().st_mtime_ns == before
    # --gso-compat takes the files in GSO's natural order whatever the command line's: the same rollouts again.
    compat = _cli("grade", "--predictions", *reversed(files), "--tasks", str(tasks), "--out", str(out), "--rounds", "2",
                  "--gso-compat")
    assert compat.returncode == 0 and compat.stderr.count("already graded") == 2, compat.stderr
    assert json.loads((out / "summary.json").read_text())["opt_at_k_first"]["1"] == 0.0
    # Different grading settings do not reuse them.
    third = _cli("grade", "--predictions", files[0], "--tasks", str(tasks), "--out", str(out), "--rounds", "1")
    assert third.returncode == 0 and "already graded" not in third.stderr


@pytest.mark.docker
def test_sigterm_while_grading_keeps_what_finished(tmp_path: Path) -> None:
    from tests.test_runner import containers_of, signal_when, wait_for

    tasks = tmp_path / "tasks"
    task = write_task(tasks)
    write_task(tasks, "second")
    gold = (task / "expert.patch").read_text()
    # Each task's rollouts are graded in one session: tiny's first, then second's.
    files = _prediction_files(tmp_path, [SLOW_PATCH, gold], ids=("tiny", "second"))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "grade", "--predictions", *files, "--tasks", str(tasks),
                             "--out", str(out), "--rounds", "2"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def ready() -> None:
        wait_for(lambda: (out / "rollout_1" / "tiny" / "report.json").exists(), 300, "the first session's reports")
        wait_for(lambda: bool(containers_of(proc.pid)), 120, "the next session's containers")

    output, _ = signal_when(proc, ready, signal.SIGTERM)
    assert proc.returncode == 143 and "Traceback" not in output, output[-2000:]
    assert not containers_of(proc.pid)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and summary["statuses"] == {"passed": 2}  # what was graded is summarised


@pytest.mark.timed  # verdicts on CPU-bound code: alone (make test's second pass)
@pytest.mark.docker
def test_one_unreadable_patch_is_reported_and_the_others_graded(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    task = write_task(tasks)
    gold = (task / "expert.patch").read_text()
    corrupt = gold.replace("@@ -1,", "@@ -1,9", 1)  # a hunk that lies about its size: no tool can read it
    assert corrupt != gold
    # As other tools write predictions: no final newline. Rollout 1's patch is the one that cannot be read.
    files = _prediction_files(tmp_path, [gold.rstrip("\n"), corrupt.rstrip("\n"), SLOW_PATCH.rstrip("\n")])
    out = tmp_path / "out"
    done = _cli("grade", "--predictions", *files, "--tasks", str(tasks), "--out", str(out), "--rounds", "1")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    good, bad, slow = (json.loads((out / f"rollout_{i}" / "tiny" / "report.json").read_text()) for i in range(3))
    assert good["status"] == slow["status"] == "passed" and good["opt_base"] and not slow["opt_base"]
    assert bad["status"] == "patch_failed" and not bad["patch_successfully_applied"]
    assert bad["reason"].startswith("patch: reading the patch failed\ngit cannot read the patch section"), bad["reason"]
    assert json.loads((out / "summary.json").read_text())["statuses"] == {"passed": 2, "patch_failed": 1}
