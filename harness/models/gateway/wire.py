"""What every wire format shares: the translated request, the format's interface, ids, SSE framing.

A wire format turns a request body into OpenAI chat messages + tools for the handler, and a
`ModelReply` back into the body its clients expect. The model layer does not stream, so a streamed
answer is written from the complete reply body once the call has returned (`events`): the same
content, cut into the events the format's clients parse.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.models.gateway.session import Refused
from harness.models.records import ModelReply

# Error types by HTTP status, for the answers the gateway writes itself (Anthropic's names; OpenAI's
# clients only show them).
KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
         404: "not_found_error", 405: "invalid_request_error", 413: "request_too_large",
         415: "invalid_request_error", 429: "rate_limit_error", 500: "api_error", 503: "overloaded_error"}


@dataclass
class WireRequest:
    """A request translated for the handler, plus what the reply needs to remember of it."""
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: dict[str, Any]
    stream: bool = False
    model: str = ""  # the name the client asked for, echoed in the reply
    extra: dict[str, Any] = field(default_factory=dict)  # per format: tool-name mapping, usage chunk, ...


# A local endpoint (answered without the handler): (request body or None, the session's model name)
# -> the JSON answer.
LocalEndpoint = Callable[[Any, str], dict[str, Any]]


class Wire:
    """One wire format. Subclasses set `name` and `paths` (the POST paths of a model call) and
    translate; `local` lists the endpoints they answer themselves, by (method, path)."""
    name = ""
    paths: tuple[str, ...] = ()

    def local(self) -> dict[tuple[str, str], LocalEndpoint]:
        return {}

    def parse(self, body: Any) -> WireRequest:
        raise NotImplementedError

    def reply(self, request: WireRequest, reply: ModelReply) -> dict[str, Any]:
        raise NotImplementedError

    def events(self, request: WireRequest, body: dict[str, Any]) -> list[bytes]:
        raise NotImplementedError

    def error(self, status: int, kind: str, message: str, code: str | None = None) -> dict[str, Any]:
        """OpenAI's error body (the Responses API uses it too); Anthropic's format overrides this."""
        return {"error": {"message": message, "type": kind, "param": None, "code": code or kind}}


# ---------------------------------------------------------------- helpers for the formats
def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def now() -> int:
    return int(time.time())


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event: `event: NAME` when the format names its events (Anthropic, Responses),
    then the JSON on one `data:` line (json.dumps writes no raw newline)."""
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"{head}data: {text}\n\n".encode()


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise Refused("the request body must be a JSON object")
    return body


def require_list(body: dict[str, Any], key: str, optional: bool = False) -> list[Any] | None:
    value = body.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, list):
        raise Refused(f"`{key}` must be a list")
    return value


def finish_reason(reply: ModelReply) -> str:
    """The model's finish reason; with tool calls, `tool_calls` unless it was cut at the token limit
    (some providers say `stop` for a turn that calls tools, and agents loop on the reason)."""
    reason = reply.record.finish_reason or "stop"
    if reply.tool_calls and reason not in ("length", "content_filter"):
        return "tool_calls"
    return reason


def stop_list(value: Any) -> list[str] | None:
    if value is None or value == []:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return value
    raise Refused("the stop sequences must be a string or a list of strings")


def plain(value: Any) -> Any:
    """JSON values only: litellm's translations return TypedDicts and, here and there, pydantic
    objects; the handler and the call log get plain dicts."""
    return json.loads(json.dumps(value, default=lambda o: o.model_dump() if hasattr(o, "model_dump") else str(o)))


def pick(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: body[k] for k in keys if body.get(k) is not None}


# Content parts that carry text the model reads; every other part (image_url, file, input_audio, video_url,
# document, ...) may be fetched by litellm when it names a URL.
TEXT_PARTS = frozenset({"text", "input_text", "output_text", "thinking", "redacted_thinking", "refusal"})
_URL = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://")


def remote_url(messages: list[dict[str, Any]]) -> str | None:
    """The first remote URL (any scheme but data:) a non-text content part names, or None. For some
    providers litellm downloads such an image or file on the runner's host before the call."""
    def first(value: Any) -> str | None:
        if isinstance(value, str):
            return value if _URL.match(value) else None
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        for item in items:
            if (found := first(item)) is not None:
                return found
        return None

    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and part.get("type") not in TEXT_PARTS and (found := first(part)) is not None:
                return found
    return None
