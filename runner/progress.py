"""Progress of a run: a live table on a terminal, plain log lines elsewhere (CI, pipes, files).

On a terminal: one row per task (rollouts done / running / failed, steps and spend so far, this process's
rollouts included while they run), then each running rollout (task, rollout, attempt, step, elapsed, cost),
then the totals, finished counts by exit reason and an ETA from the mean duration of finished rollouts.
Elsewhere a line per finished rollout and the totals every 30 s. "failed": the rollout's run ended in an
error (infrastructure, provider, model or tool; runner.records.ERRORED), not a rollout that found no speedup.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from typing import Any

from rich.console import Console, Group
from rich.live import Live as RichLive
from rich.table import Table

from runner.records import ERRORED, RolloutRecord


class _Task:
    """What the live view shows of one task: its finished rollouts' counts, steps and spend."""
    __slots__ = ("done", "failed", "steps", "cost", "cost_unknown")

    def __init__(self) -> None:
        self.done = self.failed = self.steps = 0
        self.cost = 0.0
        self.cost_unknown = False


class Progress:
    def __init__(self, title: str, total: int, done_before: int, cost_before: float, parallel: int) -> None:
        self.title, self.total, self.parallel = title, total, parallel
        self.done_before, self.cost_before = done_before, cost_before
        self.started = time.time()
        self.reasons: Counter[str] = Counter()
        self.durations: list[float] = []
        self.cost_unknown = False
        self.console = Console(stderr=True)
        self.interactive = sys.stderr.isatty() and not os.environ.get("CI")
        self._live: RichLive | None = None
        self._last_plain = 0.0
        self._print_lock = threading.Lock()  # rollouts finish on worker threads
        self.tasks: dict[str, _Task] = {}  # this process's finished rollouts, per task

    def __enter__(self) -> "Progress":
        if self.interactive:
            self._live = RichLive(console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        else:
            self.log(f"{self.title}: {self.total} rollouts to run ({self.done_before} already finished)")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)

    def log(self, message: str) -> None:
        with self._print_lock:
            if self._live is not None:
                self._live.console.print(message)
            else:
                print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    def finished(self, record: RolloutRecord) -> None:
        task = self.tasks.setdefault(record.instance_id, _Task())
        task.done += 1
        task.failed += record.exit_reason in ERRORED
        task.steps += record.steps
        task.cost += record.cost_usd or 0.0
        task.cost_unknown |= record.cost_usd is None
        self.reasons[str(record.exit_reason)] += 1
        self.durations.append(record.wall_time_s)
        cost = record.cost_usd
        if cost is None:
            self.cost_unknown = True
        else:
            self.cost_before += cost
        self.log(f"finished {record.instance_id} #{record.rollout}: {record.exit_reason}, "
                 f"{record.steps} steps, {record.wall_time_s:.0f} s, {_cost(cost)}")

    def eta(self, running: int) -> float | None:
        remaining = self.total - len(self.durations)
        if not self.durations or remaining <= 0:
            return None
        mean = sum(self.durations) / len(self.durations)
        return mean * max(0, remaining - running) / self.parallel + mean / 2 * min(running, remaining)

    def update(self, live: list[Any]) -> None:
        total_cost = self.cost_before + sum(item.cost for item in live)
        eta = self.eta(len(live))
        totals = (f"{len(self.durations)}/{self.total} finished, {len(live)} running, cost {_cost(total_cost)}"
                  f"{' + unknown' if self.cost_unknown else ''}, elapsed {time.time() - self.started:.0f} s"
                  f", ETA {'-' if eta is None else f'{eta:.0f} s'}; "
                  + ", ".join(f"{k}: {v}" for k, v in sorted(self.reasons.items())))
        if self._live is None:
            if time.time() - self._last_plain >= 30:
                self._last_plain = time.time()
                self.log(totals)
            return
        table = Table(title="running", expand=False)
        for column in ("task", "rollout", "attempt", "step", "elapsed", "cost"):
            table.add_column(column)
        for item in live:
            table.add_row(item.task_id, str(item.index), str(item.attempt + 1), str(item.steps),
                          f"{time.time() - item.started_at:.0f} s", _cost(item.cost))
        self._live.update(Group(self.task_table(live), table, totals))

    def task_table(self, live: list[Any]) -> Table:
        """One row per task this process has run or runs: done / running / failed, steps and spend so far."""
        running: dict[str, list[Any]] = {}
        for item in live:
            running.setdefault(item.task_id, []).append(item)
        table = Table(title=self.title, expand=False)
        for column in ("task", "done", "running", "failed", "steps", "spend"):
            table.add_column(column, justify="left" if column == "task" else "right")
        for task_id in sorted(set(self.tasks) | set(running)):
            task, now = self.tasks.get(task_id) or _Task(), running.get(task_id, [])
            spend = task.cost + sum(item.cost for item in now)
            table.add_row(task_id, str(task.done), str(len(now)), str(task.failed) if task.failed else "-",
                          str(task.steps + sum(item.steps for item in now)),
                          _cost(spend) + (" + unknown" if task.cost_unknown else ""))
        return table


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"
