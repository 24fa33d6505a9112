"""A run's gradings: each finished rollout's patch through the harness grader.

A stored report is reused while the patch and the grading settings are unchanged (resume), unless its
status is `error` (infrastructure: the engine died), which is redone unless retry_errors is off; a
grading that ends in `error` now is timed once more at once (`error_before` keeps why). Within a run,
rollouts of one task that produced byte-identical patches share one grading: timing the same code twice
only measures noise, and the reuse is recorded (`reused_from`). What is left to measure becomes one
timing job per task, all its distinct patches graded in one session (harness.grader.grade), handed to
a timing function: here one job at a time (`time_locally`); on Ray, one job per node at a time.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from harness.grader.config import GradeConfig
from harness.sandbox.interface import TaskImages
from harness.sandbox.providers import DEFAULT_PROVIDER, SandboxProvider
from harness.tasks.task import Task
from runner.records import ResultRecord, RolloutRecord
from runner.store import RunStore


@dataclass
class TimingJob:
    """The patches of one task to time and judge in one session (plain, picklable)."""
    task: Task
    patches: list[str]
    image: str  # the task's grading image
    config: GradeConfig
    base_image: str = ""  # what the base's and the patches' states start from (TaskImages.base; "": image)
    provider: str = DEFAULT_PROVIDER  # the run's sandbox provider, by name: a Ray node starts its own of it


# One timing job at a time in this process: concurrent timing runs would measure each other.
TIMING_LOCK = threading.Lock()
Log = Callable[[str], None]
Timing = Callable[[Sequence[TimingJob], Log], Iterator[tuple[int, list[dict[str, Any]]]]]


def time_locally(sandboxes: SandboxProvider) -> Timing:
    """Timing on this machine: the jobs one after another, yielded as each finishes."""
    def timing(jobs: Sequence[TimingJob], log: Log) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        from harness.grader.grade import grade_patches

        for i, job in enumerate(jobs):
            with TIMING_LOCK:
                reports = grade_patches(job.task, list(job.patches), job.image, job.config,
                                        instance_id=job.task.id, log=log, sandboxes=sandboxes,
                                        base_image=job.base_image)
            yield i, reports
    return timing


class Grader:
    def __init__(self, store: RunStore, config: GradeConfig, images: dict[str, TaskImages], sandboxes: SandboxProvider,
                 force: bool = False, timing: Timing | None = None, retry_errors: bool = True) -> None:
        self.store, self.config, self.images, self.force = store, config, images, force
        self.retry_errors = retry_errors  # a stored report with status error (infrastructure) is redone
        self.provider = sandboxes.name  # each timing job names it (the Ray executor times on other machines)
        self.timing = timing or time_locally(sandboxes)
        self._by_patch: dict[tuple[str, str | None], tuple[int, dict[str, Any]]] = {}

    def _matches(self, report: dict[str, Any] | None, record: RolloutRecord) -> TypeGuard[dict[str, Any]]:
        if report is None or self.force or (self.retry_errors and report.get("status") == "error"):
            return False
        return self.config.matches(report, record.patch_sha256)

    def reports(self, items: Sequence[tuple[Task, RolloutRecord]], log: Log = lambda _m: None,
                ) -> Iterator[tuple[Task, RolloutRecord, dict[str, Any]]]:
        """The grading report of each rollout, as each is ready: stored, shared with an identical patch,
        or measured now (the distinct patches left over, one timing session per task)."""
        jobs: list[TimingJob] = []  # one per task
        waiting: list[list[list[tuple[Task, RolloutRecord]]]] = []  # per job, per patch: the rollouts it grades
        job_of: dict[str, int] = {}
        slot_of: dict[tuple[str, str | None], tuple[int, int]] = {}
        for task, record in items:
            too_large = record.details.get("patch_too_large")
            if too_large:  # nothing to grade: the change was never read
                report = self.config.new_report(task.id, "", status="patch_too_large", reason=too_large, score=0.0)
                yield task, record, self._keep(task, record, report, save=True)
                continue
            stored = self.store.grading(task.id, record.rollout)
            if self._matches(stored, record):
                yield task, record, self._keep(task, record, stored)
                continue
            key = (task.id, record.patch_sha256)
            same = self._by_patch.get(key)
            if same is not None and same[0] != record.rollout:
                yield task, record, self._keep(task, record, {**same[1], "reused_from": same[0]}, save=True)
            elif key in slot_of:
                j, k = slot_of[key]
                waiting[j][k].append((task, record))
            else:
                if task.id not in job_of:
                    job_of[task.id] = len(jobs)
                    images = self.images[task.id]
                    jobs.append(TimingJob(task, [], images.grading, self.config, images.base, self.provider))
                    waiting.append([])
                j = job_of[task.id]
                jobs[j].patches.append(record.patch or "")
                waiting[j].append([(task, record)])
                slot_of[key] = (j, len(waiting[j]) - 1)
        for j, reports in self._timed(jobs, log):
            for k, report in enumerate(reports):
                (task, first), *others = waiting[j][k]
                yield task, first, self._keep(task, first, report, save=True)
                for task, record in others:
                    yield task, record, self._keep(task, record, {**report, "reused_from": first.rollout}, save=True)

    def _timed(self, jobs: Sequence[TimingJob], log: Log) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """The timing function's reports, where one is an `error` (infrastructure: an engine that lost a
        command's output, a container that died under it) its patch timed once more at once: a run's
        results should not keep a verdict the engine decided. The report says what went wrong first."""
        for j, reports in self.timing(jobs, log):
            again = [k for k, report in enumerate(reports) if report.get("status") == "error"]
            if again and self.retry_errors:
                log(f"{jobs[j].task.id}: {len(again)} grading(s) failed on the infrastructure; timing them again")
                retry = replace(jobs[j], patches=[jobs[j].patches[k] for k in again])
                for _, redone in self.timing([retry], log):
                    for k, report in zip(again, redone):
                        reports[k] = {**report, "error_before": str(reports[k].get("reason", ""))[:2000]}
            yield j, reports

    def _keep(self, task: Task, record: RolloutRecord, report: dict[str, Any], save: bool = False) -> dict[str, Any]:
        if save:
            self.store.save_grading(task.id, record.rollout, report)
        if "reused_from" not in report:
            self._by_patch[(task.id, record.patch_sha256)] = (record.rollout, report)
        return report


def graded(store: RunStore, record: RolloutRecord, report: dict[str, Any] | None) -> ResultRecord:
    """A results.jsonl record: the rollout plus the summary of its grading (None: not graded)."""
    return ResultRecord.graded(record, report, store.grading_ref(record.instance_id, record.rollout))
