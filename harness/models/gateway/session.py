"""What a rollout registers with the gateway, and what the gateway keeps of each call it served.

The handler is the rollout's side of the contract: it gets the conversation in OpenAI chat form (the
form litellm and `Model.query` take, whatever wire format the agent CLI spoke) and answers with a
`ModelReply`. It is where a rollout enforces its limits: raising `Refused` turns into an HTTP error in
the agent's own wire format, which the agent CLI shows and stops on, instead of a model call.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.models.records import CallRecord, ModelReply

if TYPE_CHECKING:
    from harness.models.model import Model

# messages, tools (both OpenAI chat form; tools None when the agent offered none), params (what the
# agent asked for: model, stop, max_tokens, temperature, tool_choice, ...; informational).
Handler = Callable[[list[dict[str, Any]], "list[dict[str, Any]] | None", dict[str, Any]], ModelReply]


class Refused(Exception):
    """The handler declines the call (a step or cost limit reached, a request it will not serve). The
    agent gets HTTP `status` with `message` in its wire format's error body; `kind` is the error type
    written there (Anthropic's and OpenAI's names: invalid_request_error, permission_error, ...)."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.message, self.status, self.kind = message, status, kind


@dataclass
class CallUsage:
    """Tokens and cost of one served call, as the model layer counted them (its `CallRecord`)."""
    input_tokens: int  # cached ones included
    output_tokens: int  # reasoning ones included
    cached_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # None: the model has no known price

    @classmethod
    def of(cls, record: CallRecord) -> CallUsage:
        return cls(input_tokens=record.input_tokens, output_tokens=record.output_tokens,
                   cached_read_tokens=record.cached_read_tokens, cache_write_tokens=record.cache_write_tokens,
                   cost_usd=record.cost_usd)


@dataclass
class GatewayCall:
    """One request on a model-call endpoint, as the gateway served it.

    `gateway_s` runs from the moment the request's headers were read to the moment the answer,
    encoded, is handed to the socket (the call is logged then, so a client holding its answer finds it
    in the log; the write itself, microseconds on loopback, is left out). `handler_s` is the part spent
    inside the handler (0 when it was not called). Their difference is the gateway's own cost:
    reading, translating, encoding."""
    wire: str  # openai_chat, anthropic_messages or openai_responses
    path: str
    # The bodies: kept only by a gateway made with keep_bodies=True, and then for served calls only (a
    # refused request is its size and digest): the log must not grow with what an agent sends.
    request: Any  # the body as received, parsed JSON (None when it was not JSON, or not kept)
    messages: list[dict[str, Any]] | None  # what the handler got (None: it was not called, or not kept)
    tools: list[dict[str, Any]] | None
    reply: dict[str, Any] | None  # the wire reply (for a stream, the complete object the stream carried)
    status: int
    request_bytes: int = 0  # the body's size as received (after decompression)
    request_sha256: str = ""  # a refused request's digest (what is kept of it)
    stream: bool = False
    usage: CallUsage | None = None
    gateway_s: float = 0.0
    handler_s: float = 0.0
    error: str | None = None  # the message of an error answer

    @property
    def overhead_s(self) -> float:
        return max(0.0, self.gateway_s - self.handler_s)


@dataclass
class Session:
    """A registered rollout: its token, its handler and the log of its calls.

    `max_refusals`: refused model calls (answers 400-499: the agent's requests) the session takes; the next one
    closes it (every later request gets 401 saying why) and `on_close` is told why, once: an agent that
    only sends what is refused is stopped rather than served forever. `remote_media`: whether messages
    may name images or files by a remote URL (which litellm fetches from the runner's host for some
    providers: a way out of a sandbox with no network); off, such a call is refused."""
    token: str
    handler: Handler
    model: str  # the name /v1/models reports
    max_refusals: int = 32
    remote_media: bool = False
    on_close: Callable[[str], None] | None = None
    calls: list[GatewayCall] = field(default_factory=list)
    refusals: int = 0
    closed: str | None = None  # why the session was closed, once it was
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, call: GatewayCall) -> None:
        closed = None
        with self.lock:
            self.calls.append(call)
            if 400 <= call.status < 500:  # the agent's doing (a 5xx is ours or the model's)
                self.refusals += 1
                if self.refusals > self.max_refusals and self.closed is None:
                    closed = self.closed = (f"the gateway closed this token after {self.refusals} refused "
                                            f"requests (the last: {call.status} {call.error})")
        if closed is not None and self.on_close is not None:
            self.on_close(closed)

    def log(self) -> list[GatewayCall]:
        with self.lock:
            return list(self.calls)


def model_handler(model: Model) -> Handler:
    """The plain handler: every call goes to `model.query`, with the stop sequences the agent asked
    for. A rollout wraps it to enforce its limits (raise `Refused` before calling it)."""

    def handle(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               params: dict[str, Any]) -> ModelReply:
        return model.query(messages, tools=tools, stop=params.get("stop") or None)

    return handle
