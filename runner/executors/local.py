"""The local executor: a thread pool in this process (rollouts spend their time waiting on containers
and model calls, not on Python)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

TICK_S = 0.5


class LocalExecutor:
    def __init__(self, parallel: int) -> None:
        self.parallel = parallel

    def run(self, jobs: Sequence[Any], work: Callable[[Any], Any], done: Callable[[Any, Any], None],
            tick: Callable[[], None]) -> None:
        pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="rollout")
        futures: dict[Future[Any], Any] = {pool.submit(work, job): job for job in jobs}
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=TICK_S, return_when=FIRST_COMPLETED)
                for future in finished:
                    done(futures[future], future.result())  # a bug in the runner surfaces here
                tick()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
