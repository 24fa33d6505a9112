"""Grading a run's rollouts with the harness grader, one timing job at a time.

`python -m runner.grade RUN_DIR [--force] [--rounds R] [--mode interleaved|gso]` grades (or re-grades) an
existing run and rewrites its results and reports.

A stored report is reused while the patch and the grading settings are unchanged (resume). Within a run,
rollouts of one task that produced byte-identical patches share one grading: timing the same code twice
only measures noise, and the reuse is recorded (`reused_from`).
"""
from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from harness.grading import GradeConfig, config_fields, grade
from harness.tasks import Task
from runner.config import ConfigError
from runner.store import RunStore

# One timing job at a time in this process: concurrent timing runs would measure each other.
TIMING_LOCK = threading.Lock()
SUMMARY_KEYS = ("status", "reason", "opt_base", "opt_commit", "score", "uncertain", "wall_time_s",
                "timing_mode", "rounds", "stat", "p")


def grade_config(grading: Any) -> GradeConfig:
    return GradeConfig(rounds=grading.rounds, mode=grading.mode, stat=grading.stat, p=grading.p)


class Grader:
    def __init__(self, store: RunStore, config: GradeConfig, images: dict[str, str], force: bool = False) -> None:
        self.store, self.config, self.images, self.force = store, config, images, force
        self._by_patch: dict[tuple[str, str | None], tuple[int, dict[str, Any]]] = {}

    def _matches(self, report: dict[str, Any] | None, record: dict[str, Any]) -> bool:
        if report is None or self.force:
            return False
        wanted = {"patch_sha256": record["patch_sha256"], **config_fields(self.config)}
        return all(report.get(k) == v for k, v in wanted.items())

    def report(self, task: Task, record: dict[str, Any], log: Any = lambda _m: None) -> dict[str, Any]:
        """The grading report of one rollout: stored, shared with an identical patch, or measured now."""
        index = record["rollout"]
        stored = self.store.grading(task.id, index)
        if self._matches(stored, record):
            assert stored is not None
            report = stored
        else:
            key = (task.id, record["patch_sha256"])
            same = self._by_patch.get(key)
            if same is not None and same[0] != index:
                report = {**same[1], "reused_from": same[0]}
            else:
                with TIMING_LOCK:
                    report = grade(task, record.get("patch") or "", self.images[task.id], self.config,
                                   instance_id=task.id, log=log)
            self.store.save_grading(task.id, index, report)
        if "reused_from" not in report:
            self._by_patch[(task.id, record["patch_sha256"])] = (index, report)
        return report


def graded(record: dict[str, Any], report: dict[str, Any] | None) -> dict[str, Any]:
    """A results.jsonl record: the rollout plus the summary of its grading."""
    if report is None:
        return {**record, "grading": None, "score": None}
    summary = {k: report.get(k) for k in SUMMARY_KEYS}
    summary["opt_stats"] = {k: v for k, v in (report.get("opt_stats") or {}).items() if k != "per_test_speedups"}
    summary["report"] = f"grading/{record['instance_id']}/{record['rollout']}.json"
    if "reused_from" in report:
        summary["reused_from"] = report["reused_from"]
    return {**record, "grading": summary, "score": float(report.get("score") or 0.0)}


def regrade(run_dir: Path, force: bool = False, rounds: int | None = None, mode: str | None = None) -> Path:
    """Grade every finished rollout of a run that lacks a matching report; rewrite results and reports."""
    from harness.images import BaseImageSpec, ensure_images
    from harness.sandbox import docker_client
    from runner.config import validate
    from runner.plan import select
    from runner.report import write_reports

    store = RunStore(run_dir)
    conf = validate(store.load_config())
    if rounds is not None:
        conf.grading.rounds = rounds
    if mode is not None:
        conf.grading.mode = mode
    tasks = {t.id: t for t in select(conf)}
    rollouts = [store.rollout(tid, i) for tid in tasks for i in range(conf.rollouts)]
    finished = [r for r in rollouts if r is not None]
    images = ensure_images(docker_client(), [tasks[r["instance_id"]] for r in finished] or [],
                           BaseImageSpec(conf.sandbox.base_image), progress=print)
    grader = Grader(store, grade_config(conf.grading), images, force=force)
    records = []
    for record in finished:
        print(f"grading {record['instance_id']} rollout {record['rollout']}", flush=True)
        records.append(graded(record, grader.report(tasks[record["instance_id"]], record)))
    store.rewrite_results(records)
    write_reports(store, conf, list(tasks))
    return store.root / "report.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.grade", description="Grade or re-grade a run.")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--force", action="store_true", help="re-time every patch, ignoring stored reports")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--mode", choices=("interleaved", "gso"))
    args = parser.parse_args(argv)
    try:
        path = regrade(args.run_dir, args.force, args.rounds, args.mode)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
