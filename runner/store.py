"""The run store: one directory per run, append-only, resumable, and the only code that knows its paths.

    config.yaml                       the resolved config; a resumed run must match it (its `provenance`
                                      mapping, added once the first start has its images, is not compared)
    rollouts/<task>/<i>.json          a finished rollout (the file exists iff the rollout finished)
    trajectories/<task>/<i>.json      its episode: messages, step records, usage
    trajectories/<task>/<i>.attempt<n>.json  the episode of its attempt n, discarded for an infrastructure failure
    grading/<task>/<i>.json           its grading report (reused while patch and grading config match)
    results.jsonl                     one record per finished (and, unless grade=none, graded) rollout
    predictions/rollout_<i>.jsonl     GSO predictions, one file per rollout index
    gso/logs/run_evaluation/...       the gradings in GSO's log layout (its report.json files, run reports)
    judging/<judge>/<task>/<i>.json   a judge's judgement of a rollout (calls, votes, labels; runner.judging)
    report.json, report.md            the summary (with the provenance of the process that wrote them)
    report.html, pages/<task>/<i>.html  the same as a page, and each rollout's trajectory page (runner.pages)
    truncated/steps_<S>/              gradings of the rollouts cut to S steps (runner.aggregate)
    systems.csv, systems.tex, rollouts.csv  the paper tables (runner.tables; written with the reports)
    checkpoints/<task>__<i>.json      an unfinished rollout's last checkpoint (runner.checkpoints), and its calls
    atif/<task>/<i>.json              the trajectories as ATIF documents (atif=true, optrunner export)
    .lock                             held by the process writing here (runner.lock: one at a time)

Records go in and come out typed (runner.records). Every file is written atomically (temp file +
rename); results.jsonl lines are appended whole and a torn last line (a kill mid-write) is ignored on
read, so the rollout is simply recorded again on resume.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.atomic import read_json, write_json, write_text
from harness.grader.config import RECORDED_SINCE
from runner.config import ConfigError, typed
from runner.identity import differences, identity
from runner.records import ResultRecord, RolloutRecord

REGRADED_BY_REPORT = ("visible", "calibrate")  # (see RunStore.bind_config)
LOCK_NAME = ".lock"  # the file runner.lock holds while a process writes here


class RunStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()

    @property
    def run_id(self) -> str:
        """The run's id in its containers' labels: its name and a digest of its path (two output roots may
        hold runs of the same name, and a sweep of a cluster's leftovers must not touch the other's)."""
        return f"{self.root.name}-{hashlib.sha1(str(self.root.resolve()).encode()).hexdigest()[:8]}"

    # ---------------------------------------------------------------- config
    @property
    def config_path(self) -> Path:
        return self.root / "config.yaml"

    def is_run(self) -> bool:
        return self.config_path.is_file()

    @property
    def checkpoints_dir(self) -> Path:
        return self.root / "checkpoints"

    def has_started(self) -> bool:
        """Whether a rollout ever started here: what a run refused before that may remove, it may not."""
        return any((self.root / name).exists() for name in ("rollouts", "trajectories", "checkpoints",
                                                            "results.jsonl"))

    def load_config(self) -> dict[str, Any]:
        if not self.is_run():
            raise ConfigError(f"{self.root} is not a run directory (no config.yaml)")
        return yaml.safe_load(self.config_path.read_text()) or {}

    def bind_config(self, config: dict[str, Any]) -> bool:
        """Write the config of a new run, or check a resumed run is the same experiment (compared as
        typed configs, so a run written before a new config field existed still resumes).
        Returns True when resuming."""
        if self.is_run():
            stored = self.load_config()
            if isinstance(stored.get("grading"), dict):  # graded before a setting existed: with its old value,
                # except settings each report records and is re-graded by when it differs (GradeConfig.matches):
                # a diagnostic (visible) or one only reward tasks read (calibrate) then takes today's value
                given = config.get("grading")
                given = given if isinstance(given, dict) else {}
                then = {k: v for k, v in RECORDED_SINCE.items() if k not in REGRADED_BY_REPORT}
                later = {k: given[k] for k in REGRADED_BY_REPORT if k in given}  # (else both take the default)
                stored["grading"] = {**then, **later, **stored["grading"]}
            changed = differences(identity(typed(stored)), identity(typed(config)))
            if changed:
                raise ConfigError(f"{self.root} holds a different run ({'; '.join(changed[:3])}); "
                                  "pass another name=... or remove that directory")
            return True
        self.root.mkdir(parents=True, exist_ok=True)
        write_text(self.config_path, yaml.safe_dump(config, sort_keys=False))
        return False

    def provenance(self) -> dict[str, Any] | None:
        """Where the run was started from (runner.provenance), as config.yaml recorded it; None for a run
        written before provenance was recorded."""
        found = self.load_config().get("provenance") if self.is_run() else None
        return found if isinstance(found, dict) else None

    def add_provenance(self, provenance: dict[str, Any]) -> bool:
        """Record the run's provenance in config.yaml, once: a resumed run keeps the first one (a start killed
        before it was written gets it on resume). The settings' bytes are kept as written, the mapping goes
        after them. Returns True when written."""
        if "provenance" in self.load_config():  # a second mapping would be a duplicate key
            return False
        text = self.config_path.read_text()
        write_text(self.config_path, text + ("" if text.endswith("\n") else "\n")
                   + yaml.safe_dump({"provenance": provenance}, sort_keys=False))
        return True

    # ---------------------------------------------------------------- paths
    def inside(self, *parts: str | int) -> Path:
        """The path of `parts` under the run directory, each a plain name: ids come from task sources and from
        the records of a run directory that may have been copied from elsewhere, and none may lead out of it
        (`..`, a slash, an absolute path, a hidden name). ConfigError, in one line, otherwise."""
        names = [str(p) for p in parts]
        for name in names:
            if not name or name.startswith(".") or "/" in name or "\\" in name or "\x00" in name:
                raise ConfigError(f"{self.root}: {name!r} is not a plain name inside the run directory; the run's "
                                  "records or task ids are not safe to use as paths")
        path = self.root.joinpath(*names)
        if not path.resolve().is_relative_to(self.root.resolve()):  # (a symlink inside pointing out)
            raise ConfigError(f"{self.root}: {'/'.join(names)} leads outside the run directory")
        return path

    def at_ref(self, ref: str) -> Path:
        """A run-relative path a record holds (its trajectory, its grading), checked as `inside` does."""
        return self.inside(*ref.split("/"))

    # ---------------------------------------------------------------- rollouts, trajectories, gradings
    def _rollout_path(self, task_id: str, index: int) -> Path:
        return self.inside("rollouts", task_id, f"{index}.json")

    def trajectory_ref(self, task_id: str, index: int) -> str:
        return trajectory_ref(task_id, index)

    def grading_ref(self, task_id: str, index: int) -> str:
        return f"grading/{task_id}/{index}.json"

    def rollout(self, task_id: str, index: int) -> RolloutRecord | None:
        data = read_json(self._rollout_path(task_id, index))
        return RolloutRecord.from_dict(data) if isinstance(data, dict) else None

    def finished(self) -> list[RolloutRecord]:
        """Every rollout finished on disk, by task and index; results.jsonl holds only the recorded ones (a
        running run's rollouts are finished before they are recorded)."""
        keys = sorted((p.parent.name, int(p.stem)) for p in self.root.glob("rollouts/*/*.json") if p.stem.isdigit())
        return [record for key in keys if (record := self.rollout(*key)) is not None]

    def save_rollout(self, record: RolloutRecord, trajectory: dict[str, Any] | None,
                     attempts: Mapping[str, dict[str, Any]] | None = None) -> None:
        """The record, after its trajectory and those of its discarded attempts (ref -> trajectory)."""
        for ref, data in (attempts or {}).items():
            write_json(self.at_ref(ref), data)
        if trajectory is not None:  # the trajectory first: a rollout file always has its trajectory
            write_json(self.at_ref(self.trajectory_ref(record.instance_id, record.rollout)), trajectory)
        write_json(self._rollout_path(record.instance_id, record.rollout), record.to_dict())

    def trajectory(self, record: RolloutRecord) -> dict[str, Any] | None:
        data = read_json(self.at_ref(record.trajectory)) if record.trajectory else None
        return data if isinstance(data, dict) else None

    def trajectory_of(self, task_id: str, index: int) -> dict[str, Any] | None:
        data = read_json(self.at_ref(self.trajectory_ref(task_id, index)))
        return data if isinstance(data, dict) else None

    def grading(self, task_id: str, index: int) -> dict[str, Any] | None:
        data = read_json(self.at_ref(self.grading_ref(task_id, index)))
        return data if isinstance(data, dict) else None

    def save_grading(self, task_id: str, index: int, report: dict[str, Any]) -> None:
        write_json(self.at_ref(self.grading_ref(task_id, index)), report)

    # ---------------------------------------------------------------- judgements (runner.judging)
    def judgement(self, judge_id: str, task_id: str, index: int) -> dict[str, Any] | None:
        data = read_json(self.inside("judging", judge_id, task_id, f"{index}.json"))
        return data if isinstance(data, dict) else None

    def save_judgement(self, judge_id: str, task_id: str, index: int, judgement: dict[str, Any]) -> None:
        write_json(self.inside("judging", judge_id, task_id, f"{index}.json"), judgement)

    def judges(self) -> list[str]:
        """The ids of the judges that judged some rollout of this run."""
        folder = self.root / "judging"
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def truncated(self, steps: int) -> "RunStore":
        """The store for this run's gradings at a post-hoc step budget."""
        return RunStore(self.inside("truncated", f"steps_{steps}"))

    # ---------------------------------------------------------------- results.jsonl
    @property
    def results_path(self) -> Path:
        return self.root / "results.jsonl"

    def results(self) -> list[ResultRecord]:
        """Finished records, one per (task, rollout) (the last one wins), in file order."""
        records: dict[tuple[str, int], ResultRecord] = {}
        for data in _jsonl(self.results_path):
            try:
                record = ResultRecord.from_dict(data)
            except (KeyError, TypeError, ValueError):
                continue  # not a record this version can read: that rollout is recorded again
            self.inside(record.instance_id)  # (pages and GSO's layout use it as a path part)
            records[record.key] = record
        return list(records.values())

    def append_result(self, record: ResultRecord) -> None:
        with self._lock:
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            with self.results_path.open("a+") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() and not _ends_with_newline(self.results_path):
                    fh.write("\n")  # a line torn by a crash or a full disk must not swallow this one
                fh.write(json.dumps(record.to_dict(), default=str) + "\n")
                fh.flush()
                os.fsync(fh.fileno())

    def rewrite_results(self, records: list[ResultRecord]) -> None:
        """Replace results.jsonl at once (re-grading)."""
        with self._lock:
            write_text(self.results_path, "".join(json.dumps(r.to_dict(), default=str) + "\n" for r in records))

    # ---------------------------------------------------------------- the model access checks
    @property
    def checks_path(self) -> Path:
        return self.root / "model_checks.jsonl"

    def append_check(self, record: dict[str, Any]) -> None:
        """The call record of one access check (a one-token request before the run started)."""
        with self._lock, self.checks_path.open("a") as fh:
            fh.write(json.dumps(record, default=str) + "\n")

    def checks(self) -> list[dict[str, Any]]:
        return _jsonl(self.checks_path)

    # ---------------------------------------------------------------- reports and predictions
    def write_report(self, report: dict[str, Any], markdown: str) -> None:
        write_json(self.report_json, report)
        write_text(self.report_md, markdown)

    @property
    def report_json(self) -> Path:
        return self.root / "report.json"

    @property
    def report_md(self) -> Path:
        return self.root / "report.md"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def atif_dir(self) -> Path:
        return self.root / "atif"

    def write_gso_reports(self, records: list[ResultRecord], model_name: str, task_ids: list[str]) -> None:
        """The gradings in GSO's log layout under gso/, one run id per rollout index (rollout_<i>), so GSO's
        analysis scripts and Opt@K merge read them."""
        from harness.grader.gso_reports import write_gso_layout  # numpy: only once a run is graded
        for index in sorted({r.rollout for r in records}):
            mine = [r for r in records if r.rollout == index]
            predictions = {r.instance_id: {"model_patch": r.patch or "", "model_name_or_path": model_name}
                           for r in mine}
            reports = {r.instance_id: report for r in mine
                       if (report := self.grading(r.instance_id, index)) is not None}
            write_gso_layout(self.root / "gso", f"rollout_{index}", predictions, reports, task_ids)

    def write_predictions(self, records: list[ResultRecord], model_name: str, rollouts: int) -> None:
        """GSO predictions, one file per rollout index (what `python -m harness grade` reads)."""
        by_index: dict[int, list[dict[str, Any]]] = {i: [] for i in range(rollouts)}
        for record in sorted(records, key=lambda r: (r.rollout, r.instance_id)):
            by_index.setdefault(record.rollout, []).append(
                {"instance_id": record.instance_id, "model_patch": record.patch or "",
                 "model_name_or_path": model_name})
        for index, rows in by_index.items():
            write_text(self.root / "predictions" / f"rollout_{index}.jsonl",
                       "".join(json.dumps(r) + "\n" for r in rows))


def trajectory_ref(task_id: str, index: int) -> str:
    """The run-relative path a record names its trajectory by (known wherever the rollout runs)."""
    return f"trajectories/{task_id}/{index}.json"


def attempt_trajectory_ref(task_id: str, index: int, attempt: int) -> str:
    """Where the trajectory of a rollout's discarded attempt `attempt` (from 1, across resumes) is kept."""
    return f"trajectories/{task_id}/{index}.attempt{attempt}.json"


def _jsonl(path: Path) -> list[Any]:
    """The parsed lines of a JSONL file; a torn line (a kill or a full disk mid-write) is skipped."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
