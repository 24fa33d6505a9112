"""The model gateway (harness/models/gateway) over real loopback HTTP: real clients (the OpenAI SDK for
chat completions and Responses; litellm's Anthropic provider and plain http.client for Anthropic
messages, whose SDK is not installed), real model calls (`Model.query` on the scripted provider), the
wire formats both ways, the per-token call log, errors, concurrency and shutdown."""
from __future__ import annotations

import gzip
import http.client
import json
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from harness.models import scripted
from harness.models.config import ModelConfig
from harness.models.gateway import CallUsage, Gateway, Refused, model_handler
from harness.models.gateway.bench import overhead_ms, trivial_reply
from harness.models.gateway.server import MAX_BODY_BYTES
from harness.models.loader import litellm_module
from harness.models.model import Model
from harness.models.records import ModelReply, ToolCall

SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a command.", "parameters": SCHEMA}}]
ANTHROPIC_TOOLS = [{"name": "bash", "description": "Run a command.", "input_schema": SCHEMA}]
RESPONSES_TOOLS = [{"type": "function", "name": "bash", "description": "Run a command.", "parameters": SCHEMA}]
LS = json.dumps({"command": "ls"})


def call_step(command: str = "ls", text: str = "Listing.") -> dict[str, Any]:
    return {"raw": {"content": text, "tool_calls": [{"name": "bash", "arguments": json.dumps({"command": command})}]}}


def text_step(text: str) -> dict[str, Any]:
    return {"raw": {"content": text, "tool_calls": []}}


class Recorder:
    """A handler that calls a scripted `Model` (the real model layer) and keeps what it got and gave."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.model = Model(ModelConfig(name="scripted/script"), script=scripted.Script(steps=steps))
        self.inner = model_handler(self.model)
        self.seen: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]] = []
        self.replies: list[ModelReply] = []

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 params: dict[str, Any]) -> ModelReply:
        self.seen.append((messages, tools, params))
        reply = self.inner(messages, tools, params)
        self.replies.append(reply)
        return reply


@pytest.fixture
def gw() -> Iterator[tuple[Gateway, str]]:
    gateway = Gateway(keep_bodies=True)  # these tests read what each call carried
    host, port = gateway.listen()
    try:
        yield gateway, f"http://{host}:{port}"
    finally:
        gateway.shutdown()


def sdk(url: str, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, timeout=30)


def post(url: str, path: str, body: Any, headers: dict[str, str] | None = None,
         raw: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        data = raw if raw is not None else json.dumps(body).encode()
        connection.request("POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def events(data: bytes) -> list[tuple[str | None, Any]]:
    """Server-sent events as (event name, parsed data)."""
    out = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((fields.get("event"), fields["data"] if fields["data"] == "[DONE]" else json.loads(fields["data"])))
    return out


def assert_logged(call: Any, wire: str, sent: dict[str, Any], reply: ModelReply, stream: bool = False) -> None:
    assert (call.wire, call.status, call.stream, call.error) == (wire, 200, stream, None)
    assert call.request == sent
    assert call.usage == CallUsage.of(reply.record)
    assert call.gateway_s >= call.handler_s > 0


# ---------------------------------------------------------------- OpenAI chat completions
def test_chat_completions_through_the_sdk_text_tool_calls_and_tool_results(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([call_step("ls"), text_step("All done.")])
    token = gateway.open(handler)
    client = sdk(url, token)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}]
    first = client.chat.completions.create(model="agent-model", messages=messages, tools=CHAT_TOOLS, stop=["STOP"])
    call = first.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("bash", {"command": "ls"})
    assert first.choices[0].finish_reason == "tool_calls" and first.model == "agent-model"
    record = handler.replies[0].record
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (record.input_tokens, record.output_tokens)
    assert handler.seen[0] == (messages, CHAT_TOOLS, {"model": "agent-model", "stop": ["STOP"]})

    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "setup.py"}]
    second = client.chat.completions.create(model="agent-model", messages=messages, tools=CHAT_TOOLS)
    assert (second.choices[0].message.content, second.choices[0].finish_reason) == ("All done.", "stop")
    assert handler.seen[1][0][-1] == {"role": "tool", "tool_call_id": call.id, "content": "setup.py"}
    assert handler.seen[1][0][-2]["tool_calls"][0]["id"] == call.id

    log = gateway.calls(token)
    assert [c.path for c in log] == ["/v1/chat/completions"] * 2
    assert log[1].messages == messages and log[1].tools == CHAT_TOOLS
    for logged, reply in zip(log, handler.replies):
        assert logged.request["messages"] == logged.messages
        assert_logged(logged, "openai_chat", logged.request, reply)
    assert log[0].reply["usage"]["total_tokens"] == record.input_tokens + record.output_tokens


def test_chat_completions_stream_carries_the_whole_reply_and_usage(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([call_step("make"), call_step("ls", text="")])
    token = gateway.open(handler)
    client = sdk(url, token)
    messages = [{"role": "user", "content": "Build it."}]
    chunks = list(client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS, stream=True,
                                                 stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    assert text == "Listing." and deltas[0].id and deltas[0].function.name == "bash"
    assert "".join(d.function.arguments or "" for d in deltas) == json.dumps({"command": "make"})
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    record = handler.replies[0].record
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == record.input_tokens
    assert chunks[-1].usage.completion_tokens == record.output_tokens

    # The SDK's own stream accumulator rebuilds the same completion.
    with client.chat.completions.stream(model="m", messages=messages, tools=CHAT_TOOLS) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.tool_calls[0].function.arguments == LS
    assert [c.stream for c in gateway.calls(token)] == [True, True]
    assert_logged(gateway.calls(token)[0], "openai_chat", gateway.calls(token)[0].request, handler.replies[0], True)


def test_models_list_names_the_sessions_model(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    token = gateway.open(lambda *_: trivial_reply(), model="claude-test")
    assert [m.id for m in sdk(url, token).models.list()] == ["claude-test"]
    assert gateway.calls(token) == []


# ---------------------------------------------------------------- Anthropic messages
def test_anthropic_messages_tool_use_then_tool_result_over_plain_http(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([call_step("ls"), text_step("Done.")])
    token = gateway.open(handler)
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    body: dict[str, Any] = {
        "model": "claude-x", "max_tokens": 512, "system": [{"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Go."}, image]}],
        "tools": ANTHROPIC_TOOLS, "tool_choice": {"type": "auto"}, "stop_sequences": ["STOP"]}
    status, _headers, data = post(url, "/v1/messages", body, headers)
    first = json.loads(data)
    assert status == 200 and first["type"] == "message" and first["stop_reason"] == "tool_use"
    assert [b["type"] for b in first["content"]] == ["text", "tool_use"]
    use = first["content"][1]
    assert (use["name"], use["input"]) == ("bash", {"command": "ls"})
    record = handler.replies[0].record
    usage = first["usage"]
    assert usage["output_tokens"] == record.output_tokens
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"] \
        == record.input_tokens
    got_messages, got_tools, params = handler.seen[0]
    assert got_messages[0] == {"role": "system", "content": [{"type": "text", "text": "Be brief."}]}
    assert got_messages[1]["content"][1]["image_url"]["url"] == "data:image/png;base64,iVBORw0KGgo="
    assert got_tools == [{"type": "function", "function": {"name": "bash", "parameters": SCHEMA,
                                                           "description": "Run a command."}}]
    assert params["stop"] == ["STOP"] and params["tool_choice"] == "auto" and params["model"] == "claude-x"

    body["messages"] += [{"role": "assistant", "content": first["content"]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"],
                                                       "content": [{"type": "text", "text": "setup.py"}]}]}]
    status, _headers, data = post(url, "/v1/messages", body, {"Authorization": f"Bearer {token}"})
    second = json.loads(data)
    assert status == 200 and second["content"] == [{"type": "text", "text": "Done."}]
    assert second["stop_reason"] == "end_turn"
    assert handler.seen[1][0][-1] == {"role": "tool", "tool_call_id": use["id"], "content": "setup.py"}
    assert handler.seen[1][0][-2]["tool_calls"][0]["function"] == {"name": "bash", "arguments": LS}
    log = gateway.calls(token)
    assert [c.wire for c in log] == ["anthropic_messages"] * 2 and log[1].request == body
    assert log[1].messages == handler.seen[1][0] and log[1].reply == second
    assert_logged(log[1], "anthropic_messages", body, handler.replies[1])


def test_anthropic_stream_events_rebuild_the_message(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([call_step("ls")])
    token = gateway.open(handler)
    body = {"model": "claude-x", "max_tokens": 512, "stream": True, "tools": ANTHROPIC_TOOLS,
            "messages": [{"role": "user", "content": "Go."}]}
    status, headers, data = post(url, "/v1/messages", body, {"x-api-key": token})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    stream = events(data)
    assert all(name == payload["type"] for name, payload in stream)
    assert [name for name, _ in stream] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert stream[2][1]["delta"] == {"type": "text_delta", "text": "Listing."}
    assert stream[4][1]["content_block"]["name"] == "bash"
    assert json.loads(stream[5][1]["delta"]["partial_json"]) == {"command": "ls"}
    record = handler.replies[0].record
    assert stream[0][1]["message"]["usage"]["input_tokens"] == record.input_tokens
    assert stream[7][1]["delta"]["stop_reason"] == "tool_use"
    assert stream[7][1]["usage"]["output_tokens"] == record.output_tokens
    assert gateway.calls(token)[0].stream


def test_anthropic_long_tool_names_and_signed_thinking_go_back_to_the_client(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    long_name = "mcp__files__" + "read_" * 14  # over OpenAI's 64 characters: shortened for the model

    def handler(_messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                _params: dict[str, Any]) -> ModelReply:
        name = (tools or [])[0]["function"]["name"]
        assert len(name) <= 64 and name != long_name
        reply = trivial_reply()
        reply.tool_calls = [ToolCall(id="toolu_1", name=name, arguments='{"path": "a.py"}')]
        reply.message["thinking_blocks"] = [{"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"}]
        return reply

    token = gateway.open(handler)
    body: dict[str, Any] = {"model": "claude-x", "max_tokens": 512, "messages": [{"role": "user", "content": "Go."}],
                            "tools": [{"name": long_name, "input_schema": {"type": "object"}}]}
    content = json.loads(post(url, "/v1/messages", body, {"x-api-key": token})[2])["content"]
    assert content[0] == {"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"}
    assert (content[2]["name"], content[2]["input"]) == (long_name, {"path": "a.py"})
    stream = events(post(url, "/v1/messages", {**body, "stream": True}, {"x-api-key": token})[2])
    deltas = [p["delta"] for name, p in stream if name == "content_block_delta"]
    assert {"type": "signature_delta", "signature": "c2ln"} in deltas
    assert [p["content_block"].get("name") for name, p in stream if name == "content_block_start"][-1] == long_name


@pytest.mark.parametrize("stream", [False, True])
def test_litellm_anthropic_client_reads_the_gateway(gw: tuple[Gateway, str], stream: bool) -> None:
    # litellm's own Anthropic provider is a second, independent parser of our messages and events.
    gateway, url = gw
    handler = Recorder([call_step("ls", text="Hello.")])
    token = gateway.open(handler)
    answer = litellm_module().completion(model="anthropic/claude-sonnet-4-5", api_base=url, api_key=token,
                                         messages=[{"role": "user", "content": "Go."}], tools=CHAT_TOOLS,
                                         max_tokens=100, stream=stream, num_retries=0)
    if stream:
        chunks = list(answer)
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        arguments = "".join(t.function.arguments or "" for c in chunks for t in c.choices[0].delta.tool_calls or [])
        finish = [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason][-1]
    else:
        message = answer.choices[0].message
        text, arguments = message.content, message.tool_calls[0].function.arguments
        finish = answer.choices[0].finish_reason
        assert answer.usage.completion_tokens == handler.replies[0].record.output_tokens
    assert (text, json.loads(arguments), finish) == ("Hello.", {"command": "ls"}, "tool_calls")


def test_count_tokens_answers_without_a_model_call(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([text_step("unused")])
    token = gateway.open(handler)
    body = {"model": "claude-x", "messages": [{"role": "user", "content": "How many tokens is this?"}],
            "tools": ANTHROPIC_TOOLS}
    status, _headers, data = post(url, "/v1/messages/count_tokens", body, {"x-api-key": token})
    assert status == 200 and json.loads(data)["input_tokens"] > 5
    assert handler.seen == [] and gateway.calls(token) == []


# ---------------------------------------------------------------- OpenAI Responses
def test_responses_through_the_sdk_function_call_then_output(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([call_step("ls", text=""), text_step("Done.")])
    token = gateway.open(handler)
    client = sdk(url, token)
    items: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": "Go."}]}]
    first = client.responses.create(model="codex-model", instructions="Be brief.", input=items, tools=RESPONSES_TOOLS,
                                    store=False)
    assert first.status == "completed" and [o.type for o in first.output] == ["function_call"]
    call = first.output[0]
    assert (call.name, json.loads(call.arguments)) == ("bash", {"command": "ls"})
    record = handler.replies[0].record
    assert (first.usage.input_tokens, first.usage.output_tokens) == (record.input_tokens, record.output_tokens)
    assert first.usage.total_tokens == record.input_tokens + record.output_tokens
    messages, tools, params = handler.seen[0]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[1] == {"role": "user", "content": [{"type": "text", "text": "Go."}]}
    assert tools[0]["function"]["name"] == "bash" and params["model"] == "codex-model"

    items += [{"type": "function_call", "call_id": call.call_id, "name": "bash", "arguments": call.arguments},
              {"type": "function_call_output", "call_id": call.call_id, "output": "setup.py"}]
    second = client.responses.create(model="codex-model", instructions="Be brief.", input=items, tools=RESPONSES_TOOLS)
    assert second.output_text == "Done."
    assert handler.seen[1][0][-1] == {"role": "tool", "tool_call_id": call.call_id, "content": "setup.py"}
    assert handler.seen[1][0][-2]["tool_calls"] == [{"id": call.call_id, "type": "function",
                                                      "function": {"name": "bash", "arguments": call.arguments}}]
    log = gateway.calls(token)
    assert log[1].request["input"] == items and log[1].messages == handler.seen[1][0]
    assert_logged(log[0], "openai_responses", log[0].request, handler.replies[0])


def test_responses_stream_through_the_sdk_helper(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([call_step("ls", text="Looking."), call_step("ls", text="Looking.")])
    token = gateway.open(handler)
    client = sdk(url, token)
    kinds = [e.type for e in client.responses.create(model="m", input="Go.", tools=RESPONSES_TOOLS, stream=True)]
    for kind in ("response.created", "response.output_item.added", "response.output_text.delta",
                 "response.function_call_arguments.delta", "response.output_item.done"):
        assert kind in kinds
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    with client.responses.stream(model="m", input="Go.", tools=RESPONSES_TOOLS) as stream:
        final = stream.get_final_response()
    assert final.output_text == "Looking." and final.output[1].arguments == LS
    assert final.usage.output_tokens == handler.replies[1].record.output_tokens
    assert handler.seen[1][0] == [{"role": "user", "content": "Go."}]


def test_responses_custom_tool_calls_go_back_as_custom_tool_calls(gw: tuple[Gateway, str]) -> None:
    # Codex's freeform apply_patch tool: litellm's bridge offers it as a function with one `content`.
    gateway, url = gw
    patch = "*** Begin Patch\n*** End Patch"
    handler = Recorder([{"raw": {"content": "", "tool_calls": [
        {"name": "apply_patch", "arguments": json.dumps({"content": patch})}]}}])
    token = gateway.open(handler)
    tools = [{"type": "custom", "name": "apply_patch", "description": "Edit files.",
              "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}, *RESPONSES_TOOLS]
    status, _headers, data = post(url, "/v1/responses", {"model": "m", "input": "Edit.", "tools": tools},
                                  {"Authorization": f"Bearer {token}"})
    assert status == 200
    item = json.loads(data)["output"][0]
    assert (item["type"], item["name"], item["input"]) == ("custom_tool_call", "apply_patch", patch)
    assert handler.seen[0][1][0]["function"]["parameters"]["required"] == ["content"]


def test_responses_refuses_previous_response_id(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([text_step("unused")])
    token = gateway.open(handler)
    with pytest.raises(openai.BadRequestError) as info:
        sdk(url, token).responses.create(model="m", input="Go.", previous_response_id="resp_123")
    assert info.value.status_code == 400 and "previous_response_id" in info.value.body["message"]
    assert handler.seen == [] and gateway.calls(token)[0].status == 400


# ---------------------------------------------------------------- authentication and errors
def test_unknown_missing_and_closed_tokens_get_401_in_the_wire_format(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    token = gateway.open(lambda *_: trivial_reply())
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    anthropic = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    status, _h, data = post(url, "/v1/chat/completions", chat, {"Authorization": "Bearer wrong"})
    assert status == 401 and json.loads(data)["error"]["type"] == "authentication_error"
    status, _h, data = post(url, "/v1/messages", anthropic)
    assert status == 401 and json.loads(data)["type"] == "error"
    assert json.loads(data)["error"]["type"] == "authentication_error"
    with pytest.raises(openai.AuthenticationError):
        sdk(url, "not-a-token").responses.create(model="m", input="hi")
    assert post(url, "/v1/chat/completions", chat, {"Authorization": f"Bearer {token}"})[0] == 200
    assert len(gateway.close(token)) == 1
    assert post(url, "/v1/chat/completions", chat, {"Authorization": f"Bearer {token}"})[0] == 401
    with pytest.raises(KeyError):
        gateway.calls(token)
    assert gateway.open(lambda *_: trivial_reply()) != token


def test_refused_calls_get_their_status_and_an_error_body_in_the_wire_format(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw

    def over_budget(*_: Any) -> ModelReply:
        raise Refused("the rollout's cost limit ($1.00) is reached", 403, "permission_error")

    token = gateway.open(over_budget)
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    anthropic = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    status, _h, data = post(url, "/v1/messages", anthropic, {"x-api-key": token})
    assert status == 403 and json.loads(data) == {"type": "error", "error": {
        "type": "permission_error", "message": "the rollout's cost limit ($1.00) is reached"}}
    with pytest.raises(openai.PermissionDeniedError) as info:
        sdk(url, token).chat.completions.create(**chat)
    assert info.value.body["type"] == "permission_error" and "cost limit" in info.value.body["message"]
    assert [(c.status, c.error is not None, c.handler_s > 0) for c in gateway.calls(token)] == [(403, True, True)] * 2


def test_a_failing_handler_gets_a_500_and_the_gateway_keeps_serving(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    failures = [RuntimeError("database on fire\nTraceback (most recent call last): ...")]

    def flaky(*_: Any) -> ModelReply:
        if failures:
            raise failures.pop()
        return trivial_reply()

    token = gateway.open(flaky)
    client = sdk(url, token)
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(**chat)
    message = info.value.body["message"]
    assert "database on fire" in message and "\n" not in message and "Traceback" not in message
    assert client.chat.completions.create(**chat).choices[0].message.tool_calls[0].function.name == "bash"
    assert [c.status for c in gateway.calls(token)] == [500, 200]


def test_context_overflow_from_the_model_layer_is_a_400(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handler = Recorder([{"error": "context_window"}])
    token = gateway.open(handler)
    with pytest.raises(openai.BadRequestError) as info:
        sdk(url, token).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                tools=CHAT_TOOLS)
    assert info.value.body["code"] == "context_length_exceeded"


def test_bad_bodies_paths_and_methods(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    auth = {"Authorization": f"Bearer {gateway.open(lambda *_: trivial_reply())}"}
    status, _h, data = post(url, "/v1/messages", None, auth, raw=b"{not json")
    assert status == 400 and json.loads(data)["type"] == "error"
    status, _h, data = post(url, "/v1/chat/completions", {"messages": "hi"}, auth)
    assert status == 400 and "messages" in json.loads(data)["error"]["message"]
    assert post(url, "/v1/nowhere", {}, auth)[0] == 404
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", "/v1/chat/completions", headers=auth)
    assert connection.getresponse().status == 405
    connection.close()
    chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    status, _h, _d = post(url, "/v1/chat/completions", None, {**auth, "Content-Encoding": "gzip"}, gzip.compress(chat))
    assert status == 200
    connection = http.client.HTTPConnection(host, int(port), timeout=10)  # a chunked upload
    connection.request("POST", "/v1/chat/completions", body=iter([chat[:10], chat[10:]]), headers=auth)
    response = connection.getresponse()
    assert response.status == 200 and json.loads(response.read())["object"] == "chat.completion"
    connection.close()
    assert MAX_BODY_BYTES == 8 * 1024 * 1024


def test_bodies_over_the_limit_get_413() -> None:
    with Gateway(max_body_bytes=4096) as gateway:
        host, port = gateway.listen()
        url = f"http://{host}:{port}"
        token = gateway.open(lambda *_: trivial_reply())
        big = {"model": "m", "messages": [{"role": "user", "content": "x" * 5000}]}
        status, headers, data = post(url, "/v1/chat/completions", big, {"Authorization": f"Bearer {token}"})
        assert status == 413 and headers["connection"] == "close"
        assert json.loads(data)["error"]["type"] == "request_too_large"
        bomb = gzip.compress(json.dumps(big).encode() * 10)
        assert post(url, "/v1/messages", None, {"x-api-key": token, "Content-Encoding": "gzip"}, bomb)[0] == 413


# ---------------------------------------------------------------- concurrency, sockets, shutdown
def test_concurrent_clients_each_see_only_their_own_calls(gw: tuple[Gateway, str]) -> None:
    gateway, url = gw
    handlers = [Recorder([text_step(f"client {i} turn {t}") for t in range(3)]) for i in range(8)]
    tokens = [gateway.open(h) for h in handlers]
    answers: dict[int, list[str]] = {}

    def run(i: int) -> None:
        client = sdk(url, tokens[i])
        answers[i] = [client.chat.completions.create(model="m", tools=CHAT_TOOLS, messages=[
            {"role": "user", "content": f"client {i} asks {t}"}]).choices[0].message.content for t in range(3)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for i, token in enumerate(tokens):
        assert answers[i] == [f"client {i} turn {t}" for t in range(3)]
        log = gateway.calls(token)
        assert [c.messages[0]["content"] for c in log] == [f"client {i} asks {t}" for t in range(3)]
        assert [c.usage for c in log] == [CallUsage.of(r.record) for r in handlers[i].replies]


def test_serves_sockets_it_is_given_tcp_and_unix() -> None:
    with Gateway() as gateway, tempfile.TemporaryDirectory() as folder:
        tcp = socket.create_server(("127.0.0.1", 0))
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(str(Path(folder) / "gateway.sock"))
        unix.listen()
        gateway.serve(tcp)
        gateway.serve(unix)
        token = gateway.open(lambda *_: trivial_reply(), model="given")
        assert [m.id for m in sdk(f"http://127.0.0.1:{tcp.getsockname()[1]}", token).models.list()] == ["given"]
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(Path(folder) / "gateway.sock"))
        client.sendall(f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                       "Connection: close\r\n\r\n".encode())
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
        client.close()
        assert answer.startswith(b"HTTP/1.1 200") and b'"given"' in answer


def test_a_socket_served_for_one_session_answers_that_token_only() -> None:
    """A rollout's port inside its sandbox answers that rollout: another rollout's token, even a valid
    one, gets 401 there (and is still answered on its own socket)."""
    with Gateway() as gateway:
        mine_token = gateway.open(lambda *_: trivial_reply(), model="mine")
        other_token = gateway.open(lambda *_: trivial_reply(), model="other")
        mine = socket.create_server(("127.0.0.1", 0))
        shared = socket.create_server(("127.0.0.1", 0))
        gateway.serve(mine, mine_token)
        gateway.serve(shared)
        url, shared_url = (f"http://127.0.0.1:{s.getsockname()[1]}" for s in (mine, shared))
        assert [m.id for m in sdk(url, mine_token).models.list()] == ["mine"]
        with pytest.raises(openai.AuthenticationError):
            sdk(url, other_token).models.list()
        status, _, _ = post(url, "/v1/chat/completions", {"model": "m", "messages": []},
                            headers={"Authorization": f"Bearer {other_token}\u00e9"})
        assert status == 401  # (a token that is not ASCII: refused, not a crash)
        assert [m.id for m in sdk(shared_url, other_token).models.list()] == ["other"]


def test_shutdown_ends_every_thread_and_closes_the_port() -> None:
    before = set(threading.enumerate())
    gateway = Gateway()
    host, port = gateway.listen()
    token = gateway.open(lambda *_: trivial_reply())
    client = sdk(f"http://{host}:{port}", token)  # keeps its connection open after the call
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert any(t.name.startswith("gateway-") for t in threading.enumerate())
    gateway.shutdown()
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("gateway-")]
    with pytest.raises(OSError):
        socket.create_connection((host, port), timeout=2).close()
    gateway.shutdown()  # idempotent
    with pytest.raises(RuntimeError):
        gateway.listen()
    client.close()


def test_unserve_stops_one_socket_and_its_connections_only() -> None:
    with Gateway() as gateway:
        kept_host, kept_port = gateway.listen()
        sock = socket.create_server(("127.0.0.1", 0))
        gateway.serve(sock)
        token = gateway.open(lambda *_: trivial_reply())
        port = sock.getsockname()[1]
        client = sdk(f"http://127.0.0.1:{port}", token)  # keeps its connection open after the call
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        threads = sum(t.name.startswith("gateway-") for t in threading.enumerate())
        gateway.unserve(sock)
        assert sum(t.name.startswith("gateway-") for t in threading.enumerate()) < threads
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        other = sdk(f"http://{kept_host}:{kept_port}", token)  # the other socket still answers
        assert other.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}]).choices
        client.close()
        other.close()


def test_overhead_helper_measures_the_gateways_own_time() -> None:
    with Gateway() as gateway:
        for wire in ("openai_chat", "anthropic_messages", "openai_responses"):
            median = overhead_ms(gateway, 10, wire=wire, stream=wire == "openai_responses", turns=5)
            assert 0 < median < 5000


# ---------------------------------------------------------------- Responses: Codex's namespaces and tool search
CRM = {"type": "namespace", "name": "crm", "description": "The CRM.", "tools": [
    {"type": "function", "name": "lookup", "description": "Find a customer.", "parameters": SCHEMA},
    {"type": "function", "name": "notes", "description": "A customer's notes.", "parameters": SCHEMA,
     "defer_loading": True}]}
SEARCH = {"type": "tool_search", "execution": "client", "description": "Find more tools.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}


def _responses(url: str, token: str, body: dict[str, Any]) -> dict[str, Any]:
    status, _headers, data = post(url, "/v1/responses", {"model": "m", **body}, {"Authorization": f"Bearer {token}"})
    assert status == 200, data
    return json.loads(data)


def test_responses_namespaced_tool_calls_go_back_under_their_namespace(gw: tuple[Gateway, str]) -> None:
    # the bridge offers a namespace's functions as `<namespace>__<name>`; Codex routes a call by both parts
    gateway, url = gw
    handler = Recorder([{"raw": {"content": "", "tool_calls": [{"name": "crm__lookup", "arguments": LS}]}}])
    token = gateway.open(handler)
    reply = _responses(url, token, {"input": "Find Ada.", "tools": [CRM, *RESPONSES_TOOLS]})
    (item,) = reply["output"]
    assert (item["type"], item["name"], item["namespace"], item["arguments"]) == ("function_call", "lookup", "crm", LS)
    offered = [t["function"]["name"] for t in handler.seen[0][1] or []]
    assert "crm__lookup" in offered and "bash" in offered


def test_responses_client_tool_search_is_a_function_whose_calls_go_back_to_the_client(
        gw: tuple[Gateway, str]) -> None:
    # Codex runs its tool search itself (`execution: "client"`): the model sees a `tool_search` function, its
    # call goes back as a `tool_search_call`, and the tools the client then loads are offered from there on
    gateway, url = gw
    query = json.dumps({"query": "notes"})
    handler = Recorder([{"raw": {"content": "", "tool_calls": [{"name": "tool_search", "arguments": query}]}},
                        text_step("Done.")])
    token = gateway.open(handler)
    tools = [*RESPONSES_TOOLS, CRM, SEARCH]
    body = {"model": "m", "input": "Notes?", "tools": tools, "stream": True}
    status, _headers, data = post(url, "/v1/responses", body, {"Authorization": f"Bearer {token}"})
    assert status == 200
    sent = events(data)
    item = next(d["item"] for name, d in sent if name == "response.output_item.done")
    assert (item["type"], item["execution"], item["arguments"]) == ("tool_search_call", "client", {"query": "notes"})
    assert sent[-1][1]["response"]["output"] == [item]
    offered = {t["function"]["name"] for t in handler.seen[0][1] or []}
    assert offered == {"bash", "crm__lookup", "tool_search"}  # a deferred tool waits for a search
    loaded = {"type": "namespace", "name": "crm", "description": "The CRM.", "tools": [CRM["tools"][1]]}
    _responses(url, token, {"tools": tools, "input": [
        {"type": "message", "role": "user", "content": "Notes?"},
        {"type": "tool_search_call", "call_id": item["call_id"], "execution": "client", "arguments": {"query": "notes"},
         "status": "completed"},
        {"type": "tool_search_output", "call_id": item["call_id"], "execution": "client", "status": "completed",
         "tools": [loaded]}]})
    messages, tools, _params = handler.seen[1]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "tool_search", "arguments": query}
    assert messages[2]["role"] == "tool" and "crm__notes" in messages[2]["content"]
    assert "crm__notes" in {t["function"]["name"] for t in tools or []}


def test_responses_additional_tools_items_join_the_tools(gw: tuple[Gateway, str]) -> None:
    # a tool list sent as an input item (how Codex adds tools mid-conversation) is offered like `tools`
    gateway, url = gw
    handler = Recorder([{"raw": {"content": "", "tool_calls": [{"name": "tool_search", "arguments": "{}"}]}}])
    token = gateway.open(handler)
    reply = _responses(url, token, {"tools": RESPONSES_TOOLS, "input": [
        {"type": "message", "role": "user", "content": "Go."}, {"type": "additional_tools", "tools": [CRM, SEARCH]}]})
    assert reply["output"][0]["type"] == "tool_search_call"  # the search came in the item and is still the client's
    messages, tools, _params = handler.seen[0]
    assert messages == [{"role": "user", "content": "Go."}]
    assert [t["function"]["name"] for t in tools or []] == ["bash", "crm__lookup", "tool_search"]
