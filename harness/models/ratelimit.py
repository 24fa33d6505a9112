"""One rate limiter per provider model, shared by every call of the process.

Why: rollouts run in parallel threads of one process and all call the same provider model. When the
provider answers 429 ("slow down", often with `Retry-After`), retrying per call lets the other 15
rollouts keep hammering it, so the storm lasts and calls end up failing, which restarts whole rollouts.
Instead, every `Model` with the same (provider, model name, api_base) gets the same `RateLimiter`
(`limiter_for`), and:

- **a shared "not before" time**: a 429 pushes it to now + Retry-After (capped at
  `rate_limit_max_wait_s`, so that `Retry-After: 1e9` cannot shut the model off for the rest of the
  process) or, without the header, the call's exponential backoff; no call of that model sends a
  request before it. Waiting for it is
  counted against the call's *rate-limit wait budget* (`ModelConfig.rate_limit_max_wait_s`), not
  against its attempts: a rate-limited run slows down instead of discarding work;
- **an adaptive window of requests in flight** (AIMD, as TCP does): unlimited at first (or
  `ModelConfig.max_in_flight` if set); a 429 halves it, once per pause (429s of requests sent before
  the last cut belong to the same burst); every success raises it by one, up to the cap. So when a
  pause ends, the waiting calls are released a few at a time instead of all at once into a new storm.

Waiting for a free slot in the window is not bounded by the wait budget (it ends when other calls of
this process finish, each bounded by its own timeout); it is recorded with the rest of the wait.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.models.config import ModelConfig


class RateLimitWaitExceeded(Exception):
    """The call would have to wait past its rate-limit wait budget."""

    def __init__(self, waited_s: float, needed_s: float) -> None:
        super().__init__(f"still rate limited after waiting {waited_s:.1f} s (another {needed_s:.1f} s needed)")
        self.waited_s, self.needed_s = waited_s, needed_s


@dataclass
class Ticket:
    """One admitted request: when it was let through and how long it waited for that."""
    sent_at: float  # time.monotonic()
    gate_wait_s: float  # waiting for the shared not-before time (counts against the wait budget)
    slot_wait_s: float  # waiting for a free slot in the window

    @property
    def waited_s(self) -> float:
        return self.gate_wait_s + self.slot_wait_s


class RateLimiter:
    """Thread-safe. `acquire` before each request, then exactly one of `succeeded`, `rate_limited` or
    `failed` with its ticket."""

    def __init__(self, key: tuple[str, str, str], max_in_flight: int | None = None) -> None:
        self.key = key
        self.max_in_flight = max_in_flight if max_in_flight and max_in_flight > 0 else None
        self._cond = threading.Condition()
        self._not_before = 0.0  # time.monotonic(); no request is sent earlier
        self._in_flight = 0
        self._window: float = float(self.max_in_flight) if self.max_in_flight else math.inf
        self._last_cut = -math.inf  # when the window was last halved

    # -- state, for logs and tests
    @property
    def not_before(self) -> float:
        with self._cond:
            return self._not_before

    @property
    def window(self) -> float:
        with self._cond:
            return self._window

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    # -- the protocol
    def acquire(self, max_gate_wait_s: float = math.inf) -> Ticket:
        """Block until a request may be sent. Raises RateLimitWaitExceeded at once when the not-before
        time lies beyond `max_gate_wait_s` from now (waiting would not be allowed to end anyway)."""
        gate = slot = 0.0
        with self._cond:
            while True:
                now = time.monotonic()
                if now < self._not_before:
                    remaining = max_gate_wait_s - gate
                    if self._not_before - now > remaining:
                        raise RateLimitWaitExceeded(gate + slot, self._not_before - now)
                    self._cond.wait(self._not_before - now)
                    gate += time.monotonic() - now
                    continue
                if self._in_flight < self._window:
                    break
                self._cond.wait()  # a release notifies; the not-before time can only move later
                slot += time.monotonic() - now
            self._in_flight += 1
            return Ticket(sent_at=time.monotonic(), gate_wait_s=gate, slot_wait_s=slot)

    def succeeded(self, ticket: Ticket) -> None:
        with self._cond:
            self._release()
            if self._window < (self.max_in_flight or math.inf):
                self._window += 1

    def failed(self, ticket: Ticket) -> None:
        """Any other outcome (a 5xx, a timeout, a bad request): no signal about the rate."""
        with self._cond:
            self._release()

    def rate_limited(self, ticket: Ticket, pause_s: float) -> None:
        """A 429: nobody sends before now + `pause_s`; the window halves once per burst."""
        with self._cond:
            in_flight = self._in_flight  # this request included
            self._release()
            self._not_before = max(self._not_before, time.monotonic() + max(0.0, pause_s))
            if ticket.sent_at >= self._last_cut:
                self._window = max(1.0, min(self._window, in_flight) / 2)
                self._last_cut = time.monotonic()

    def _release(self) -> None:
        self._in_flight -= 1
        self._cond.notify_all()


# ---------------------------------------------------------------- the process-wide registry
_limiters: dict[tuple[str, str, str], RateLimiter] = {}
_lock = threading.Lock()
# Set in a worker of a cluster: limiters that live elsewhere (the driver's), same protocol (runner.executors.ray)
_shared: Callable[[ModelConfig], Any] | None = None


def share_through(factory: Callable[[ModelConfig], Any] | None) -> None:
    """Make `limiter_for` return `factory(config)`: a limiter shared by every process of a run (None: this
    process's own again)."""
    global _shared
    _shared = factory


def limiter_key(config: ModelConfig) -> tuple[str, str, str]:
    """(provider, model name, api_base): the same model behind two servers has two rate limits."""
    provider = config.name.split("/", 1)[0] if "/" in config.name else "openai"  # litellm's default
    return provider, config.name, config.api_base or ""


def limiter_for(config: ModelConfig) -> RateLimiter:
    """The shared limiter of this provider model; created by the first caller, whose `max_in_flight`
    it keeps (a run has one model config)."""
    if _shared is not None:
        return _shared(config)
    key = limiter_key(config)
    with _lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = _limiters[key] = RateLimiter(key, config.max_in_flight)
        return limiter


def reset() -> None:
    """Forget every limiter (tests; a new run in the same process starts with fresh state)."""
    share_through(None)
    with _lock:
        _limiters.clear()
