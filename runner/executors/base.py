"""What an executor is (`Executor`), what it exchanges with the driver (`RolloutJob`/`RolloutResult` in
runner.rollout, `TimingJob` in runner.grading, `Running`), and `make_executor`, which builds one by name."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runner.executors import EXECUTORS

if TYPE_CHECKING:
    from harness.sandbox.providers import SandboxProvider
    from runner.config import RunConf
    from runner.grading import TimingJob
    from runner.rollout import RolloutJob, RolloutResult
    from scaffolds.exits import ExitReason

TICK_S = 0.5  # how often the driver's tick runs (progress, cost cap)


class Running(Protocol):
    """What the driver sees of a running rollout (progress display, cost cap)."""
    task_id: str
    index: int
    started_at: float
    attempt: int

    @property
    def steps(self) -> int: ...

    @property
    def cost(self) -> float: ...


class Executor(Protocol):
    def run_rollouts(self, jobs: Sequence[RolloutJob], done: Callable[[RolloutJob, RolloutResult | None], None],
                     tick: Callable[[], None]) -> None:
        """Run every job; call `done(job, result)` on the driver's thread as each ends (None: dropped
        because the run is stopping) and `tick()` about twice a second. Exceptions of the rollout code
        propagate (a bug, not an outcome)."""
        ...

    def running(self) -> list[Running]: ...

    def stop(self, reason: ExitReason) -> None:
        """Launch nothing more and ask every running rollout to end with `reason` (safe from a signal
        handler; returns at once)."""
        ...

    def time_patches(self, jobs: Sequence[TimingJob],
                     log: Callable[[str], None]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """Grade each job (one task's patches in one session); yields (index in jobs, its reports, one
        per patch) as each finishes."""
        ...

    def remove_sandboxes(self) -> None:
        """The second signal: remove this run's containers now, wherever they run."""
        ...

    def close(self) -> None: ...


@dataclass
class Context:
    """What every executor is built from."""
    conf: RunConf
    run_id: str
    sandboxes: SandboxProvider  # this machine's (the driver's)
    checkpoints: Path | None = None  # where rollouts' checkpoints go (local rollouts; None: not kept)


def make_executor(context: Context) -> Executor:
    kind = context.conf.executor.kind
    if kind not in EXECUTORS:
        raise ValueError(f"unknown executor {kind!r}; known: {', '.join(EXECUTORS)}")
    module, _, cls = EXECUTORS[kind].partition(":")
    return getattr(importlib.import_module(module), cls)(context)
