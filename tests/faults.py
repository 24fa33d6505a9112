"""A fault-injecting policy for the loopback OpenAI server (`tests.openai_server`): a mini_swe agent that
runs a few commands and submits, with a seeded share of its requests answered badly.

Fault kinds, drawn uniformly once a request is chosen to fail:
- `rate_limit`: 429 with `Retry-After`;
- `server_error`: 500 or 503;
- `reset`: the connection is closed without an answer;
- `slow`: a completion sent only after the client's call timeout (the client must have given up: the
  server then drops it and does not count its tokens);
- `malformed`: 200 with a body that is not JSON.

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
MALFORMED = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "message": {'


def mini_swe_reply(received: Received, turns: int, prompt: int, completion_tokens: int) -> Reply:
    """mini_swe's text protocol: `turns` commands, then the submission sentinel. The turn is read from the
    conversation sent, so a retried request gets the same answer."""
    body = received.body if isinstance(received.body, dict) else {}
    done = sum(m.get("role") == "assistant" for m in body.get("messages", []))
    command = f"echo turn {done}" if done < turns else SENTINEL
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
    injected: Counter[str] = field(default_factory=Counter)
    requests: int = 0

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
        answer = mini_swe_reply(received, self.turns, prompt, completion_tokens)
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
