"""The run store: one directory per run, append-only, resumable.

    config.yaml                       the resolved config; a resumed run must match it
    rollouts/<task>/<i>.json          a finished rollout (the file exists iff the rollout finished)
    trajectories/<task>/<i>.json      its episode: messages, step records, usage
    grading/<task>/<i>.json           its grading report (reused while patch and grading config match)
    results.jsonl                     one record per finished (and, unless grade=none, graded) rollout
    predictions/rollout_<i>.jsonl     GSO predictions, one file per rollout index
    report.json, report.md            the summary

Every file is written atomically (temp file + rename); results.jsonl lines are appended whole and a torn
last line (a kill mid-write) is ignored on read, so the rollout is simply recorded again on resume.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import yaml

from runner.config import ConfigError, differences, identity


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=1, default=str))


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # writers never share one
    tmp.write_text(text)
    os.replace(tmp, path)


class RunStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- config
    @property
    def config_path(self) -> Path:
        return self.root / "config.yaml"

    def is_run(self) -> bool:
        return self.config_path.is_file()

    def load_config(self) -> dict[str, Any]:
        if not self.is_run():
            raise ConfigError(f"{self.root} is not a run directory (no config.yaml)")
        return yaml.safe_load(self.config_path.read_text()) or {}

    def bind_config(self, config: dict[str, Any]) -> bool:
        """Write the config of a new run, or check a resumed run is the same experiment.
        Returns True when resuming."""
        if self.is_run():
            old = self.load_config()
            changed = differences(identity(old), identity(config))
            if changed:
                raise ConfigError(f"{self.root} holds a different run ({'; '.join(changed[:3])}); "
                                  "pass another name=... or remove that directory")
            return True
        self.root.mkdir(parents=True, exist_ok=True)
        write_text(self.config_path, yaml.safe_dump(config, sort_keys=False))
        return False

    # ---------------------------------------------------------------- rollouts and gradings
    def rollout_path(self, task_id: str, index: int) -> Path:
        return self.root / "rollouts" / task_id / f"{index}.json"

    def trajectory_path(self, task_id: str, index: int) -> Path:
        return self.root / "trajectories" / task_id / f"{index}.json"

    def grade_path(self, task_id: str, index: int) -> Path:
        return self.root / "grading" / task_id / f"{index}.json"

    def rollout(self, task_id: str, index: int) -> dict[str, Any] | None:
        return read_json(self.rollout_path(task_id, index))

    def save_rollout(self, record: dict[str, Any], trajectory: dict[str, Any] | None) -> None:
        task_id, index = record["instance_id"], record["rollout"]
        if trajectory is not None:  # the trajectory first: a rollout file always has its trajectory
            write_json(self.trajectory_path(task_id, index), trajectory)
        write_json(self.rollout_path(task_id, index), record)

    def grading(self, task_id: str, index: int) -> dict[str, Any] | None:
        return read_json(self.grade_path(task_id, index))

    def save_grading(self, task_id: str, index: int, report: dict[str, Any]) -> None:
        write_json(self.grade_path(task_id, index), report)

    # ---------------------------------------------------------------- results.jsonl
    @property
    def results_path(self) -> Path:
        return self.root / "results.jsonl"

    def results(self) -> list[dict[str, Any]]:
        """Finished records, one per (task, rollout) (the last one wins), in file order."""
        records: dict[tuple[str, int], dict[str, Any]] = {}
        try:
            lines = self.results_path.read_text().splitlines()
        except OSError:
            return []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line from a kill mid-write: that rollout is recorded again
            records[(record["instance_id"], int(record["rollout"]))] = record
        return list(records.values())

    def append_result(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            with self.results_path.open("a") as fh:
                fh.write(json.dumps(record, default=str) + "\n")
                fh.flush()
                os.fsync(fh.fileno())

    def rewrite_results(self, records: list[dict[str, Any]]) -> None:
        """Replace results.jsonl at once (re-grading)."""
        with self._lock:
            write_text(self.results_path, "".join(json.dumps(r, default=str) + "\n" for r in records))

    # ---------------------------------------------------------------- predictions
    def write_predictions(self, records: list[dict[str, Any]], model_name: str, rollouts: int) -> None:
        """GSO predictions, one file per rollout index (what `python -m harness grade` reads)."""
        by_index: dict[int, list[dict[str, Any]]] = {i: [] for i in range(rollouts)}
        for record in sorted(records, key=lambda r: (r["rollout"], r["instance_id"])):
            by_index.setdefault(record["rollout"], []).append(
                {"instance_id": record["instance_id"], "model_patch": record.get("patch") or "",
                 "model_name_or_path": model_name})
        for index, rows in by_index.items():
            write_text(self.root / "predictions" / f"rollout_{index}.jsonl",
                       "".join(json.dumps(r) + "\n" for r in rows))
