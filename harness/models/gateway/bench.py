"""The gateway's own cost per call: `overhead_ms(gateway, n)`.

A trivial handler answers at once with a fixed tool call, so what is measured is the gateway alone:
reading the request, translating it, writing the reply (or the stream). Each call's overhead is the
time the gateway logged for it minus the handler's time (`GatewayCall.overhead_s`), measured inside the
gateway; the client's own time and the loopback round trip are not in it. The requests carry an agent
conversation of `turns` tool-call round trips, so that translation work is realistic.
"""
from __future__ import annotations

import http.client
import json
import statistics
import time
from typing import Any

from harness.models.gateway.server import Gateway
from harness.models.records import CallRecord, ModelReply, ToolCall

PATHS = {"openai_chat": "/v1/chat/completions", "anthropic_messages": "/v1/messages",
         "openai_responses": "/v1/responses"}
_OUTPUT = "total 8\n-rw-r--r-- 1 root root 120 setup.py\n" * 8  # a typical command output, ~450 chars
_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}


def trivial_reply() -> ModelReply:
    call = ToolCall(id="call_bench", name="bash", arguments=json.dumps({"command": "ls -la"}))
    record = CallRecord(started_at=time.time(), latency_s=0.0, input_tokens=1000, cached_read_tokens=0,
                        cache_write_tokens=0, output_tokens=20, reasoning_tokens=0, cost_usd=0.0,
                        finish_reason="tool_calls", attempts=1)
    message = {"role": "assistant", "content": "Listing.", "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]}
    return ModelReply(content="Listing.", tool_calls=[call], record=record, message=message)


def request_body(wire: str, turns: int = 20, stream: bool = False) -> dict[str, Any]:
    """An agent's request after `turns` tool calls, in `wire`'s format."""
    arguments = {"command": "ls -la"}
    if wire == "openai_chat":
        messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."},
                                          {"role": "user", "content": "Optimize the code."}]
        for i in range(turns):
            call = {"id": f"call_{i}", "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps(arguments)}}
            messages.append({"role": "assistant", "content": "Listing.", "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": _OUTPUT})
        return {"model": "bench", "messages": messages, "stream": stream,
                "tools": [{"type": "function", "function": {"name": "bash", "parameters": _SCHEMA}}]}
    if wire == "anthropic_messages":
        turns_: list[dict[str, Any]] = [{"role": "user", "content": "Optimize the code."}]
        for i in range(turns):
            turns_.append({"role": "assistant", "content": [{"type": "text", "text": "Listing."}, {
                "type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": arguments}]})
            turns_.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                        "content": _OUTPUT}]})
        return {"model": "bench", "max_tokens": 1024, "system": "You are an agent.", "messages": turns_,
                "stream": stream, "tools": [{"name": "bash", "input_schema": _SCHEMA}]}
    items: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": "Optimize the code."}]}]
    for i in range(turns):
        items.append({"type": "function_call", "call_id": f"call_{i}", "name": "bash",
                      "arguments": json.dumps(arguments)})
        items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": _OUTPUT})
    return {"model": "bench", "instructions": "You are an agent.", "input": items, "stream": stream,
            "tools": [{"type": "function", "name": "bash", "parameters": _SCHEMA}]}


def overhead_ms(gateway: Gateway, n: int = 200, wire: str = "openai_chat", stream: bool = False,
                turns: int = 20) -> float:
    """The median of (gateway time - handler time) over `n` calls, in milliseconds. Serves on a
    loopback port when the gateway serves none; the calls share one kept-alive connection."""
    inet = [a for a in gateway.addresses if isinstance(a, tuple)]
    host, port = inet[0][:2] if inet else gateway.listen()
    token = gateway.open(lambda _messages, _tools, _params: trivial_reply())
    data = json.dumps(request_body(wire, turns, stream)).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        for _ in range(n):
            connection.request("POST", PATHS[wire], body=data, headers=headers)
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"the gateway answered {response.status} to the benchmark's request")
    finally:
        connection.close()
        calls = gateway.close(token)
    return statistics.median(c.overhead_s for c in calls) * 1000.0
