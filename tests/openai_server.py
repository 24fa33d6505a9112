"""A loopback HTTP server that speaks the OpenAI chat-completions wire format, for tests of the real
network path of the model layer (litellm -> httpx -> socket) without any provider.

The server answers from a queue of scripted `Reply`s, one per request, in order: a status code,
headers (e.g. `Retry-After`), a JSON body or raw bytes (a malformed body), and a delay before answering
(a slow provider). It records every request it received, so a test can assert on what was sent and on
how many requests were made (i.e. how many retries happened). When the queue runs dry it answers 500, so
a test that expected fewer requests fails loudly instead of hanging.

Routes: `POST /v1/chat/completions` and `/chat/completions` (OpenAI), `POST /v1/messages` and `/messages`
(Anthropic, so a `claude` model can be pointed here to see the cache_control breakpoints litellm sends).

    with OpenAIServer() as server:
        server.push(Reply(status=429, headers={"Retry-After": "1"}), Reply(body=completion("hi")))
        ... ModelConfig(name="openai/test-model", api_base=server.base_url, ...)
        assert len(server.requests) == 2
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATHS = ("/v1/messages", "/messages")


@dataclass
class Reply:
    """One scripted answer. `raw` (bytes) wins over `body` (JSON) and is sent as is."""
    status: int = 200
    body: dict[str, Any] | None = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Received:
    """One request as the server saw it."""
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON
    at: float  # time.monotonic() when it arrived


# ---------------------------------------------------------------- bodies
def usage(prompt: int = 10, completion: int = 5, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """An OpenAI `usage` object with the cached-read and reasoning details."""
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning}}


def completion(content: str | None = "ok", tool_calls: list[dict[str, str]] | None = None,
               usage_: dict[str, Any] | None = None, model: str = "test-model",
               finish_reason: str | None = None) -> dict[str, Any]:
    """A chat.completion body. `tool_calls` are `{"name", "arguments"}` (arguments as JSON text)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                 for i, c in enumerate(tool_calls)]
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": usage_ or usage()}


def error(status_message: str, code: str | None = None, type_: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI error body."""
    return {"error": {"message": status_message, "type": type_, "param": None, "code": code}}


def anthropic_message(text: str = "ok", input_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    """An Anthropic /v1/messages body."""
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


# ---------------------------------------------------------------- the server
class OpenAIServer:
    """Start on enter (127.0.0.1, a free port), stop on exit. Thread-safe queue and request log."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting
    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if self._replies:
                return self._replies.popleft()
        return Reply(status=500, body=error("test server: no scripted reply left", type_="server_error"))

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle
    def __enter__(self) -> OpenAIServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True  # a handler still sleeping on a timed-out request must not block exit
        # A short poll interval: shutdown() waits up to one interval.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="openai-server",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _handler_for(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like real providers; every answer sets Content-Length

        def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            text = self.rfile.read(length).decode("utf-8", "replace")
            try:
                body: Any = json.loads(text)
            except json.JSONDecodeError:
                body = text
            if path not in CHAT_PATHS + ANTHROPIC_PATHS:
                self._send(Reply(status=404, body=error(f"no route {path}", type_="not_found")))
                return
            reply = server._next(Received(path, {k.lower(): v for k, v in self.headers.items()}, body,
                                          time.monotonic()))
            if reply.delay_s:
                time.sleep(reply.delay_s)
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            data = reply.raw if reply.raw is not None else json.dumps(reply.body or {}).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
            pass

    return Handler
