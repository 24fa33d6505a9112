"""Our grading reports in GSO's shapes, so GSO's analysis scripts (its run reports, Opt@K merge) read them.

- `instance_report`: GSO's per-instance report.json, `{instance_id: {...}}`, with its keys in its order:
  per-test lists of per-run times, `time_stats` (means over tests of per-test means), and the full
  `opt_stats` block. Speedups are ours (GSO's formulas over our per-test speedups, which are paired when
  timing was interleaved), so the verdicts in the file are the ones our report holds.
- `run_report`: GSO's run report over one rollout's predictions (summary counts, instance sets,
  opt_stats of passed instances, schema_version 1), with GSO's status rules.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness.atomic import write_json
from harness.grader.config import MEASURED
from harness.grader.predictions import model_folder

SCHEMA_VERSION = 1
RATIO_KEYS = (("patch_commit", "commit", "patch"), ("patch_base", "base", "patch"), ("commit_base", "base", "commit"))


def _speedup_block(key: str, speedups: list[float], before_mean: float, after_mean: float) -> dict[str, Any]:
    logs = np.log(speedups)
    return {f"am_speedup_{key}": before_mean / after_mean,
            f"gm_speedup_{key}": float(np.exp(np.mean(logs))),
            f"gsd_speedup_{key}": float(np.exp(np.std(logs, ddof=1))) if len(speedups) > 1 else math.nan,
            f"slowdown_perc_{key}": sum(s < 1.0 for s in speedups) / len(speedups) * 100,
            f"hm_speedup_{key}": len(speedups) / sum(1.0 / s for s in speedups)}


def instance_report(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """GSO's report.json for one graded patch (ours in, GSO's shape out)."""
    passed = report.get("status") in MEASURED  # GSO knows no hack suspects: raw, as it would have graded
    body: dict[str, Any] = {key: bool(report.get(key)) for key in (
        "patch_is_None", "patch_exists", "base_successfully_run", "patch_successfully_applied", "test_passed")}
    body.update(base_times=None, patch_times=None, commit_times=None, main_times=None,
                opt_base=bool(report.get("opt_base")), opt_commit=bool(report.get("opt_commit")), opt_main=False,
                time_stats={}, opt_stats={})
    if passed:
        means = {state: list(report[f"{state}_times"]) for state in ("base", "patch", "commit")}
        runs = report.get("round_times")  # reports of grader 1.0 have per-test times only
        for state in ("base", "patch", "commit"):
            body[f"{state}_times"] = [list(runs[state][t]) for t in report["tests"]] if runs else \
                [[value] for value in means[state]]
        stats: dict[str, Any] = {}
        for state, values in means.items():
            stats[f"{state}_mean"] = float(np.mean(values))
            stats[f"{state}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        stats.update(main_mean=None, main_std=None, per_test_means={**means, "main": []})
        body["time_stats"] = stats
        # per-test speedups as graded; reports written before they were kept: GSO's ratios of per-test times
        per_test = report.get("per_test_speedups") or {
            key: [b / a for b, a in zip(means[before], means[after])] for key, before, after in RATIO_KEYS}
        opt: dict[str, Any] = {k: None for k in (
            "opt_perc_patch_base", "opt_perc_patch_commit", "opt_perc_patch_main", "speedup_patch_base",
            "speedup_patch_commit", "speedup_patch_main", "gm_speedup_patch_base", "gm_speedup_patch_commit",
            "gm_speedup_patch_main")}
        for key, before, after in RATIO_KEYS:
            opt.update(_speedup_block(key, per_test[key], stats[f"{before}_mean"], stats[f"{after}_mean"]))
        opt["per_test_speedups"] = {f"{key}_speedups": per_test[key] for key in ("patch_base", "commit_base",
                                                                                 "patch_commit")}
        body["opt_stats"] = opt
    return {report["instance_id"]: body}


def run_report(instance_ids: list[str], predictions: Mapping[str, Mapping[str, Any]],
               reports: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """GSO's run report: `instance_ids` is the dataset, `predictions` id -> prediction, `reports` id ->
    GSO-shaped instance body (absent: GSO found no report.json, an error)."""
    sets: dict[str, set[str]] = {name: set() for name in (
        "completed", "passed", "base_failed", "patch_failed", "test_failed", "incomplete", "empty_patch", "error",
        "opt_base", "opt_commit", "opt_main")}
    opt_stats: dict[str, Any] = {}
    for iid in instance_ids:
        if iid not in predictions:
            sets["incomplete"].add(iid)
            continue
        if predictions[iid].get("model_patch") in (None, ""):
            sets["empty_patch"].add(iid)
            continue
        body = reports.get(iid)
        if body is None:
            sets["error"].add(iid)
            continue
        sets["completed"].add(iid)
        if body.get("patch_is_None", False) or not body.get("patch_exists", True):
            sets["empty_patch"].add(iid)
            continue
        if not body.get("base_successfully_run"):
            sets["base_failed"].add(iid)
            continue
        if not body["patch_successfully_applied"]:
            sets["patch_failed"].add(iid)
            continue
        if body["test_passed"]:
            sets["passed"].add(iid)
            opt_stats[iid] = body["opt_stats"] | body["time_stats"]
        else:
            sets["test_failed"].add(iid)
        for key in ("opt_base", "opt_commit", "opt_main"):
            if body[key]:
                sets[key].add(iid)
    summary = {"total_instances": len(instance_ids), "total_predictions": len(predictions)}
    summary.update({f"{name}_instances": len(sets[name]) for name in (
        "completed", "incomplete", "passed", "base_failed", "patch_failed", "test_failed", "empty_patch", "error")})
    summary.update({key: len(sets[key]) for key in ("opt_base", "opt_commit", "opt_main")})
    return {"summary": summary, "instance_sets": {f"{name}_ids": sorted(ids) for name, ids in sets.items()},
            "opt_stats": opt_stats, "schema_version": SCHEMA_VERSION}


def write_gso_layout(root: Path, run_id: str, predictions: Mapping[str, Mapping[str, Any]],
                     reports: Mapping[str, Mapping[str, Any]], instance_ids: list[str]) -> Path | None:
    """GSO's log layout for one rollout: logs/run_evaluation/<run_id>/<model>/<id>/report.json and the run
    report <model>.<run_id>.report.json beside them; returns the run report's path. Reward tasks (Harbor)
    have no place in GSO's shapes and are left out; None (nothing written) when no other report is left."""
    rewarded = {iid for iid, report in reports.items() if report.get("verifier") == "reward"}
    if not set(reports) - rewarded:
        return None
    predictions = {iid: p for iid, p in predictions.items() if iid not in rewarded}
    instance_ids = [iid for iid in instance_ids if iid not in rewarded]
    first = next(iter(predictions.values()), {})
    model = model_folder(str(first.get("model_name_or_path") or "None"))
    if model is None:  # (predictions files are checked when read; a run's model name is its config's)
        raise ValueError(f"the model name {first.get('model_name_or_path')!r} cannot name a folder of GSO's layout")
    folder = root / "logs" / "run_evaluation" / run_id / model
    bodies = {}
    for iid, report in reports.items():
        if iid in rewarded:
            continue
        shaped = instance_report(report)
        write_json(folder / iid / "report.json", shaped, indent=4)
        bodies[iid] = shaped[iid]
    path = folder / f"{model}.{run_id}.report.json"
    write_json(path, run_report(instance_ids, predictions, bodies), indent=4)
    return path
