"""Grading many patches: predictions files (GSO's `grade`) and the suite's own check (`validate`)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.atomic import read_json, write_json
from harness.grader.config import MEASURED, GradeConfig, patch_sha256
from harness.grader.grade import grade, grade_patches
from harness.grader.gso_reports import write_gso_layout
from harness.grader.predictions import Prediction
from harness.grader.states import run_solution
from harness.metrics.summary import RolloutMetrics, summarize
from harness.sandbox.interface import SandboxError, TaskImages
from harness.sandbox.providers import DEFAULT_PROVIDER, SandboxProvider, provider
from harness.tasks.task import Task

Log = Callable[[str], None]


def grade_predictions(rollouts: list[list[Prediction]], tasks: list[Task], images: dict[str, TaskImages],
                      config: GradeConfig, out: Path, log: Log, provenance: dict[str, Any] | None = None,
                      numbers: list[int] | None = None, sandboxes: SandboxProvider | None = None) -> dict[str, Any]:
    """Grade every prediction of every rollout file; write one report each, then the summary (with
    `provenance`, where and how they were graded: harness.provenance). Rollout i is reported as
    `rollout_<numbers[i]>` (default: i; predictions.rollout_numbers). `sandboxes`: the provider that starts
    the grading sandboxes (None: the default provider).

    A report already on disk for the same patch and grading config is reused (resume after a crash). When
    interrupted (Ctrl-C, SIGTERM, SIGHUP), the summary of what was graded is written, marked `interrupted`.
    """
    by_id = {t.id: t for t in tasks}
    reports: list[dict[str, dict[str, Any]]] = []
    try:
        _grade_all(rollouts, tasks, by_id, images, config, out, log, reports,
                   numbers if numbers is not None else list(range(len(rollouts))), sandboxes)
    except KeyboardInterrupt:
        if reports:
            summary = summarize_reports(reports, [t.id for t in tasks], config.p)
            write_json(out / "summary.json", {**summary, "interrupted": True, **_recorded(provenance)}, indent=2)
        raise
    summary = {**summarize_reports(reports, [t.id for t in tasks], config.p), **_recorded(provenance)}
    write_json(out / "summary.json", summary, indent=2)
    return summary


def _grade_all(rollouts: list[list[Prediction]], tasks: list[Task], by_id: dict[str, Task],
               images: dict[str, TaskImages], config: GradeConfig, out: Path, log: Log,
               reports: list[dict[str, dict[str, Any]]], numbers: list[int], sandboxes: SandboxProvider | None) -> None:
    """Grade every task's predictions, of all rollout files, in one timing session per task (stored reports
    are reused); `reports` (one dict per rollout file) fills in as each report is written."""
    done: list[dict[str, dict[str, Any]]] = [{} for _ in rollouts]
    reports.extend(done)
    missing: dict[str, list[tuple[int, Prediction, Path]]] = {}
    for index, predictions in enumerate(rollouts):
        for pred in predictions:
            path = out / f"rollout_{numbers[index]}" / pred.instance_id / "report.json"
            report = _stored(path, pred, config)
            if report is None:
                missing.setdefault(pred.instance_id, []).append((index, pred, path))
            else:
                log(f"rollout {numbers[index]}: {pred.instance_id} already graded, reusing {path}")
                done[index][pred.instance_id] = report
    for task_id, todo in missing.items():
        log(f"grading {task_id}: rollouts {', '.join(str(numbers[i]) for i, _, _ in todo)} in one session")
        graded = grade_patches(by_id[task_id], [pred.model_patch for _, pred, _ in todo], images[task_id].grading,
                               config, log=log, sandboxes=sandboxes, base_image=images[task_id].base)
        for (index, pred, path), report in zip(todo, graded):
            report["model_name_or_path"] = pred.model_name_or_path
            write_json(path, report, indent=2)
            done[index][task_id] = report
    for index, predictions in enumerate(rollouts):
        # GSO's own layout beside ours, so its run reports and Opt@K merge read these gradings
        write_gso_layout(out, f"rollout_{numbers[index]}", {p.instance_id: {"model_patch": p.model_patch,
                                                                   "model_name_or_path": p.model_name_or_path}
                                                   for p in predictions}, done[index], [t.id for t in tasks])


def _recorded(provenance: dict[str, Any] | None) -> dict[str, Any]:
    return {"provenance": provenance} if provenance is not None else {}


def _stored(path: Path, pred: Prediction, config: GradeConfig) -> dict[str, Any] | None:
    """A finished report for the same patch under the same grading settings, if one is on disk; a report
    with status error (infrastructure: the engine failed) is not finished, so graded again (as `grade` does)."""
    report = read_json(path)
    if not isinstance(report, dict) or report.get("status") == "error":
        return None
    return report if config.matches(report, patch_sha256(pred.model_patch)) else None


def summarize_reports(reports: list[dict[str, dict[str, Any]]], task_ids: list[str], p: float) -> dict[str, Any]:
    """The summary of graded predictions (harness.metrics.summary) over the selected tasks: rollout i is
    predictions file i; a task without a prediction in a file is a failure. Predictions carry no cost."""
    k = len(reports)

    def metrics(report: dict[str, Any] | None) -> RolloutMetrics | None:
        if report is None:
            return None
        return RolloutMetrics(solved=report.get("status") in MEASURED and bool(report.get("opt_commit")),
                              score=float(report.get("score") or 0.0), suspect=report.get("status") == "hack_suspect")

    per_task = {tid: [metrics(r.get(tid)) for r in reports] for tid in task_ids}
    statuses: dict[str, int] = {}
    for rollout in reports:
        for report in rollout.values():
            statuses[report["status"]] = statuses.get(report["status"], 0) + 1
    opt_base = sum(bool(r.get("opt_base")) for rr in reports for r in rr.values())
    return {
        "tasks": len(task_ids), "rollouts": k, "p": p, **summarize(per_task).to_dict(),
        "opt_base_rate": opt_base / (len(task_ids) * k),
        "statuses": statuses,
        "per_task": {tid: {"opt_commit": [bool(o and o.solved) for o in per_task[tid]],
                           "score": [o.score if o else 0.0 for o in per_task[tid]]} for tid in task_ids},
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


def gold_patch(task: Task, images: TaskImages, sandboxes: SandboxProvider) -> str:
    """The task's expert patch; for a task that ships a reference solution instead (Harbor's solve.sh), the
    change solve.sh makes in a fresh sandbox of the agent's image, as the oracle's rollout makes it."""
    if task.expert_patch or not task.solution_files:
        return task.expert_patch
    box = sandboxes.start(images.agent, labels={"optrunner.role": "validate-solution"})
    try:
        solved = run_solution(box, task)
        if solved.exit_code != 0:  # the task is broken: validate says so in one line
            raise SandboxError(f"{task.id}: solution/solve.sh failed: {solved.output.strip()[-300:]}")
        return box.diff()
    finally:
        box.close()


def validate(tasks: list[Task], images: dict[str, TaskImages], config: GradeConfig, repeat: int, out: Path,
             log: Log, provenance: dict[str, Any] | None = None,
             sandboxes: SandboxProvider | None = None) -> list[Validation]:
    """Grade each task's gold and empty patch `repeat` times; one report each, and summary.json (each task's
    verdicts, with `provenance`) rewritten as each task finishes, so an interrupted validation keeps one.
    `sandboxes`: the provider that starts the grading sandboxes (None: the default provider)."""
    results = []
    for task in tasks:
        result = Validation(task.id)
        gold = gold_patch(task, images[task.id], sandboxes or provider(DEFAULT_PROVIDER))
        for attempt in range(repeat):
            for kind, patch, bucket in (("gold", gold, result.gold), ("empty", "", result.empty)):
                log(f"[{task.id}] {kind} patch, attempt {attempt + 1}/{repeat}")
                report = grade(task, patch, images[task.id].grading, config, log=log, sandboxes=sandboxes,
                               base_image=images[task.id].base)
                write_json(out / task.id / f"{kind}_{attempt}.json", report, indent=2)
                bucket.append(report)
        results.append(result)
        write_json(out / "summary.json", {"tasks": {r.task: {"gold_passes": r.gold_passes, "empty_fails": r.empty_fails,
                                                             "flips": r.flips} for r in results},
                                          "repeat": repeat, **_recorded(provenance)}, indent=2)
    return results
