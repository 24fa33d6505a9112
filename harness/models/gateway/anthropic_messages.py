"""Anthropic messages (`POST /v1/messages`): Claude Code and other Anthropic SDK clients.

Requests are translated by litellm's own Anthropic adapter (`LiteLLMAnthropicMessagesAdapter`, the one
litellm's proxy uses for `/v1/messages`): system blocks, text / image / tool_use / tool_result /
thinking blocks, tools with `input_schema`, `tool_choice`, `stop_sequences`, and tool names over
OpenAI's 64 characters (shortened for the model, restored in the reply). It is given a neutral
OpenAI-style model name rather than the one the client asked for: with a Claude name it keeps the
client's `cache_control` marks, and the model layer sets its own cache breakpoints (Anthropic allows
four per request, so the client's and ours together could overflow), so the client's are dropped.

The reply is written here from the `ModelReply` and its `CallRecord` rather than through the adapter's
`translate_openai_response_to_anthropic`, which wants a litellm `ModelResponse` we no longer have:
rebuilding one only to unpack it again would be longer than the few lines below.
"""
from __future__ import annotations

import json
import threading
from typing import Any

from harness.models.gateway.session import Refused
from harness.models.gateway.wire import (LocalEndpoint, Wire, WireRequest, finish_reason, new_id, pick, plain,
                                         require_list, require_object, sse)
from harness.models.loader import litellm_module
from harness.models.records import ModelReply

# The name the adapter translates for: a plain OpenAI-compatible model (see the module's docstring).
TRANSLATION_MODEL = "openai/optrunner-gateway"
STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}
_adapter: Any = None
_adapter_lock = threading.Lock()


def adapter() -> Any:
    global _adapter
    with _adapter_lock:
        if _adapter is None:
            litellm_module()  # quiet and configured before the adapter's module imports litellm
            from litellm.llms.anthropic.messages.adapters.transformation import LiteLLMAnthropicMessagesAdapter
            _adapter = LiteLLMAnthropicMessagesAdapter()
        return _adapter


def translate(body: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The OpenAI chat request of an Anthropic one, and the shortened tool names -> the client's."""
    body = require_object(body)
    require_list(body, "messages")
    # A shallow copy: the adapter pops litellm's own top-level keys from what it is given, and builds
    # new messages rather than editing the client's (a deep copy cost more than the translation).
    request = {**body, "model": TRANSLATION_MODEL}
    try:
        out, names = adapter().translate_anthropic_to_openai(request)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise Refused(f"the request is not a valid Anthropic messages request: {exc}") from None
    return plain(out), dict(names or {})


def count_tokens(body: Any, _model: str) -> dict[str, Any]:
    """`/v1/messages/count_tokens`: litellm's estimate of the translated prompt; no model call."""
    out, _names = translate(body)
    tokens = litellm_module().token_counter(messages=out["messages"], tools=out.get("tools") or None)
    return {"input_tokens": int(tokens)}


def anthropic_usage(reply: ModelReply) -> dict[str, int]:
    """Anthropic counts cached prompt tokens apart: its `input_tokens` are the uncached rest, while the
    `CallRecord`'s include them (so input + cache_read + cache_creation = the record's input)."""
    record = reply.record
    uncached = record.input_tokens - record.cached_read_tokens - record.cache_write_tokens
    return {"input_tokens": max(0, uncached), "output_tokens": record.output_tokens,
            "cache_read_input_tokens": record.cached_read_tokens,
            "cache_creation_input_tokens": record.cache_write_tokens}


def _tool_input(arguments: str) -> dict[str, Any]:
    """A tool_use block's input must be an object; arguments the model broke are handed over whole
    under `arguments`, so the agent's schema check tells the model what went wrong."""
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


class AnthropicMessages(Wire):
    name = "anthropic_messages"
    paths = ("/v1/messages", "/messages")

    def local(self) -> dict[tuple[str, str], LocalEndpoint]:
        return {("POST", "/v1/messages/count_tokens"): count_tokens, ("POST", "/messages/count_tokens"): count_tokens}

    def parse(self, body: Any) -> WireRequest:
        out, names = translate(body)
        params = pick(out, "max_tokens", "temperature", "top_p", "tool_choice", "response_format")
        params.update(pick(body, "model", "thinking", "top_k"))
        if out.get("stop"):
            params["stop"] = list(out["stop"])
        return WireRequest(messages=out["messages"], tools=out.get("tools") or None, params=params,
                           stream=bool(body.get("stream")), model=str(body.get("model") or ""),
                           extra={"names": names})

    def reply(self, request: WireRequest, reply: ModelReply) -> dict[str, Any]:
        names: dict[str, str] = request.extra.get("names") or {}
        content: list[dict[str, Any]] = []
        # Extended thinking goes back to the client, which must send it back with the next turn's
        # tool results (Claude refuses a tool-use turn whose signed thinking is missing).
        for block in reply.message.get("thinking_blocks") or []:
            if isinstance(block, dict) and block.get("type") == "thinking":
                content.append({"type": "thinking", "thinking": block.get("thinking") or "",
                                "signature": block.get("signature") or ""})
            elif isinstance(block, dict) and block.get("type") == "redacted_thinking":
                content.append({"type": "redacted_thinking", "data": block.get("data") or ""})
        if reply.content:
            content.append({"type": "text", "text": reply.content})
        for call in reply.tool_calls:
            content.append({"type": "tool_use", "id": call.id, "name": names.get(call.name, call.name),
                            "input": _tool_input(call.arguments)})
        return {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": request.model or "optrunner",
                "content": content, "stop_reason": STOP_REASONS.get(finish_reason(reply), "end_turn"),
                "stop_sequence": None, "usage": anthropic_usage(reply)}

    def events(self, request: WireRequest, body: dict[str, Any]) -> list[bytes]:
        def event(data: dict[str, Any]) -> bytes:
            return sse(data, data["type"])

        start = {**body, "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": {**body["usage"], "output_tokens": 0}}
        out = [event({"type": "message_start", "message": start})]
        for i, block in enumerate(body["content"]):
            kind = block["type"]
            deltas: list[dict[str, Any]] = []
            if kind == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                deltas.append({"type": "text_delta", "text": block["text"]})
            elif kind == "tool_use":
                opening = {**block, "input": {}}
                deltas.append({"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
            elif kind == "thinking":
                opening = {"type": "thinking", "thinking": "", "signature": ""}
                deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            else:  # redacted thinking arrives whole
                opening = block
            out.append(event({"type": "content_block_start", "index": i, "content_block": opening}))
            out += [event({"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
            out.append(event({"type": "content_block_stop", "index": i}))
        out.append(event({"type": "message_delta", "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                          "usage": body["usage"]}))
        out.append(event({"type": "message_stop"}))
        return out

    def error(self, status: int, kind: str, message: str, code: str | None = None) -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}
