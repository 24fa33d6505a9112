"""A fault-injecting policy for the loopback OpenAI server (`tests.openai_server`): a mini_swe agent that
runs a few commands and submits, with a seeded share of its requests answered badly.

Fault kinds, drawn uniformly once a request is chosen to fail:
- `rate_limit`: 429 with `Retry-After`;
- `server_error`: 500 or 503;
- `reset`: the connection is closed without an answer;
- `slow`: a completion sent only after the client's call timeout (the client must have given up: the
  server then drops it and does not count its tokens);
- `malformed`: 200 with a body that is not JSON.

Besides, every `hostile_every`-th rollout (counted by first requests) gets an agent that works against the
runner from inside its container: its first command leaves a directory where the diff was once written and
a generated file larger than `sandbox.max_patch_bytes` in the work tree (`hostile`).

The counts per kind are kept (`injected`), so a bench can print what it did to the run.
"""
from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field

from tests.openai_server import Received, Reply, completion, error, usage

KINDS = ("rate_limit", "server_error", "reset", "slow", "malformed")
SENTINEL = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
HOSTILE = ("mkdir -p /tmp/.optrunner.diff/x && head -c 6000000 /dev/zero | tr '\\0' a | fold -w 99 > generated.log "
           "&& echo turn 0")
MALFORMED = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "message": {'


def turn_of(received: Received) -> int:
    body = received.body if isinstance(received.body, dict) else {}
    return sum(m.get("role") == "assistant" for m in body.get("messages", []))


def mini_swe_reply(received: Received, turns: int, prompt: int, completion_tokens: int,
                   hostile: bool = False) -> Reply:
    """mini_swe's text protocol: `turns` commands, then the submission sentinel. The turn is read from the
    conversation sent, so a retried request gets the same answer (`hostile`: the first command is HOSTILE)."""
    done = turn_of(received)
    command = (HOSTILE if hostile and done == 0 else f"echo turn {done}") if done < turns else SENTINEL
    text = f"THOUGHT: step {done}.\n\n```mswea_bash_command\n{command}\n```"
    return Reply(body=completion(text, usage_=usage(prompt=prompt, completion=completion_tokens)))


@dataclass
class FaultPolicy:
    """A `Policy` (call it with a request). `share` of requests are faulted; `timeout_s` is the client's call
    timeout, which a `slow` reply overruns by `slow_margin_s`."""
    share: float = 0.2
    timeout_s: float = 3.0
    seed: int = 0
    turns: int = 3
    retry_after: str = "1"
    slow_margin_s: float = 1.5
    hostile_every: int = 0  # 0: none
    injected: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    firsts: int = 0  # first requests of a rollout seen (retries of one included)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()  # handler threads share the generator and the counts

    def __call__(self, received: Received) -> Reply:
        with self._lock:
            self.requests += 1
            kind = self._rng.choice(KINDS) if self._rng.random() < self.share else None
            prompt, completion_tokens = self._rng.randint(50, 400), self._rng.randint(5, 60)
            status = self._rng.choice((500, 503))
            if kind:
                self.injected[kind] += 1
            hostile = False
            if self.hostile_every and turn_of(received) == 0 and kind is None:  # (answered, so it is acted on)
                self.firsts += 1
                hostile = self.firsts % self.hostile_every == 0
                self.injected["hostile"] += hostile
        answer = mini_swe_reply(received, self.turns, prompt, completion_tokens, hostile)
        if kind == "rate_limit":
            return Reply(status=429, headers={"Retry-After": self.retry_after},
                         body=error("Rate limit reached", type_="requests", code="rate_limit_exceeded"))
        if kind == "server_error":
            return Reply(status=status, body=error("upstream failure", type_="server_error"))
        if kind == "reset":
            return Reply(reset=True)
        if kind == "slow":
            answer.delay_s = self.timeout_s + self.slow_margin_s
            return answer
        if kind == "malformed":
            return Reply(raw=MALFORMED)
        return answer
