"""The local executor: a thread pool in this process (rollouts spend their time waiting on containers
and model calls, not on Python), and timing jobs one at a time."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from runner.executors.base import TICK_S, Context, Running
from runner.grading import TimingJob, time_locally
from runner.rollout import Interrupted, Live, RolloutJob, RolloutResult, RolloutRunner
from scaffolds.exits import ExitReason


class LocalExecutor:
    def __init__(self, context: Context) -> None:
        self.context = context
        self.parallel = context.conf.parallel
        self.rollouts = RolloutRunner(context.conf, context.run_id, context.sandboxes,
                                      checkpoints=context.checkpoints)
        self.live: dict[tuple[str, int], Live] = {}
        self.lock = threading.Lock()
        self.stopping: ExitReason | None = None

    # ---------------------------------------------------------------- rollouts
    def run_rollouts(self, jobs: Sequence[RolloutJob], done: Callable[[RolloutJob, RolloutResult | None], None],
                     tick: Callable[[], None]) -> None:
        pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="rollout")
        futures: dict[Future[Any], RolloutJob] = {pool.submit(self._work, job): job for job in jobs}
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=TICK_S, return_when=FIRST_COMPLETED)
                for future in finished:
                    done(futures[future], future.result())  # a bug in the runner surfaces here
                tick()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _work(self, job: RolloutJob) -> RolloutResult | None:
        if self.stopping:
            return None
        live = Live(job.task.id, job.index)
        with self.lock:
            self.live[job.key] = live
        try:
            return self.rollouts.run(job, live)
        except Interrupted:
            return None
        finally:
            with self.lock:
                self.live.pop(job.key, None)

    def running(self) -> list[Running]:
        with self.lock:
            return list(self.live.values())

    def stop(self, reason: ExitReason) -> None:
        if self.stopping != ExitReason.INTERRUPTED:
            self.stopping = reason
        with self.lock:
            live = list(self.live.values())
        for item in live:
            item.request_stop(reason)

    # ---------------------------------------------------------------- grading
    def time_patches(self, jobs: Sequence[TimingJob],
                     log: Callable[[str], None]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        return time_locally(self.context.sandboxes)(jobs, log)

    def remove_sandboxes(self) -> None:
        self.context.sandboxes.cleanup("mine")

    def close(self) -> None:
        pass
