"""The state a Ray run shares between its driver and its workers, as Ray actors placed on the driver's node.

    Board          the running rollouts as their workers last reported them (the driver's progress display
                   and run cost cap read it) and the stop the driver asked for (the workers read it)
    SharedLimiter  the model's rate limiter (harness.models.ratelimit), one for every worker of the run;
                   `RemoteLimiter` is its stand-in inside a worker, with the same protocol
    ImageDepot     task images from the driver's engine (the run's sandbox provider's), for nodes that lack
                   one (`docker save` on the driver, `docker load` on the node; through Ray's object store)
    Folder         the run's checkpoints folder (runner.checkpoints.Folder, as an actor): rollouts' checkpoints
                   and their archives, written by the nodes, read by whichever node continues one;
                   `RemoteFiles` is its stand-in inside a worker

Each is small and single-purpose; a worker talks to the board about twice a second per rollout and to the
limiter once per model call.
"""
from __future__ import annotations

import math
from typing import Any

import ray

from harness.models.config import ModelConfig
from harness.models.ratelimit import RateLimiter, RateLimitWaitExceeded, Ticket
from scaffolds.exits import ExitReason


class Board:
    def __init__(self) -> None:
        self.live: dict[tuple[str, int], dict[str, Any]] = {}
        self.stop_reason: ExitReason | None = None

    def sync(self, key: tuple[str, int], snapshot: dict[str, Any]) -> ExitReason | None:
        """A worker's report on its rollout; answers with the stop the driver asked for, if any."""
        self.live[key] = snapshot
        return self.stop_reason

    def stop(self, reason: ExitReason) -> None:
        if self.stop_reason != ExitReason.INTERRUPTED:  # an interrupt is never downgraded
            self.stop_reason = reason

    def done(self, key: tuple[str, int]) -> None:
        self.live.pop(key, None)

    def running(self) -> list[dict[str, Any]]:
        return list(self.live.values())


class SharedLimiter:
    """The run's RateLimiter, behind a threaded actor: a waiting `acquire` holds one of its threads, as
    it holds the calling thread in a single process."""

    def __init__(self, key: tuple[str, str, str], max_in_flight: int | None) -> None:
        self.limiter = RateLimiter(key, max_in_flight)

    def acquire(self, max_gate_wait_s: float) -> Ticket | tuple[float, float]:
        try:
            return self.limiter.acquire(max_gate_wait_s)
        except RateLimitWaitExceeded as exc:  # handed back as values: the worker raises its own
            return exc.waited_s, exc.needed_s

    def succeeded(self, ticket: Ticket) -> None:
        self.limiter.succeeded(ticket)

    def failed(self, ticket: Ticket) -> None:
        self.limiter.failed(ticket)

    def rate_limited(self, ticket: Ticket, pause_s: float) -> None:
        self.limiter.rate_limited(ticket, pause_s)


class RemoteLimiter:
    """A worker's view of the SharedLimiter (what `ratelimit.limiter_for` returns there)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def acquire(self, max_gate_wait_s: float = math.inf) -> Ticket:
        answer = ray.get(self.actor.acquire.remote(max_gate_wait_s))
        if isinstance(answer, tuple):
            raise RateLimitWaitExceeded(*answer)
        return answer

    def succeeded(self, ticket: Ticket) -> None:
        ray.get(self.actor.succeeded.remote(ticket))

    def failed(self, ticket: Ticket) -> None:
        ray.get(self.actor.failed.remote(ticket))

    def rate_limited(self, ticket: Ticket, pause_s: float) -> None:
        ray.get(self.actor.rate_limited.remote(ticket, pause_s))


def share_limiter(actor: Any) -> None:
    """In a worker: every Model of this process uses the run's shared limiter."""
    from harness.models import ratelimit

    ratelimit.share_through(lambda _config: RemoteLimiter(actor))


def limiter_actor(config: ModelConfig, **options: Any) -> Any:
    from harness.models.ratelimit import limiter_key

    cls = ray.remote(SharedLimiter).options(max_concurrency=1000, num_cpus=0, **options)
    return cls.remote(limiter_key(config), config.max_in_flight)


class ImageDepot:
    def __init__(self, provider_name: str) -> None:
        self.provider_name = provider_name  # the run's sandbox provider: its engine on the driver has the images
        self.saved: dict[str, list[Any]] = {}  # image -> ObjectRefs of its archive's pieces, in order

    def tar(self, image: str) -> list[list[Any]]:
        """The image's archive in the object store, one object per piece (saved once per run: this process
        holds one piece at a time); wrapped in a list so the caller gets the references, not the bytes."""
        if image not in self.saved:
            from harness.sandbox.providers import provider

            self.saved[image] = [ray.put(piece) for piece in provider(self.provider_name).export_image(image)]
        return [self.saved[image]]


class RemoteFiles:
    """A worker's view of the driver's checkpoints folder (runner.checkpoints.Files)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def read(self, name: str) -> bytes | None:
        return ray.get(self.actor.read.remote(name))

    def write(self, name: str, data: bytes) -> None:
        ray.get(self.actor.write.remote(name, data))

    def append(self, name: str, line: str) -> None:
        ray.get(self.actor.append.remote(name, line))

    def remove(self, name: str) -> None:
        ray.get(self.actor.remove.remote(name))

    def where(self, name: str) -> str:
        return ray.get(self.actor.where.remote(name))
