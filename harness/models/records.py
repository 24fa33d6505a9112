"""The model layer's records: prices, one call's record, usage sums, tool calls and replies.

Plain dataclasses with no heavy imports: the runner's config schema (`Price`) and its stored records
(`Usage`) use them without loading litellm.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class Price:
    """USD per million tokens, for models litellm has no price for (local servers)."""
    input: float
    output: float
    cache_read: float | None = None  # default: the input price
    cache_write: float | None = None  # default: the input price


@dataclass
class CallRecord:
    started_at: float
    latency_s: float
    input_tokens: int  # all prompt tokens, cached ones included
    cached_read_tokens: int
    cache_write_tokens: int
    output_tokens: int  # reasoning tokens included
    reasoning_tokens: int
    cost_usd: float | None  # None: the model has no known price
    finish_reason: str | None
    attempts: int  # requests sent for this call, rate-limited ones included
    # Added later, so they default (old trajectories load): how many answers were 429, and the seconds
    # the shared rate limiter held this call back (Retry-After pauses, waiting for a slot in flight).
    # latency_s includes this wait.
    rate_limited: int = 0
    rate_limit_wait_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Usage:
    """Sum of call records. `cost_known` is False as soon as one call had no price."""
    calls: int = 0
    input_tokens: int = 0
    cached_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True

    def add(self, record: CallRecord) -> None:
        self.calls += 1
        self.input_tokens += record.input_tokens
        self.cached_read_tokens += record.cached_read_tokens
        self.cache_write_tokens += record.cache_write_tokens
        self.output_tokens += record.output_tokens
        self.reasoning_tokens += record.reasoning_tokens
        if record.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += record.cost_usd

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def total(cls, usages: list["Usage"]) -> "Usage":
        """The sum of several usages (a rollout's attempts); unknown cost as soon as one was unknown."""
        out = cls()
        for usage in usages:
            for f in fields(cls):
                if f.name == "cost_known":
                    out.cost_known = out.cost_known and usage.cost_known
                else:
                    setattr(out, f.name, getattr(out, f.name) + getattr(usage, f.name))
        return out


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it; scaffolds parse and report errors themselves


@dataclass
class ModelReply:
    content: str
    tool_calls: list[ToolCall]
    record: CallRecord
    message: dict[str, Any]  # the assistant message, ready to append to the conversation


def tool_result(call: ToolCall, text: str) -> dict[str, Any]:
    """The message that answers one native tool call."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text}


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """Arguments of a tool call as a dict; ValueError with a readable reason when they are not."""
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments of {call.name} are not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"the arguments of {call.name} must be a JSON object")
    return value
