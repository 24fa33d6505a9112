"""OpenAI chat completions (`POST /v1/chat/completions`): mini-swe-agent, terminus-2 and every client
built on litellm or the OpenAI SDK.

Requests are already in the handler's form (OpenAI chat is what litellm takes), so they pass through
unchanged; only the reply is written, and, with `"stream": true`, cut into `chat.completion.chunk`s.
"""
from __future__ import annotations

from typing import Any

from harness.models.gateway.session import Refused
from harness.models.gateway.wire import (LocalEndpoint, Wire, WireRequest, finish_reason, new_id, now, pick,
                                         require_list, require_object, sse, stop_list)
from harness.models.records import ModelReply

PARAMS = ("model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "tool_choice",
          "response_format", "reasoning_effort", "parallel_tool_calls", "seed")


def chat_usage(reply: ModelReply) -> dict[str, Any]:
    record = reply.record
    return {"prompt_tokens": record.input_tokens, "completion_tokens": record.output_tokens,
            "total_tokens": record.input_tokens + record.output_tokens,
            "prompt_tokens_details": {"cached_tokens": record.cached_read_tokens},
            "completion_tokens_details": {"reasoning_tokens": record.reasoning_tokens}}


def models_list(_body: Any, model: str) -> dict[str, Any]:
    """Some clients list the models before their first call; the rollout's one model is the answer."""
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "optrunner"}]}


class OpenAIChat(Wire):
    name = "openai_chat"
    paths = ("/v1/chat/completions", "/chat/completions")

    def local(self) -> dict[tuple[str, str], LocalEndpoint]:
        return {("GET", "/v1/models"): models_list, ("GET", "/models"): models_list}

    def parse(self, body: Any) -> WireRequest:
        body = require_object(body)
        messages = require_list(body, "messages") or []
        if not messages or not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise Refused("`messages` must be a non-empty list of objects with a `role`")
        tools = require_list(body, "tools", optional=True) or None
        if int(body.get("n") or 1) != 1:
            raise Refused("only one choice per request is served (`n` must be 1)")
        params = pick(body, *PARAMS)
        stop = stop_list(body.get("stop"))
        if stop:
            params["stop"] = stop
        stream = bool(body.get("stream"))
        options = body.get("stream_options") if isinstance(body.get("stream_options"), dict) else {}
        return WireRequest(messages=messages, tools=tools, params=params, stream=stream,
                           model=str(body.get("model") or ""),
                           extra={"usage_chunk": bool(options.get("include_usage"))})

    def reply(self, request: WireRequest, reply: ModelReply) -> dict[str, Any]:
        # OpenAI's convention: no text next to tool calls is `null`, a turn without either is "".
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or (None if reply.tool_calls else "")}
        if reply.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in reply.tool_calls]
        if reply.message.get("reasoning_content"):  # DeepSeek-style clients send it back on the next turn
            message["reasoning_content"] = reply.message["reasoning_content"]
        return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": now(),
                "model": request.model or "optrunner",
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": finish_reason(reply)}],
                "usage": chat_usage(reply)}

    def events(self, request: WireRequest, body: dict[str, Any]) -> list[bytes]:
        base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"],
                "model": body["model"]}
        choice = body["choices"][0]
        message = choice["message"]

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return sse({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

        out = [chunk({"role": "assistant", "content": ""})]
        if message.get("reasoning_content"):
            out.append(chunk({"reasoning_content": message["reasoning_content"]}))
        if message.get("content"):
            out.append(chunk({"content": message["content"]}))
        # Each tool call as OpenAI streams it: id and name first, then the arguments, under its index.
        for i, call in enumerate(message.get("tool_calls") or []):
            out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                              "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}))
        out.append(chunk({}, choice["finish_reason"]))
        if request.extra.get("usage_chunk"):
            out.append(sse({**base, "choices": [], "usage": body["usage"]}))
        out.append(sse("[DONE]"))
        return out
