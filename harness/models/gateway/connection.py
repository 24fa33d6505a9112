"""One client connection of the gateway: reading a request, routing it, serving a model call through
the rollout's handler, writing the answer in the request's wire format.

HTTP/1.1 with kept-alive connections, as the SDKs' connection pools expect. `server.gateway` (the
`Gateway` whose socket accepted the connection) gives the routes and the sessions.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import time
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from harness.models.errors import ModelError, first_line
from harness.models.gateway.session import CallUsage, GatewayCall, Refused, Session
from harness.models.gateway.wire import KINDS, Wire, remote_url

log = logging.getLogger(__name__)
IDLE_TIMEOUT_S = 600.0  # a kept-alive connection silent this long between requests is closed
READ_TIMEOUT_S = 60.0  # from a request's first byte, its headers and body must be in within this


class HttpError(Exception):
    """A request the gateway cannot read (size, framing, encoding): answered with `status`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Connection(BaseHTTPRequestHandler):
    """One client connection (kept alive across requests, as the SDKs' connection pools expect)."""
    protocol_version = "HTTP/1.1"
    server_version = "optrunner-gateway"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S
    server: Any  # the gateway's server; `server.gateway` routes and authenticates

    def setup(self) -> None:
        super().setup()
        if self.connection.family in (socket.AF_INET, socket.AF_INET6):
            # Headers and body go out in two writes; without this, Nagle's algorithm and the client's
            # delayed ACK hold the second one back ~40 ms on every call.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # the base class's parameter names
        pass  # the call log is the record; nothing goes to stderr per request

    def handle_one_request(self) -> None:
        """Wait (up to the idle timeout) for the next request on the connection, then read it under a
        deadline the server enforces (`_Server.read_by`): a trickled request cannot hold a connection."""
        self.connection.settimeout(IDLE_TIMEOUT_S)
        try:
            waiting = self.rfile.peek(1)  # type: ignore[attr-defined]  # a BufferedReader
        except OSError:  # timed out, or reset
            waiting = b""
        if not waiting:
            self.close_connection = True
            return
        self.connection.settimeout(READ_TIMEOUT_S)
        self.server.read_by(time.monotonic() + READ_TIMEOUT_S)
        try:
            super().handle_one_request()
        finally:
            self.server.read_by(None)

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    # ------------------------------------------------------------ one request
    def _handle(self, method: str) -> None:
        started = time.perf_counter()
        gateway = self.server.gateway
        self._unread = method == "POST"  # until the body is read, an answer must close the connection
        path = urlsplit(self.path).path
        path = path.rstrip("/") or "/"
        local = gateway.local.get((method, path))
        wire = local[0] if local else gateway.wires.get(path)
        if wire is None:
            self._send_error(gateway.fallback, 404, f"no such endpoint: {method} {path}")
            return
        if local is None and method != "POST":
            self._send_error(wire, 405, f"{path} takes POST")
            return
        token = self._token()
        only = self.server.token
        session = gateway.session(token) if only is None or hmac.compare_digest(token.encode(), only.encode()) else None
        if session is None or session.closed:
            self._send_error(wire, 401, session.closed if session else "invalid or missing gateway token")
            return
        body: Any = None
        raw = b""
        if method == "POST":
            try:
                raw = self._body(gateway.max_body_bytes)
                body = _json(raw)
            except HttpError as exc:
                if local is None:  # a model call that could not be read is logged too (its digest, not its body)
                    session.record(GatewayCall(wire=wire.name, path=path, request=None, messages=None, tools=None,
                                               reply=None, status=exc.status, error=exc.message,
                                               request_bytes=len(raw), request_sha256=_digest(raw),
                                               gateway_s=time.perf_counter() - started))
                self._send_error(wire, exc.status, exc.message)
                return
        self.server.read_by(None)  # read: answering may take as long as the model does
        if local is not None:
            try:
                answer = local[1](body, session.model)
            except Refused as exc:
                self._send_error(wire, exc.status, exc.message, exc.kind)
                return
            except Exception as exc:  # noqa: BLE001
                log.warning("gateway: %s %s failed", method, path, exc_info=True)
                self._send_error(wire, 500, f"the gateway could not answer: {first_line(exc)}")
                return
            self._send(200, json.dumps(answer).encode(), "application/json")
            return
        self._model_call(wire, session, path, body, raw, started)

    def _model_call(self, wire: Wire, session: Session, path: str, body: Any, raw: bytes, started: float) -> None:
        call = GatewayCall(wire=wire.name, path=path, request=body, messages=None, tools=None, reply=None, status=200,
                           request_bytes=len(raw))
        kind = code = None
        events: list[bytes] | None = None
        try:
            request = wire.parse(body)
            call.messages, call.tools, call.stream = request.messages, request.tools, request.stream
            if not session.remote_media and (url := remote_url(request.messages)):
                raise Refused(f"a message names an image or file by a remote URL ({url[:100]}); this gateway "
                              "serves them inline only (a data: URL)")
            handler_started = time.perf_counter()
            try:
                reply = session.handler(list(request.messages), request.tools, dict(request.params))
            finally:
                call.handler_s = time.perf_counter() - handler_started
            call.usage = CallUsage.of(reply.record)
            call.reply = wire.reply(request, reply)
            events = wire.events(request, call.reply) if request.stream else None
        except Refused as exc:
            call.status, call.error, kind = exc.status, exc.message, exc.kind
        except ModelError as exc:
            call.status, call.error = (400, f"prompt is too long for the model's context window: {exc}") \
                if exc.kind == "context_window" else (500, f"the model call failed: {exc}")
            code = "context_length_exceeded" if exc.kind == "context_window" else None
        except Exception as exc:  # noqa: BLE001 - one failed call must not stop the gateway
            log.warning("gateway: the %s handler failed", wire.name, exc_info=True)
            call.status, call.error = 500, f"the gateway could not serve this call: {first_line(exc)}"
        extra: dict[str, str] = {}
        if call.error is not None:
            data, content_type = self._error_body(wire, call.status, call.error, kind, code), "application/json"
        elif events is not None:
            # The whole stream at once, framed by Content-Length: the reply is complete before the
            # first event, and a sized body lets the client keep its connection for the next call.
            data, content_type, extra = b"".join(events), "text/event-stream", {"Cache-Control": "no-cache"}
        else:
            data, content_type = json.dumps(call.reply).encode(), "application/json"
        # Logged before the answer is written, so a client holding its answer finds the call logged.
        call.gateway_s = time.perf_counter() - started
        if call.status != 200:  # a refused request is kept as its digest (a served one's is its trajectory)
            call.request_sha256 = _digest(raw)
        if call.status != 200 or not self.server.gateway.keep_bodies:
            call.request = call.messages = call.tools = call.reply = None
        session.record(call)
        try:
            self._send(call.status, data, content_type, extra)
        except OSError as exc:  # the client hung up; the model call still counts
            self.close_connection = True
            call.error = f"the client closed the connection before the answer was written ({exc})"

    # ------------------------------------------------------------ reading
    def _token(self) -> str:
        authorization = self.headers.get("Authorization") or ""
        if authorization[:7].lower() == "bearer ":
            return authorization[7:].strip()
        return (self.headers.get("x-api-key") or "").strip()

    def _body(self, limit: int) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = self._chunked(limit)
        else:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise HttpError(400, "the Content-Length header is not a number") from None
            if length > limit:
                raise HttpError(413, f"the request body is over {limit} bytes")
            data = self.rfile.read(max(0, length))
            if len(data) < length:
                raise HttpError(400, "the request body ended early")
        self._unread = False
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding in ("gzip", "deflate"):
            # Bounded: a small compressed body must not expand past the limit in memory.
            inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
            try:
                data = inflater.decompress(data, limit + 1)
            except zlib.error as exc:
                raise HttpError(400, f"the request body is not valid {encoding} ({exc})") from None
            if len(data) > limit:
                raise HttpError(413, f"the request body is over {limit} bytes once decompressed")
        elif encoding != "identity":
            raise HttpError(415, f"unsupported Content-Encoding: {encoding}")
        return data

    def _chunked(self, limit: int) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            try:
                size = int(self.rfile.readline(1024).split(b";")[0].strip(), 16)
            except ValueError:
                raise HttpError(400, "malformed chunked request body") from None
            if size == 0:
                while self.rfile.readline(65536).strip():  # trailers, then the blank line
                    pass
                return b"".join(parts)
            total += size
            if total > limit:
                raise HttpError(413, f"the request body is over {limit} bytes")
            parts.append(self.rfile.read(size))
            self.rfile.readline(3)

    # ------------------------------------------------------------ writing
    def _send(self, status: int, data: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if self._unread:  # what is left of the request body would be read as the next request
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, wire: Wire, status: int, message: str, kind: str | None = None) -> None:
        self._send(status, self._error_body(wire, status, message, kind), "application/json")

    @staticmethod
    def _error_body(wire: Wire, status: int, message: str, kind: str | None = None, code: str | None = None) -> bytes:
        return json.dumps(wire.error(status, kind or KINDS.get(status, "api_error"), message, code)).encode()


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HttpError(400, f"the request body is not valid JSON ({exc})") from None


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest() if raw else ""
