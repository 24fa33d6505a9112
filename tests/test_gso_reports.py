"""Our reports in GSO's shapes, read back by GSO's own code (gsobench 0.1.9, installed test-only).

- the per-instance block (time_stats, opt_stats) equals what GSO's `get_opt_status` computes from the same
  per-run times, key for key, when our grader times as GSO does (gso mode, ratios of means);
- GSO's `make_run_report`, run in a folder holding our files in GSO's log layout, writes the same run
  report as ours.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import verdicts
from harness.grader.gso_reports import instance_report, write_gso_layout

GSOBENCH = Path(__file__).resolve().parent.parent / ".venv" / "gsobench" / "0.1.9"

GSO_STATUS = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
from gso.harness.grading.metrics import get_opt_status
cases = json.load(sys.stdin)
print(json.dumps([get_opt_status({**case, "main_times": None}) for case in cases], default=float))
"""
GSO_RUN_REPORT = r"""
import json, sys
from types import SimpleNamespace
from gso.harness.grading.report import make_run_report
args = json.load(sys.stdin)
path = make_run_report(args["predictions"], [SimpleNamespace(instance_id=i) for i in args["ids"]], args["run_id"])
print(path)
"""


def _gso(script: str, payload: object, cwd: Path | None = None) -> str:
    assert (GSOBENCH / "gso").is_dir(), "gsobench 0.1.9 is missing: run `make gsobench`"
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(payload), capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(GSOBENCH)}, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def graded(iid: str, base: list[list[float]], patch: list[list[float]], commit: list[list[float]]) -> dict:
    """A passed report of our grader, timed as GSO times (per-run times in, ratios of means)."""
    tests = tuple(f"gso_test_{i}.py" for i in range(len(base)))
    times = {state: dict(zip(tests, runs)) for state, runs in (("base", base), ("patch", patch), ("commit", commit))}
    report = {"instance_id": iid, "status": "passed", "patch_is_None": False, "patch_exists": True,
              "base_successfully_run": True, "patch_successfully_applied": True}
    verdicts(report, ["base", "patch", "commit"], times, tests,
             GradeConfig(mode="gso", stat="mean", gso_version="leaderboard", bootstrap=1))
    return report


def _close(ours: object, theirs: object, where: str = "") -> None:
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), (where, ours, theirs)
        for key in theirs:
            _close(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _close(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float) and math.isnan(theirs):
        assert isinstance(ours, float) and math.isnan(ours), where
    elif isinstance(theirs, (int, float)) and not isinstance(theirs, bool):
        assert ours == pytest.approx(theirs, rel=1e-12), where
    else:
        assert ours == theirs, where


TIMES = [  # (base, patch, commit) per-run times of each test
    ([[1.0, 1.1], [2.0, 2.2]], [[0.5, 0.6], [1.0, 1.1]], [[0.6, 0.6], [1.2, 1.2]]),
    ([[3.0, 3.1, 2.9]], [[2.9, 3.0, 3.3]], [[1.0, 1.1, 1.0]]),  # one test (gsd is NaN), a slowdown
    ([[1.0], [1.0], [4.0]], [[0.8], [1.1], [1.0]], [[0.5], [0.5], [2.0]]),
]


@pytest.fixture(scope="module")
def gso_statuses() -> list[dict]:
    """GSO's `get_opt_status` of each of TIMES, in one process."""
    return json.loads(_gso(GSO_STATUS, [{"base_times": base, "patch_times": patch, "commit_times": commit}
                                        for base, patch, commit in TIMES]))


@pytest.mark.parametrize("times", TIMES)
def test_the_instance_block_is_gsos(times: tuple[list, list, list], gso_statuses: list[dict]) -> None:
    base, patch, commit = times
    ours = instance_report(graded("Acme__x-1", base, patch, commit))["Acme__x-1"]
    theirs = gso_statuses[TIMES.index(times)]
    assert ours["base_times"] == base and ours["commit_times"] == commit
    for key in ("opt_base", "opt_commit", "opt_main"):
        assert ours[key] == theirs[key], key
    _close(ours["time_stats"], theirs["time_stats"], "time_stats")
    _close(ours["opt_stats"], theirs["opt_stats"], "opt_stats")


def test_gsos_run_report_reads_our_files(tmp_path: Path) -> None:
    fast = graded("Acme__a-1", [[1.0, 1.0]], [[0.5, 0.5]], [[0.5, 0.5]])
    slow = graded("Acme__b-2", [[1.0, 1.0]], [[1.0, 1.0]], [[0.5, 0.5]])
    failed = {"instance_id": "Acme__c-3", "status": "patch_failed", "patch_is_None": False, "patch_exists": True,
              "base_successfully_run": True, "patch_successfully_applied": False}
    reports = {r["instance_id"]: r for r in (fast, slow, failed)}
    ids = ["Acme__a-1", "Acme__b-2", "Acme__c-3", "Acme__d-4", "Acme__e-5"]  # d: empty patch, e: no prediction
    predictions = {iid: {"instance_id": iid, "model_patch": "diff --git a/x b/x\n", "model_name_or_path": "org/m"}
                   for iid in ids[:3]}
    predictions["Acme__d-4"] = {"instance_id": "Acme__d-4", "model_patch": "", "model_name_or_path": "org/m"}
    ours_path = write_gso_layout(tmp_path, "rollout_0", predictions, reports, ids)
    assert ours_path == tmp_path / "logs/run_evaluation/rollout_0/org__m/org__m.rollout_0.report.json"
    ours = json.loads(ours_path.read_text())
    ours_path.unlink()  # GSO writes its own at the same place
    theirs_path = _gso(GSO_RUN_REPORT, {"predictions": predictions, "ids": ids, "run_id": "rollout_0"},
                       cwd=tmp_path).strip().splitlines()[-1]
    theirs = json.loads((tmp_path / theirs_path).read_text())
    _close(ours, theirs)
    assert ours["instance_sets"]["opt_commit_ids"] == ["Acme__a-1"]
    assert ours["instance_sets"]["incomplete_ids"] == ["Acme__e-5"]
    assert ours["summary"]["patch_failed_instances"] == 1 and ours["summary"]["empty_patch_instances"] == 1
