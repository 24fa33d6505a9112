"""Runs as a study sees them: finding run folders on disk, loading them, and checking that they can be
compared; then each run's per-rollout successes and scores (pure functions over its records)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
import sys
from pathlib import Path

from runner.config import ConfigError, RunConf, validate
from runner.plan import select
from runner.records import ResultRecord
from runner.report import slots
from runner.store import RunStore
from runner.tables import system_label


@dataclass
class Run:
    path: Path
    conf: RunConf
    records: list[ResultRecord]  # results.jsonl, one per (task, rollout)
    task_ids: list[str]
    label: str  # the system
    approximate: bool = False  # a post-hoc truncation

    @property
    def n(self) -> int:
        return self.conf.rollouts

    def slots(self) -> dict[str, list[ResultRecord | None]]:
        """task -> the record of each rollout index (None where it is missing)."""
        return slots(self.records, self.task_ids, self.n)


def find_runs(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise ConfigError(f"{path}: no such directory")
        if RunStore(path).is_run():
            found.append(path)
            continue
        inside = sorted(p.parent for p in path.rglob("config.yaml") if p.parent.name != ".hydra")
        if not inside:
            raise ConfigError(f"{path} is not a run directory and holds none (no config.yaml found)")
        found += inside
    return list(dict.fromkeys(p.resolve() for p in found))


def load_runs(paths: list[Path]) -> list[Run]:
    """The runs `paths` name or hold. A folder found inside one whose config.yaml is not a run's (another
    tool's Hydra output, say) is skipped with a warning naming the file; a folder named itself is refused."""
    named = {p.resolve() for p in paths}
    runs = []
    for path in find_runs(paths):
        try:
            runs.append(load_run(path))
        except ConfigError as err:
            if path in named:
                raise
            print(f"warning: {err}; skipped", file=sys.stderr)
    return runs


def load_run(path: Path) -> Run:
    store = RunStore(path)
    try:
        conf = validate(store.load_config())
    except ConfigError as err:
        raise ConfigError(f"{store.config_path} is not a run's config ({err})") from None
    records = store.results()
    try:
        task_ids = [t.id for t in select(conf)]
    except ConfigError:  # the task folder moved: fall back to what the run recorded
        task_ids = sorted({r.instance_id for r in records})
    return Run(path, conf, records, task_ids, system_label(conf))


def check_comparable(runs: list[Run]) -> None:
    if not runs:
        raise ConfigError("no runs to aggregate")
    ungraded = [r for r in runs if r.conf.grade == "none" or any(rec.grading is None for rec in r.records)]
    if ungraded:
        raise ConfigError(f"{ungraded[0].path} has ungraded rollouts: grade it first "
                          f"(python -m runner.grade {ungraded[0].path})")
    empty = [r for r in runs if not r.records]
    if empty:
        raise ConfigError(f"{empty[0].path} has no finished rollouts yet")
    if len({tuple(sorted(r.task_ids)) for r in runs}) > 1:
        a, b = runs[0], next(r for r in runs if sorted(r.task_ids) != sorted(runs[0].task_ids))
        raise ConfigError(f"runs over different task sets: {a.path.name} ({len(a.task_ids)} tasks) and "
                          f"{b.path.name} ({len(b.task_ids)} tasks); aggregate them separately")
    seen: dict[str, Path] = {}
    for run in runs:
        if run.label in seen:
            raise ConfigError(f"two runs of the same system {run.label}: {seen[run.label]} and {run.path}")
        seen[run.label] = run.path


def successes_of(run: Run, p: float | None = None) -> dict[str, list[bool]]:
    """Opt_p per rollout (p=None: the run's own verdict, GSO's opt_commit at p = 0.95)."""
    out = {}
    for task, records in run.slots().items():
        gradings = [r.grading if r else None for r in records]
        if p is None:
            out[task] = [bool(g and g.solved) for g in gradings]
        else:
            out[task] = [bool(g and g.opt_base and g.opt_stats.get("hm_speedup_patch_commit") is not None
                              and g.opt_stats["hm_speedup_patch_commit"] > p) for g in gradings]
    return out


def scores_of(run: Run) -> dict[str, list[float]]:
    return {t: [float(r.score or 0.0) if r else 0.0 for r in v] for t, v in run.slots().items()}


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points no other point beats on both cost (lower) and score (higher)."""
    front = []
    for i, (cost, score) in enumerate(points):
        dominated = any((c <= cost and s >= score) and (c < cost or s > score) for j, (c, s) in enumerate(points)
                        if j != i)
        if not dominated:
            front.append(i)
    return front


def bootstrap_arguments(parser: argparse.ArgumentParser) -> None:
    """--resamples, --level and --seed of the bootstrap intervals, as aggregate and compare take them."""
    from harness.metrics.bootstrap import Settings  # (numpy: only once a command's parser is built)

    d = Settings()
    parser.add_argument("--resamples", type=int, default=d.resamples,
                        help=f"bootstrap resamples (default {d.resamples})")
    parser.add_argument("--level", type=float, default=d.level, help=f"interval level (default {d.level})")
    parser.add_argument("--seed", type=int, default=d.seed, help=f"bootstrap seed (default {d.seed})")
