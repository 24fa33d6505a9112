"""Post-hoc truncation: each rollout graded as it stood after S steps, from its stored diff snapshots.

A rollout that ended by step S keeps its final patch; a longer one takes the snapshot taken at step S,
which exists when S is a multiple of the run's `budget.snapshot_every`, and its tokens and cost are those
of its first S model calls. Runs whose own step budget is S or less are not truncated. Gradings are stored in
`<run>/truncated/steps_<S>/grading/` and reused on the next aggregation. The result is an
approximation of a run with a budget of S steps (an agent that knows its budget behaves differently),
and is labelled as such.
"""
from __future__ import annotations

import copy
import json
from typing import Any

from harness.grading import patch_sha256
from runner.config import ConfigError
from runner.grade import Grader, grade_config, graded
from runner.plan import select
from runner.store import RunStore


def patch_at(record: dict[str, Any], trajectory: dict[str, Any] | None, steps: int, every: int) -> str:
    """The rollout's diff after `steps` steps."""
    if record["steps"] <= steps or trajectory is None:
        return record.get("patch") or ""
    snapshots = trajectory.get("step_records") or []
    if every <= 0 or steps % every or steps > len(snapshots):
        raise ConfigError(f"--truncate-steps {steps}: not a multiple of budget.snapshot_every={every}")
    snapshot = snapshots[steps - 1].get("diff_snapshot")
    if snapshot is None:
        raise ConfigError(f"--truncate-steps {steps}: rollout {record['instance_id']} #{record['rollout']} has no "
                          "diff snapshot at that step")
    return snapshot


def usage_at(record: dict[str, Any], trajectory: dict[str, Any] | None, steps: int) -> dict[str, Any]:
    """Tokens and cost of the rollout's first `steps` model calls."""
    if record["steps"] <= steps or trajectory is None:
        return {"usage": record.get("usage"), "cost_usd": record.get("cost_usd")}
    calls = [s.get("call") or {} for s in (trajectory.get("step_records") or [])[:steps]]
    keys = ("input_tokens", "cached_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens")
    usage: dict[str, Any] = {k: sum(int(c.get(k) or 0) for c in calls) for k in keys}
    known = all(c.get("cost_usd") is not None for c in calls)
    usage.update(calls=len(calls), cost_usd=sum(c.get("cost_usd") or 0.0 for c in calls), cost_known=known)
    return {"usage": usage, "cost_usd": usage["cost_usd"] if known else None}


def truncated_runs(runs: list[Any], steps_list: list[int]) -> list[Any]:
    from harness.images import BaseImageSpec, ensure_images
    from harness.sandbox import docker_client
    from runner.aggregate import Run

    out = []
    for run in runs:
        tasks = {t.id: t for t in select(run.conf)}
        images = ensure_images(docker_client(), list(tasks.values()), BaseImageSpec(run.conf.sandbox.base_image),
                               progress=lambda _m: None)
        every = run.conf.budget.snapshot_every
        for steps in steps_list:
            if run.conf.budget.max_steps is not None and steps >= run.conf.budget.max_steps:
                continue  # the run itself is that budget or smaller: nothing to cut
            store = RunStore(run.path / "truncated" / f"steps_{steps}")
            grader = Grader(store, grade_config(run.conf.grading), images)
            records = []
            for record in run.records:
                path = run.path / (record.get("trajectory") or "")
                trajectory = json.loads(path.read_text()) if record.get("trajectory") and path.is_file() else None
                patch = patch_at(record, trajectory, steps, every)
                cut = {**record, "patch": patch, "patch_sha256": patch_sha256(patch),
                       "steps": min(record["steps"], steps), **usage_at(record, trajectory, steps)}
                if patch == record.get("patch"):  # the same code as at the end: the same grading, not a new noisy one
                    records.append(graded(cut, RunStore(run.path).grading(record["instance_id"], record["rollout"])))
                    continue
                print(f"truncated to {steps} steps: grading {cut['instance_id']} #{cut['rollout']}", flush=True)
                records.append(graded(cut, grader.report(tasks[cut["instance_id"]], cut)))
            conf = copy.deepcopy(run.conf)
            conf.budget.max_steps = steps
            conf.budget.id = f"{run.conf.budget.id}@{steps}"
            out.append(Run(store.root, conf, records, run.task_ids, f"{run.label} @{steps} steps",
                           approximate=True))
    return out
