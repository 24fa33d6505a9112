"""A run's grading that ends in `error` (infrastructure) is timed once more at once, not kept.

The timing function is the runner's seam between what to grade and where it is timed (locally, on Ray):
here one that answers from a list, so the test says what the engine did each time without Docker.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.grader.config import GradeConfig
from harness.sandbox.interface import TaskImages
from harness.sandbox.providers import provider
from harness.tasks.folder import load_task
from runner.grading import Grader, TimingJob
from runner.records import RolloutRecord
from runner.store import RunStore
from tests.conftest import write_task

CONFIG = GradeConfig(rounds=1)


def _record(rollout: int, patch: str) -> RolloutRecord:
    record = RolloutRecord(instance_id="tiny", rollout=rollout, patch=patch)
    record.patch_sha256 = CONFIG.new_report("tiny", patch)["patch_sha256"]
    return record


def _grade(tmp_path: Path, answers: list[list[str]], retry_errors: bool = True,
           ) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Grade two rollouts with different patches; `answers` holds, per call of the timing function, the
    status of each patch it is handed. Returns the reports and the patches each call was handed."""
    task = load_task(write_task(tmp_path / "tasks"))
    calls: list[list[str]] = []

    def timing(jobs: Sequence[TimingJob], log: Any) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        for i, job in enumerate(jobs):
            statuses = answers[len(calls)]
            calls.append(list(job.patches))
            yield i, [CONFIG.new_report(task.id, patch, status=status, reason=f"{status} #{len(calls)}")
                      for patch, status in zip(job.patches, statuses)]

    grader = Grader(RunStore(tmp_path / "run"), CONFIG, {task.id: TaskImages("img", "img")}, provider("docker"),
                    timing=timing, retry_errors=retry_errors)
    items = [(task, _record(0, "patch zero\n")), (task, _record(1, "patch one\n"))]
    reports = [report for _, _, report in sorted(grader.reports(items), key=lambda x: x[1].rollout)]
    return reports, calls


def test_an_error_is_timed_again_at_once_and_says_what_went_wrong_first(tmp_path: Path) -> None:
    reports, calls = _grade(tmp_path, [["passed", "error"], ["passed"]])
    assert calls == [["patch zero\n", "patch one\n"], ["patch one\n"]]  # only the patch that erred, once
    assert [r["status"] for r in reports] == ["passed", "passed"]
    assert reports[1]["error_before"] == "error #1" and "error_before" not in reports[0]
    stored = RunStore(tmp_path / "run").grading("tiny", 1)
    assert stored is not None and stored["status"] == "passed" and stored["error_before"] == "error #1"


def test_a_second_error_is_kept_and_without_retries_the_first_is(tmp_path: Path) -> None:
    reports, calls = _grade(tmp_path / "twice", [["error", "passed"], ["error"]])
    assert len(calls) == 2 and reports[0]["status"] == "error" and reports[0]["reason"] == "error #2"
    reports, calls = _grade(tmp_path / "off", [["error", "passed"]], retry_errors=False)
    assert len(calls) == 1 and reports[0]["status"] == "error" and "error_before" not in reports[0]
