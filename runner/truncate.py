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
import dataclasses
from typing import Any

from harness.models.records import Usage
from harness.sandbox.providers import provider
from runner.config import ConfigError
from runner.grading import Grader, graded
from runner.plan import select
from harness.grader.config import patch_sha256
from runner.records import ResultRecord, RolloutRecord
from runner.store import RunStore
from runner.study import Run


def patch_at(record: RolloutRecord, trajectory: dict[str, Any] | None, steps: int, every: int) -> str:
    """The rollout's diff after `steps` steps."""
    if record.steps <= steps or trajectory is None:
        return record.patch or ""
    snapshots = trajectory.get("step_records") or []
    if every <= 0 or steps % every or steps > len(snapshots):
        raise ConfigError(f"--truncate-steps {steps}: not a multiple of budget.snapshot_every={every}")
    snapshot = snapshots[steps - 1].get("diff_snapshot")
    if snapshot is None:
        raise ConfigError(f"--truncate-steps {steps}: rollout {record.instance_id} #{record.rollout} has no "
                          "diff snapshot at that step")
    return snapshot


def usage_at(record: RolloutRecord, trajectory: dict[str, Any] | None, steps: int) -> tuple[Usage, float | None]:
    """Usage and cost (None: unknown) of the rollout's first `steps` model calls."""
    if record.steps <= steps or trajectory is None:
        return record.usage, record.cost_usd
    calls = [s.get("call") or {} for s in (trajectory.get("step_records") or [])[:steps]]
    keys = ("input_tokens", "cached_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens")
    known = all(c.get("cost_usd") is not None for c in calls)
    usage = Usage(calls=len(calls), cost_usd=sum(c.get("cost_usd") or 0.0 for c in calls), cost_known=known,
                  **{k: sum(int(c.get(k) or 0) for c in calls) for k in keys})
    return usage, usage.cost_usd if known else None


def truncated_runs(runs: list[Run], steps_list: list[int]) -> list[Run]:
    out = []
    for run in runs:
        sandboxes = provider(run.conf.sandbox.provider)  # each run's own: a study may mix providers
        sandboxes.ensure_ready()
        tasks = {t.id: t for t in select(run.conf)}
        images = sandboxes.ensure_images(list(tasks.values()), run.conf.sandbox.base_image, progress=lambda _m: None,
                                         base_map=dict(run.conf.tasks.base_map),
                                         rootfs_from=run.conf.sandbox.rootfs)
        every = run.conf.budget.snapshot_every
        store = RunStore(run.path)
        for steps in steps_list:
            if run.conf.budget.max_steps is not None and steps >= run.conf.budget.max_steps:
                continue  # the run itself is that budget or smaller: nothing to cut
            cut_store = store.truncated(steps)
            grader = Grader(cut_store, run.conf.grading, images, sandboxes)
            records: dict[tuple[str, int], ResultRecord] = {}
            to_grade = []
            for record in run.records:
                trajectory = store.trajectory(record)
                patch = patch_at(record, trajectory, steps, every)
                usage, cost = usage_at(record, trajectory, steps)
                cut = dataclasses.replace(record.rollout_record(), patch=patch, patch_sha256=patch_sha256(patch),
                                          steps=min(record.steps, steps), usage=usage, cost_usd=cost)
                if patch == record.patch:  # the same code as at the end: the same grading, not a new noisy one
                    records[cut.key] = graded(store, cut, store.grading(record.instance_id, record.rollout))
                else:
                    to_grade.append((tasks[cut.instance_id], cut))
            if to_grade:  # one timing session per task (runner.grading)
                print(f"truncated to {steps} steps: grading {len(to_grade)} rollouts", flush=True)
            for _task, cut, report in grader.reports(to_grade):
                records[cut.key] = graded(cut_store, cut, report)
            conf = copy.deepcopy(run.conf)
            conf.budget.max_steps = steps
            conf.budget.id = f"{run.conf.budget.id}@{steps}"
            out.append(Run(cut_store.root, conf, [records[r.key] for r in run.records], run.task_ids,
                           f"{run.label} @{steps} steps", approximate=True))
    return out
