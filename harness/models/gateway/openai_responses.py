"""OpenAI Responses (`POST /v1/responses`): Codex CLI, whose only wire API it is now.

Requests are translated by litellm's Responses-to-chat bridge (`LiteLLMCompletionResponsesConfig`, the
one litellm uses to serve `responses()` from chat-only providers): `instructions`, `input` as a string
or items (messages with input_text / output_text / images, function_call, function_call_output,
reasoning, and Codex's freeform `custom` tools, which become function tools with one `content`
string). The reply is written here from the `ModelReply` (the bridge's reply direction wants a litellm
`ModelResponse`); a call of a custom tool goes back as a `custom_tool_call` with its raw input, and a call
of a tool inside a `namespace` tool (which the bridge offers the model as `<namespace>__<name>`) goes back
under its own name with its `namespace`, as Codex's tool router looks it up. As litellm's own handler
does, tool lists sent as `additional_tools` input items join the tools, and a `tool_search` tool that the
client runs itself (`execution: "client"`, Codex's search over its deferred tools) is offered as a function;
its call goes back as a `tool_search_call` and its `tool_search_output` replays as that function's result.

Stateless: `previous_response_id` is refused with a 400. Codex CLI over HTTP sends `store: false` and
the whole conversation in `input` on every turn (openai/codex issues #3841 and #4047: it stopped using
`previous_response_id`); only its websocket transport to OpenAI's own backend sends incremental input,
and an HTTP gateway never sees that.
"""
from __future__ import annotations

import json
import threading
from typing import Any

from harness.models.gateway.session import Refused
from harness.models.gateway.wire import (Wire, WireRequest, finish_reason, new_id, now, pick, plain,
                                         require_list, require_object, sse)
from harness.models.loader import litellm_module
from harness.models.records import ModelReply

ECHOED = ("instructions", "max_output_tokens", "tools", "tool_choice", "temperature", "top_p",
          "parallel_tool_calls", "reasoning", "text", "metadata")
_bridge: Any = None
_lock = threading.Lock()


class _Bridge:
    """litellm's Responses bridge and the helpers its own `responses()` handler runs before it."""

    def __init__(self) -> None:
        litellm_module()
        from litellm.responses import additional_tools
        from litellm.responses.litellm_completion_transformation import (client_tool_search, custom_tools,
                                                                           tool_search)
        from litellm.responses.litellm_completion_transformation.transformation import (
            LiteLLMCompletionResponsesConfig)
        self.config = LiteLLMCompletionResponsesConfig
        self.custom_tools = custom_tools
        self.hoist = additional_tools.hoist_additional_tools
        self.bridge_search = client_tool_search.bridge_client_tool_search
        self.has_client_search = tool_search.has_client_tool_search
        self.search_name = tool_search.CLIENT_TOOL_SEARCH_FUNCTION_NAME


def bridge() -> _Bridge:
    """The bridge, imported on first use."""
    global _bridge
    with _lock:
        if _bridge is None:
            _bridge = _Bridge()
        return _bridge


def _chat_tool_choice(choice: Any) -> Any:
    """Responses names a forced function flat ({"type": "function", "name"}); chat nests it."""
    if isinstance(choice, dict) and choice.get("type") == "function" and choice.get("name"):
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def _without_index(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The bridge numbers replayed tool calls as a stream does (`index`); a chat request has no such
    # field and a strict provider could refuse it.
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                call.pop("index", None)
    return messages


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def responses_usage(reply: ModelReply) -> dict[str, Any]:
    record = reply.record
    return {"input_tokens": record.input_tokens, "input_tokens_details": {"cached_tokens": record.cached_read_tokens},
            "output_tokens": record.output_tokens,
            "output_tokens_details": {"reasoning_tokens": record.reasoning_tokens},
            "total_tokens": record.input_tokens + record.output_tokens}


class OpenAIResponses(Wire):
    name = "openai_responses"
    paths = ("/v1/responses", "/responses")

    def parse(self, body: Any) -> WireRequest:
        body = require_object(body)
        if body.get("previous_response_id"):
            raise Refused("previous_response_id is not supported: this gateway keeps no responses; "
                          "send the whole conversation in `input` (store: false)")
        given = body.get("input")
        if not isinstance(given, (str, list)) or not given:
            raise Refused("`input` must be a non-empty string or list of items")
        tools_given = require_list(body, "tools", optional=True) or []
        b = bridge()
        try:
            # as litellm's own handler does first: tool lists sent as input items join `tools`, and a
            # client-run `tool_search` (Codex's) becomes a function tool whose calls and outputs replay
            # as function calls
            hoisted = b.hoist(given, tools_given, drop_params=True)
            searched = b.bridge_search(hoisted.input, hoisted.tools)
            given, tools_given = searched.input, list(searched.tools)
            messages = b.config.transform_responses_api_input_to_messages(
                given, pick(body, "instructions"), replay_reasoning=True)
            tools, _web_search = b.config.transform_responses_api_tools_to_chat_completion_tools(tools_given)
            custom = set(b.custom_tools.extract_custom_tool_names(tools_given))
            namespaced = dict(b.config.namespace_tool_name_map(tools_given))  # chat name -> (namespace, name)
            # a client-run search may itself come in an additional_tools item: looked for after hoisting
            search = b.search_name if b.has_client_search(tools_given) else None
        except Exception as exc:  # noqa: BLE001 - the bridge raises litellm's and Python's errors alike
            raise Refused(f"the request is not a valid Responses request: {exc}") from None
        params = pick(body, "model", "temperature", "top_p", "parallel_tool_calls", "reasoning", "text")
        if body.get("max_output_tokens") is not None:
            params["max_tokens"] = body["max_output_tokens"]
        if body.get("tool_choice") is not None:
            params["tool_choice"] = _chat_tool_choice(body["tool_choice"])
        return WireRequest(messages=_without_index(plain(messages)), tools=plain(tools) or None, params=params,
                           stream=bool(body.get("stream")), model=str(body.get("model") or ""),
                           extra={"custom": custom, "namespaced": namespaced, "search": search,
                                  "echo": pick(body, *ECHOED)})

    def reply(self, request: WireRequest, reply: ModelReply) -> dict[str, Any]:
        custom_tools = bridge().custom_tools
        output: list[dict[str, Any]] = []
        if reply.content:
            output.append({"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
                           "content": [{"type": "output_text", "text": reply.content, "annotations": []}]})
        for call in reply.tool_calls:
            if call.name in request.extra.get("custom", ()):
                output.append({"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": call.id,
                               "name": call.name, "input": custom_tools.unwrap_custom_tool_arguments(call.arguments),
                               "status": "completed"})
            elif call.name == request.extra.get("search"):  # the client runs the search: it gets the call
                output.append({"type": "tool_search_call", "id": new_id("tsc_"), "call_id": call.id,
                               "arguments": _arguments(call.arguments), "execution": "client",
                               "status": "completed"})
            else:
                namespace, name = request.extra.get("namespaced", {}).get(call.name, (None, call.name))
                output.append({"type": "function_call", "id": new_id("fc_"), "call_id": call.id, "name": name,
                               **({"namespace": namespace} if namespace else {}), "arguments": call.arguments,
                               "status": "completed"})
        cut = finish_reason(reply) == "length"
        echo = request.extra.get("echo") or {}
        return {"id": new_id("resp_"), "object": "response", "created_at": now(),
                "status": "incomplete" if cut else "completed", "error": None,
                "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
                "model": request.model or "optrunner", "output": output, "previous_response_id": None,
                "store": False, "parallel_tool_calls": echo.get("parallel_tool_calls", True),
                "tool_choice": echo.get("tool_choice", "auto"), "tools": echo.get("tools", []),
                "text": echo.get("text", {"format": {"type": "text"}}), "truncation": "disabled",
                "metadata": echo.get("metadata", {}), "usage": responses_usage(reply),
                **pick(echo, "instructions", "max_output_tokens", "temperature", "top_p", "reasoning")}

    def events(self, request: WireRequest, body: dict[str, Any]) -> list[bytes]:
        out: list[bytes] = []

        def event(kind: str, **data: Any) -> None:
            out.append(sse({"type": kind, "sequence_number": len(out), **data}, kind))

        opening = {**body, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
        event("response.created", response=opening)
        event("response.in_progress", response=opening)
        for i, item in enumerate(body["output"]):
            at = {"item_id": item["id"], "output_index": i}
            if item["type"] == "message":
                event("response.output_item.added", output_index=i,
                      item={**item, "status": "in_progress", "content": []})
                for j, part in enumerate(item["content"]):
                    event("response.content_part.added", **at, content_index=j, part={**part, "text": ""})
                    event("response.output_text.delta", **at, content_index=j, delta=part["text"], logprobs=[])
                    event("response.output_text.done", **at, content_index=j, text=part["text"], logprobs=[])
                    event("response.content_part.done", **at, content_index=j, part=part)
            elif item["type"] == "function_call":
                event("response.output_item.added", output_index=i,
                      item={**item, "status": "in_progress", "arguments": ""})
                event("response.function_call_arguments.delta", **at, delta=item["arguments"])
                event("response.function_call_arguments.done", **at, name=item["name"], arguments=item["arguments"])
            elif item["type"] == "tool_search_call":  # whole, as OpenAI streams it: no argument deltas
                event("response.output_item.added", output_index=i, item={**item, "status": "in_progress"})
            else:  # a custom tool's call
                event("response.output_item.added", output_index=i, item={**item, "status": "in_progress", "input": ""})
                event("response.custom_tool_call_input.delta", **at, delta=item["input"])
                event("response.custom_tool_call_input.done", **at, input=item["input"])
            event("response.output_item.done", output_index=i, item=item)
        event("response.completed" if body["status"] == "completed" else "response.incomplete", response=body)
        return out
