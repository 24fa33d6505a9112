"""Executors, registered by name: what runs planned rollouts. `local` (threads in this process) today;
`ray` plugs in here next. The driver (runner.run) keeps the run store, the progress display and the
cost cap; an executor only runs jobs and hands each result back to the driver's thread.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

Job = TypeVar("Job")
EXECUTORS = {"local": "runner.executors.local:LocalExecutor"}


class Executor(Protocol):
    def run(self, jobs: Sequence[Any], work: Callable[[Any], Any], done: Callable[[Any, Any], None],
            tick: Callable[[], None]) -> None:
        """Run `work(job)` for every job; call `done(job, result)` on the driver's thread as each finishes
        and `tick()` about twice a second. Exceptions of `work` propagate (a bug, not an outcome)."""
        ...


def make_executor(kind: str, parallel: int) -> Executor:
    if kind not in EXECUTORS:
        raise ValueError(f"unknown executor {kind!r}; known: {', '.join(EXECUTORS)}")
    module, _, cls = EXECUTORS[kind].partition(":")
    return getattr(importlib.import_module(module), cls)(parallel)
