"""The shared rate limiter (harness/models/ratelimit.py): a 429's Retry-After pauses every call to the
same provider model and no other, 429s do not use up a call's attempts, the adaptive window, and a
storm of 30% 429s over 16 concurrent "rollouts" through real litellm to the loopback server: every call
succeeds, nobody sends during a pause, and the recorded usage equals what the server reported."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from harness.models.config import ModelConfig
from harness.models.errors import ModelError, retry_after_s
from harness.models.model import Model
from harness.models.ratelimit import RateLimiter, RateLimitWaitExceeded
from harness.models.records import CallRecord, Price
from tests.openai_server import OpenAIServer, Received, Reply, completion, error, rate_limit_storm

PRICE = Price(input=2.0, output=8.0)
MESSAGES = [{"role": "user", "content": "Say hi."}]
RATE_LIMITED = error("Rate limit reached for requests", type_="requests", code="rate_limit_exceeded")


def model(server: OpenAIServer, name: str = "openai/test-model", **overrides: Any) -> Model:
    fields: dict[str, Any] = dict(name=name, api_base=server.base_url, price=PRICE, attempts=3, backoff_s=0.01,
                                  backoff_max_s=2.0, timeout_s=10.0)
    fields.update(overrides)
    return Model(ModelConfig(**fields), api_key="sk-test")


def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


# ---------------------------------------------------------------- sharing
def test_retry_after_pauses_every_model_of_the_same_provider_model_and_no_other() -> None:
    first_a = threading.Event()

    def policy(received: Received) -> Reply:
        if received.body["model"] == "model-a" and not first_a.is_set():
            first_a.set()
            return Reply(status=429, headers={"Retry-After": "0.6"}, body=RATE_LIMITED)
        return Reply(body=completion("ok", model=received.body["model"]))

    with OpenAIServer(policy=policy) as server:
        a1, a2 = model(server, "openai/model-a"), model(server, "openai/model-a")
        b = model(server, "openai/model-b")
        assert a1.limiter is a2.limiter and a1.limiter is not b.limiter
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(a1.query, MESSAGES)  # meets the 429, then waits 0.6 s
            wait_for(lambda: a1.limiter.not_before > 0)  # A1 has read its 429: the pause is on
            limited = next(r for r in server.requests if r.status == 429)
            assert limited.answered_at is not None
            b_reply = b.query(MESSAGES)  # another model: not paused
            a2_reply = a2.query(MESSAGES)  # the same model, another instance (another rollout): paused
            a1_reply = first.result(timeout=10)
    b_sent = next(r for r in server.requests if r.body["model"] == "model-b")
    assert b_sent.at < limited.answered_at + 0.5 and b_reply.record.rate_limit_wait_s == 0.0
    a_sent = sorted(r.at for r in server.requests if r.body["model"] == "model-a" and r is not limited)
    assert len(a_sent) == 2 and a_sent[0] >= limited.answered_at + 0.6  # neither A sent during the pause
    assert a2_reply.record.rate_limited == 0 and a2_reply.record.rate_limit_wait_s > 0.3
    assert (a1_reply.record.rate_limited, a1_reply.record.attempts) == (1, 2)
    assert a1_reply.record.rate_limit_wait_s >= 0.59


def test_same_model_behind_another_server_is_not_paused() -> None:
    with OpenAIServer() as one, OpenAIServer() as two:
        assert model(one).limiter is model(one).limiter
        assert model(one).limiter is not model(two).limiter  # the key includes api_base


# ---------------------------------------------------------------- budgets
def test_rate_limits_do_not_use_up_attempts_but_server_errors_do() -> None:
    limited = Reply(status=429, headers={"Retry-After": "0.05"}, body=RATE_LIMITED)
    boom = Reply(status=500, body=error("boom", type_="server_error"))
    with OpenAIServer() as server:
        server.push(limited, limited, limited, boom, limited, Reply(body=completion("hi")))
        reply = model(server, attempts=2).query(MESSAGES)  # 1 of 2 attempts used, 4 rate limits waited out
        assert reply.content == "hi"
        assert (reply.record.attempts, reply.record.rate_limited) == (6, 4)
        server.push(boom, limited, boom, Reply(body=completion("never")))
        with pytest.raises(ModelError) as info:
            model(server, attempts=2).query(MESSAGES)
        assert info.value.kind == "transient" and "after 2 attempts and 1 rate limits" in str(info.value)
        assert len(server.requests) == 9


# (the budget counts the time really waited: beside make test's other processes a 0.3 s pause overslept enough
# that the third left too little for a fourth; alone, in make test's second pass, the count is exact)
@pytest.mark.timed
def test_a_call_gives_up_when_its_rate_limit_wait_budget_is_spent() -> None:
    limited = Reply(status=429, headers={"Retry-After": "0.3"}, body=RATE_LIMITED)
    with OpenAIServer() as warm:  # a process's first call imports and sets up litellm (seconds): before the clock
        warm.push(Reply(body=completion("ready")))
        model(warm).query(MESSAGES)
    with OpenAIServer() as server:
        server.push(*[limited] * 5)
        started = time.monotonic()
        with pytest.raises(ModelError) as info:
            model(server, rate_limit_max_wait_s=1.0).query(MESSAGES)
        elapsed = time.monotonic() - started
    # Waits 0.3 s three times (0.9 s), then a fourth pause would pass the 1 s budget: it gives up at once.
    assert info.value.kind == "transient" and "rate_limit_max_wait_s=1" in str(info.value)
    assert "Rate limit reached" in str(info.value) and "\n" not in str(info.value)
    assert len(server.requests) == 4 and 0.85 < elapsed < 3.0


# ---------------------------------------------------------------- the limiter itself
def test_window_halves_once_per_burst_grows_back_and_keeps_the_cap() -> None:
    limiter = RateLimiter(("openai", "openai/x", ""), max_in_flight=8)
    tickets = [limiter.acquire() for _ in range(8)]
    assert limiter.in_flight == 8
    # Two 429s of the same burst (sent before the cut): one halving, not two.
    limiter.rate_limited(tickets[0], 0.0)
    limiter.rate_limited(tickets[1], 0.0)
    assert limiter.window == 4
    for t in tickets[2:]:
        limiter.succeeded(t)
    assert limiter.window == 8  # +1 per success, never above the cap
    later = limiter.acquire()
    limiter.rate_limited(later, 0.0)  # sent after the cut: a new burst, a new halving
    assert limiter.window == 1.0  # only it was in flight: half of 1, floored at 1


def test_window_blocks_until_a_slot_frees() -> None:
    limiter = RateLimiter(("openai", "openai/x", ""), max_in_flight=2)
    held = [limiter.acquire(), limiter.acquire()]
    got: list[float] = []
    thread = threading.Thread(target=lambda: got.append(limiter.acquire().slot_wait_s))
    thread.start()
    time.sleep(0.2)
    assert not got  # a third request waits for a slot
    limiter.succeeded(held[0])
    thread.join(timeout=5)
    assert got and got[0] >= 0.15


def test_a_pause_beyond_the_budget_fails_at_once() -> None:
    limiter = RateLimiter(("openai", "openai/x", ""))
    limiter.rate_limited(limiter.acquire(), 5.0)
    started = time.monotonic()
    with pytest.raises(RateLimitWaitExceeded):
        limiter.acquire(max_gate_wait_s=1.0)
    assert time.monotonic() - started < 0.1


class _Headers(Exception):
    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("429")
        self.litellm_response_headers = headers


@pytest.mark.parametrize("headers, expected", [
    ({"retry-after": "2"}, 2.0),
    ({"Retry-After": "0.5"}, 0.5),  # fractional delta-seconds (not in the RFC, but sent by some servers)
    ({"retry-after-ms": "250", "retry-after": "1"}, 0.25),  # OpenAI's milliseconds win, as in its SDK
    ({"retry-after": "soon"}, None),
    ({}, None),
])
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_s(_Headers(headers)) == expected


def test_retry_after_as_an_http_date() -> None:
    import email.utils

    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after_s(_Headers({"Retry-After": when})) or 0) <= 30


# ---------------------------------------------------------------- the storm
ROLLOUTS, CALLS, RETRY_AFTER = 16, 3, 0.4


def test_a_storm_of_429s_over_16_rollouts_slows_down_and_loses_nothing() -> None:
    records: list[CallRecord] = []
    let_through: list[float] = []  # when the limiter let a request go (time.monotonic(), as the server's)
    gates: list[tuple[float, float, float]] = []  # (start, end, length) of each pause a 429 began
    lock = threading.Lock()

    def rollout(_: int) -> None:
        m = model(server, attempts=2)  # one Model per rollout, as the runner does; 2 attempts would not
        for _ in range(CALLS):         # survive two 429s in a row if 429s counted
            reply = m.query(MESSAGES)
            with lock:
                records.append(reply.record)

    with OpenAIServer(policy=rate_limit_storm(0.3, retry_after=str(RETRY_AFTER), seed=7)) as server:
        limiter = model(server).limiter  # the one every rollout's Model shares: watch it
        acquire, rate_limited = limiter.acquire, limiter.rate_limited

        def watched_acquire(*args: Any) -> Any:
            ticket = acquire(*args)
            with lock:
                let_through.append(ticket.sent_at)
            return ticket

        def watched_rate_limited(ticket: Any, pause_s: float) -> None:
            before = time.monotonic()
            rate_limited(ticket, pause_s)
            with lock:  # the pause began in between: from `after` to `before + pause_s` it surely holds
                gates.append((time.monotonic(), before + pause_s, pause_s))

        limiter.acquire, limiter.rate_limited = watched_acquire, watched_rate_limited  # type: ignore[method-assign]
        started = time.monotonic()
        with ThreadPoolExecutor(ROLLOUTS) as pool:
            list(pool.map(rollout, range(ROLLOUTS)))  # re-raises any failed call
        elapsed = time.monotonic() - started
        requests = list(server.requests)
        answered, prompt, completion_ = server.answered, server.prompt_tokens, server.completion_tokens

    pauses = [r for r in requests if r.status == 429]
    assert len(records) == ROLLOUTS * CALLS == answered  # every call succeeded, none was answered twice
    assert len(pauses) >= 10 and len(gates) == len(pauses)  # the storm happened; every 429 moved the gate
    # Every request and every 429 is accounted for by some call.
    assert sum(r.attempts for r in records) == len(requests) == len(let_through)
    assert sum(r.rate_limited for r in records) == len(pauses)
    # The recorded usage is exactly what the server reported.
    assert sum(r.input_tokens for r in records) == prompt
    assert sum(r.output_tokens for r in records) == completion_
    # Each call waited at least the Retry-After of each of its own 429s.
    for r in records:
        assert r.rate_limit_wait_s >= r.rate_limited * (RETRY_AFTER - 0.01), r
    arrivals = sorted(r.at for r in requests)
    assert all(length == RETRY_AFTER for _, _, length in gates)  # the server's Retry-After, as is
    for start, end, _ in gates:
        # No request was let through during a pause...
        assert not [t for t in let_through if start <= t < end]
        # ...so the requests the server saw during it had all been let through before it began, and were
        # still on their way (another thread's request in litellm's hands when the 429 was read).
        on_the_way = sum(t < start for t in let_through) - sum(a < start for a in arrivals)
        assert sum(start <= a < end for a in arrivals) <= on_the_way
    assert elapsed < 60
