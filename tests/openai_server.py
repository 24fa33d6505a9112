"""A loopback HTTP server that speaks the OpenAI chat-completions wire format, for tests of the real
network path of the model layer (litellm -> httpx -> socket) without any provider.

The server answers from a queue of scripted `Reply`s, one per request, in order: a status code,
headers (e.g. `Retry-After`), a JSON body or raw bytes (a malformed body), and a delay before answering
(a slow provider), or `reset=True`: the connection is closed without an answer (a dropped
connection). It records every request it received, so a test can assert on what was sent and on
how many requests were made (i.e. how many retries happened). When the queue runs dry it answers 500, so
a test that expected fewer requests fails loudly instead of hanging, unless the server has a `policy`:
a function answering whatever the queue does not (e.g. `rate_limit_storm`: a seeded share of 429s with
Retry-After, the rest completions with random token counts). The server counts the completions it
answered and the tokens their `usage` reported (`answered`, `prompt_tokens`, `completion_tokens`), and
stamps each request with its answer's status and time, so a concurrency test can check both the
accounting and that nobody sent a request while a Retry-After pause was running. An answer that never
reached the client (a reset, or a delayed reply whose client had already hung up at its timeout) is
marked `dropped` and its tokens are not counted: the client never saw them.

Routes: `POST /v1/chat/completions` and `/chat/completions` (OpenAI), `POST /v1/messages` and `/messages`
(Anthropic, so a `claude` model can be pointed here to see the cache_control breakpoints litellm sends).

    with OpenAIServer() as server:
        server.push(Reply(status=429, headers={"Retry-After": "1"}), Reply(body=completion("hi")))
        ... ModelConfig(name="openai/test-model", api_base=server.base_url, ...)
        assert len(server.requests) == 2
"""
from __future__ import annotations

import json
import random
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
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
    reset: bool = False  # close the connection without answering (after delay_s)


@dataclass
class Received:
    """One request as the server saw it."""
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON
    at: float  # time.monotonic() when it arrived
    status: int | None = None  # the answer's status, once sent
    answered_at: float | None = None  # time.monotonic() when the answer was sent
    reply: Reply | None = None
    dropped: bool = False  # the answer never reached the client (reset, or it had hung up)


Policy = Callable[[Received], Reply]


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


def anthropic_message(text: str = "ok", input_tokens: int = 10, output_tokens: int = 5,
                      content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An Anthropic /v1/messages body; `content` (blocks: thinking, text, tool_use) replaces the text."""
    blocks = content if content is not None else [{"type": "text", "text": text}]
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test",
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def rate_limit_storm(share: float = 0.3, retry_after: str = "0.5", seed: int = 0,
                     headers: dict[str, str] | None = None) -> Policy:
    """A policy: a seeded random `share` of requests get 429 with `Retry-After: retry_after` (plus
    `headers`), the others a completion whose token counts are random too (so sums are meaningful)."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def answer(_received: Received) -> Reply:
        with lock:  # handler threads share the generator; draws stay reproducible per request order
            limited = rng.random() < share
            prompt, completion_ = rng.randint(5, 500), rng.randint(1, 200)
        if limited:
            return Reply(status=429, headers={"Retry-After": retry_after, **(headers or {})},
                         body=error("Rate limit reached for requests", type_="requests", code="rate_limit_exceeded"))
        return Reply(body=completion("ok", usage_=usage(prompt=prompt, completion=completion_)))

    return answer


# ---------------------------------------------------------------- the server
class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) overflows when 16 clients connect at once: the kernel then resets
    # some connections, which the client sees as transient errors a real provider would not cause.
    request_queue_size = 128


class OpenAIServer:
    """Start on enter (127.0.0.1, a free port), stop on exit. Thread-safe queue and request log.
    `policy`: answers requests the queue has no reply for (default: none, a 500)."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.requests: list[Received] = []
        self.policy = policy
        self.answered = 0  # 200 answers with a `usage`
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
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
        if self.policy is not None:
            return self.policy(received)
        return Reply(status=500, body=error("test server: no scripted reply left", type_="server_error"))

    def _answered(self, received: Received, reply: Reply, dropped: bool = False) -> None:
        """Stamp the request and count the tokens a completion reported (Anthropic's names too), unless
        the answer was dropped."""
        with self._lock:
            received.status, received.answered_at, received.reply = reply.status, time.monotonic(), reply
            received.dropped = dropped
            used = (reply.body or {}).get("usage") if reply.status == 200 and reply.raw is None else None
            if dropped:
                used = None
            if isinstance(used, dict):
                self.answered += 1
                self.prompt_tokens += int(used.get("prompt_tokens", used.get("input_tokens", 0)) or 0)
                self.completion_tokens += int(used.get("completion_tokens", used.get("output_tokens", 0)) or 0)

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle
    def __enter__(self) -> OpenAIServer:
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
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
            received = Received(path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic())
            reply = server._next(received)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.reset or (reply.delay_s and self._client_gone()):
                server._answered(received, reply, dropped=True)
                self._drop()
                return
            server._answered(received, reply)  # before sending: the client acts only once it has the answer
            self._send(reply)

        def _client_gone(self) -> bool:
            """The client closed its end (it gave up at its timeout): nothing will read an answer."""
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                return True

        def _drop(self) -> None:
            """Close the connection without an answer; SO_LINGER 0 makes it a reset (RST), not a clean close."""
            self.close_connection = True
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            except OSError:
                pass

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
