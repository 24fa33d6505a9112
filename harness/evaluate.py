"""Grading many patches: predictions files (GSO's `grade`) and the suite's own check (`validate`)."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import metrics
from harness.grading import GradeConfig, config_fields, grade, patch_sha256, write_json
from harness.predictions import Prediction
from harness.tasks import Task

Log = Callable[[str], None]


def grade_predictions(rollouts: list[list[Prediction]], tasks: list[Task], images: dict[str, str],
                      config: GradeConfig, out: Path, log: Log) -> dict[str, Any]:
    """Grade every prediction of every rollout file; write one report each, then the summary.

    A report already on disk for the same patch and grading config is reused (resume after a crash).
    """
    by_id = {t.id: t for t in tasks}
    reports: list[dict[str, dict[str, Any]]] = []
    for index, predictions in enumerate(rollouts):
        done: dict[str, dict[str, Any]] = {}
        for pred in predictions:
            path = out / f"rollout_{index}" / pred.instance_id / "report.json"
            report = _stored(path, pred, config)
            if report is None:
                log(f"rollout {index}: grading {pred.instance_id}")
                report = grade(by_id[pred.instance_id], pred.model_patch, images[pred.instance_id], config,
                               log=log)
                report["model_name_or_path"] = pred.model_name_or_path
                write_json(path, report)
            else:
                log(f"rollout {index}: {pred.instance_id} already graded, reusing {path}")
            done[pred.instance_id] = report
        reports.append(done)
    summary = summarize(reports, [t.id for t in tasks], config.p)
    write_json(out / "summary.json", summary)
    return summary


def _stored(path: Path, pred: Prediction, config: GradeConfig) -> dict[str, Any] | None:
    """A finished report for the same patch under the same grading settings, if one is on disk."""
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    wanted = {"patch_sha256": patch_sha256(pred.model_patch), **config_fields(config)}
    return report if all(report.get(k) == v for k, v in wanted.items()) else None


def summarize(reports: list[dict[str, dict[str, Any]]], task_ids: list[str], p: float) -> dict[str, Any]:
    """Opt@1 and Opt@K over the selected tasks; a task without a prediction in a rollout is a failure."""
    k = len(reports)
    success = {tid: [bool(r.get(tid, {}).get("opt_commit")) for r in reports] for tid in task_ids}
    statuses: dict[str, int] = {}
    for rollout in reports:
        for report in rollout.values():
            statuses[report["status"]] = statuses.get(report["status"], 0) + 1
    scores = {tid: [float(r.get(tid, {}).get("score") or 0.0) for r in reports] for tid in task_ids}
    return {
        "tasks": len(task_ids), "rollouts": k, "p": p,
        "opt_at_1": metrics.suite_opt_at_k(success, 1),
        f"opt_at_{k}": metrics.suite_opt_at_k(success, k, mode="first"),
        "opt_base_rate": sum(bool(r.get("opt_base")) for rr in reports for r in rr.values()) / (len(task_ids) * k),
        "avg_at_1": metrics.avg_at_k(scores, 1),
        f"best_at_{k}": metrics.best_at_k(scores, k),
        "statuses": statuses,
        "per_task": {tid: {"opt_commit": success[tid], "score": scores[tid]} for tid in task_ids},
    }


@dataclass
class Validation:
    """The gold (expert) and empty patch of one task, graded `repeat` times."""
    task: str
    gold: list[dict[str, Any]] = field(default_factory=list)
    empty: list[dict[str, Any]] = field(default_factory=list)

    @property
    def gold_passes(self) -> bool:
        return all(r.get("opt_commit") for r in self.gold)

    @property
    def empty_fails(self) -> bool:
        return not any(r.get("opt_commit") for r in self.empty)

    @property
    def flips(self) -> int:
        """Verdicts that changed between repeats (opt_base and opt_commit, gold and empty)."""
        count = 0
        for runs in (self.gold, self.empty):
            for key in ("opt_base", "opt_commit"):
                count += len({bool(r.get(key)) for r in runs}) > 1
        return count


def validate(tasks: list[Task], images: dict[str, str], config: GradeConfig, repeat: int, out: Path,
             log: Log) -> list[Validation]:
    results = []
    for task in tasks:
        result = Validation(task.id)
        for attempt in range(repeat):
            for kind, patch, bucket in (("gold", task.expert_patch, result.gold), ("empty", "", result.empty)):
                log(f"[{task.id}] {kind} patch, attempt {attempt + 1}/{repeat}")
                report = grade(task, patch, images[task.id], config, log=log)
                write_json(out / task.id / f"{kind}_{attempt}.json", report)
                bucket.append(report)
        results.append(result)
    return results
