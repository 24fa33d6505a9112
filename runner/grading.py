"""A run's gradings: each finished rollout's patch through the harness grader, one timing job at a time.

A stored report is reused while the patch and the grading settings are unchanged (resume). Within a run,
rollouts of one task that produced byte-identical patches share one grading: timing the same code twice
only measures noise, and the reuse is recorded (`reused_from`).
"""
from __future__ import annotations

import threading
from typing import Any

from harness.grader.config import GradeConfig
from harness.grader.grade import grade
from harness.sandbox.interface import TaskImages
from harness.sandbox.providers import SandboxProvider
from harness.tasks.task import Task
from runner.records import ResultRecord, RolloutRecord
from runner.store import RunStore

# One timing job at a time in this process: concurrent timing runs would measure each other.
TIMING_LOCK = threading.Lock()


class Grader:
    def __init__(self, store: RunStore, config: GradeConfig, images: dict[str, TaskImages], sandboxes: SandboxProvider,
                 force: bool = False) -> None:
        self.store, self.config, self.images, self.sandboxes, self.force = store, config, images, sandboxes, force
        self._by_patch: dict[tuple[str, str | None], tuple[int, dict[str, Any]]] = {}

    def _matches(self, report: dict[str, Any] | None, record: RolloutRecord) -> bool:
        return report is not None and not self.force and self.config.matches(report, record.patch_sha256)

    def report(self, task: Task, record: RolloutRecord, log: Any = lambda _m: None) -> dict[str, Any]:
        """The grading report of one rollout: stored, shared with an identical patch, or measured now."""
        index = record.rollout
        stored = self.store.grading(task.id, index)
        if stored is not None and self._matches(stored, record):
            report = stored
        else:
            same = self._by_patch.get((task.id, record.patch_sha256))
            if same is not None and same[0] != index:
                report = {**same[1], "reused_from": same[0]}
            else:
                with TIMING_LOCK:
                    report = grade(task, record.patch or "", self.images[task.id].grading, self.config,
                                   instance_id=task.id, log=log, sandboxes=self.sandboxes)
            self.store.save_grading(task.id, index, report)
        if "reused_from" not in report:
            self._by_patch[(task.id, record.patch_sha256)] = (index, report)
        return report

    def result(self, task: Task, record: RolloutRecord) -> ResultRecord:
        """The results.jsonl record of a graded rollout."""
        return graded(self.store, record, self.report(task, record))


def graded(store: RunStore, record: RolloutRecord, report: dict[str, Any] | None) -> ResultRecord:
    """A results.jsonl record: the rollout plus the summary of its grading (None: not graded)."""
    return ResultRecord.graded(record, report, store.grading_ref(record.instance_id, record.rollout))
