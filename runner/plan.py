"""Planning a run: which tasks, which rollouts, checked before any container starts."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.tasks import Task, TaskError, select_tasks
from runner.config import ConfigError, RunConf
from runner.store import RunStore


@dataclass(frozen=True)
class Planned:
    task: Task
    index: int  # rollout index within the task, 0..N-1


def slug(selector: str, ids: list[str] | None = None) -> str:
    """A run-name-safe label for a task selection ("suite", "smoke", "my-tasks", "suite-imgblur+rollstats")."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", selector.strip().rstrip("/").split("/")[-1]).strip("-") or "tasks"
    return f"{base}-{'+'.join(ids)}" if ids else base


def select(conf: RunConf) -> list[Task]:
    """The run's tasks; every problem is one ConfigError line."""
    try:
        t = conf.tasks
        tasks = select_tasks(t.selector, t.source, split=t.split, hints=t.hints, repo_mirror=t.repo_mirror,
                             image=t.image, network=t.network, test_timeout=t.test_timeout,
                             runs_per_test=t.runs_per_test, cpus=t.cpus, memory=t.memory, models_dir=t.models_dir)
    except TaskError as err:
        raise ConfigError(str(err).replace("--tasks", "tasks.selector=")) from None
    if conf.tasks.ids:
        known = {t.id for t in tasks}
        unknown = [i for i in conf.tasks.ids if i not in known]
        if unknown:
            raise ConfigError(f"tasks.ids: unknown task id {unknown[0]!r} (known: {', '.join(sorted(known))})")
        tasks = [t for t in tasks if t.id in conf.tasks.ids]
    if not tasks:
        raise ConfigError("the task selection is empty")
    if conf.model.patch:
        missing = [t.id for t in tasks if t.path is None or not (t.path / conf.model.patch).is_file()]
        if missing:
            raise ConfigError(f"model.patch={conf.model.patch}: task {missing[0]} has no such file")
    if conf.model.name.endswith("/replay"):
        replayed = RunStore(Path(conf.model.run_dir or ""))
        for task in tasks:
            for index in range(conf.rollouts):
                if replayed.trajectory_of(task.id, index) is None:
                    raise ConfigError(f"model.run_dir={replayed.root}: no trajectory for {task.id} rollout {index} "
                                      "to replay")
    return tasks


def plan(tasks: list[Task], rollouts: int) -> list[Planned]:
    """Tasks x rollouts, rollout-major so that early results cover every task."""
    return [Planned(task, index) for index in range(rollouts) for task in tasks]
