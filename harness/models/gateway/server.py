"""The gateway: an HTTP server on the runner's side that agent CLIs in sandboxes call as their model API.

One `Gateway` per run; each rollout registers a handler with `open` and hands its agent the token
(never a provider key). A request is authenticated by that token (`Authorization: Bearer` from OpenAI
clients, `x-api-key` from Anthropic ones), translated by its wire format into OpenAI chat messages,
answered by the rollout's handler (normally `Model.query`), and written back in the same wire format,
as one JSON body or, when asked, as the event stream the client parses. Every served call is logged per
token (`calls`) with the time spent in the gateway and in the handler.

The gateway serves on listening sockets it is given (`serve`), not only ones it makes (`listen`): the
socket may have been opened inside a sandbox's network namespace, where the agent can reach it while
the sandbox stays off every other network.
"""
from __future__ import annotations

import logging
import secrets
import socket
import threading
import time
from http.server import HTTPServer
from collections.abc import Callable
from typing import Any

from harness.models.gateway.anthropic_messages import AnthropicMessages
from harness.models.gateway.connection import Connection
from harness.models.gateway.openai_chat import OpenAIChat
from harness.models.gateway.openai_responses import OpenAIResponses
from harness.models.gateway.session import GatewayCall, Handler, Session
from harness.models.gateway.wire import Wire

log = logging.getLogger(__name__)
# Bounds on what one agent can make the runner hold (every rollout's agent shares the runner's threads and
# memory). A long conversation's request is ~1 MB; an inlined screenshot a few.
MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_CONNECTIONS = 16  # open connections per served socket (a rollout's own port): one thread each
MAX_REFUSALS = 32  # refused model calls a session takes before its token is closed
WIRES: tuple[Wire, ...] = (OpenAIChat(), AnthropicMessages(), OpenAIResponses())


class _Server(HTTPServer):
    """Serves one given listening socket, a thread per connection. The threads are tracked (unlike
    ThreadingHTTPServer's daemon threads) so that shutdown can end kept-alive connections and wait."""

    def __init__(self, sock: socket.socket, gateway: Gateway, token: str | None = None) -> None:
        self.address_family = sock.family
        super().__init__(sock.getsockname(), Connection, bind_and_activate=False)
        self.socket.close()  # the unbound socket the base class made; the given one serves instead
        self.socket = sock
        self.server_address = sock.getsockname()
        self.gateway = gateway
        self.token = token  # the only session this socket answers (a rollout's own port), or any
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._read_by: dict[threading.Thread, float] = {}  # requests being read: when they must be in
        self._lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            full = len(self._connections) >= self.gateway.max_connections
        if full:  # answered from the accept loop, without a thread: a short 503, then closed
            try:
                request.setblocking(False)
                request.send(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n"
                             b"Retry-After: 1\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._serve_connection, args=(request, client_address),
                                  name="gateway-connection", daemon=True)
        with self._lock:
            self._connections[thread] = request
        thread.start()

    def read_by(self, deadline: float | None) -> None:
        """The calling connection's request (headers and body) must be read by `deadline` (monotonic), or
        its connection is shut (None: no deadline, e.g. while its call is answered)."""
        with self._lock:
            if deadline is None:
                self._read_by.pop(threading.current_thread(), None)
            else:
                self._read_by[threading.current_thread()] = deadline

    def service_actions(self) -> None:
        """Each turn of the accept loop (every 50 ms): shut the connections whose request is late, a
        slow sender's (one byte a minute) as much as a stalled one's."""
        now = time.monotonic()
        with self._lock:
            late = [self._connections[t] for t, by in self._read_by.items() if by < now and t in self._connections]
        for conn in late:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - a reset connection ends its thread, never the server
            log.debug("gateway: a connection ended with an error", exc_info=True)
        finally:
            self.shutdown_request(request)
            with self._lock:
                self._connections.pop(threading.current_thread(), None)
                self._read_by.pop(threading.current_thread(), None)

    def end_connections(self, deadline: float) -> None:
        """Wake every connection thread (a kept-alive one waits in a read) and wait for them."""
        with self._lock:
            connections = list(self._connections.items())
        for _thread, conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread, _conn in connections:
            thread.join(max(0.0, deadline - time.monotonic()))


class Gateway:
    """The run's model gateway. Thread-safe; `shutdown` (or leaving a `with` block) stops it."""

    def __init__(self, max_body_bytes: int = MAX_BODY_BYTES, max_connections: int = MAX_CONNECTIONS,
                 max_refusals: int = MAX_REFUSALS, keep_bodies: bool = False) -> None:
        """`keep_bodies`: keep each served call's request, messages, tools and reply in the call log (the
        tests read them; a rollout keeps only the last conversation, so by default they are not kept)."""
        self.max_body_bytes = max_body_bytes
        self.max_connections = max_connections
        self.max_refusals = max_refusals
        self.keep_bodies = keep_bodies
        self.wires = {path: wire for wire in WIRES for path in wire.paths}
        self.local = {key: (wire, answer) for wire in WIRES for key, answer in wire.local().items()}
        self.fallback = WIRES[0]  # whose error body an unknown path gets
        self._sessions: dict[str, Session] = {}
        self._servers: list[tuple[_Server, threading.Thread]] = []
        self._lock = threading.Lock()
        self._stopped = False

    def serve(self, sock: socket.socket, token: str | None = None) -> None:
        """Serve HTTP on `sock`, already bound and listening; the gateway closes it at shutdown. With
        `token`, that session only: any other token gets 401 there (a rollout's port inside its sandbox
        answers that rollout, even for a token learnt elsewhere)."""
        with self._lock:
            if self._stopped:
                raise RuntimeError("the gateway was shut down")
            server = _Server(sock, self, token)
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                      name="gateway-server", daemon=True)
            self._servers.append((server, thread))
            thread.start()

    def listen(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """A new listening socket on (host, port), served; its address (port 0: a free port)."""
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            self.serve(sock)
        except BaseException:
            sock.close()
            raise
        address = sock.getsockname()
        return address[0], address[1]

    @property
    def addresses(self) -> list[Any]:
        """The addresses of the sockets being served."""
        with self._lock:
            return [server.server_address for server, _thread in self._servers]

    def open(self, handler: Handler, model: str = "optrunner", remote_media: bool = False,
             on_close: Callable[[str], None] | None = None) -> str:
        """Register a rollout; its token, fresh and unguessable. `model`: the name /v1/models reports;
        `remote_media` and `on_close`: see `Session`."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[token] = Session(token=token, handler=handler, model=model, max_refusals=self.max_refusals,
                                            remote_media=remote_media, on_close=on_close)
        return token

    def close(self, token: str) -> list[GatewayCall]:
        """Forget a rollout (its token gets 401 from now on); the calls it made. A call still being
        served when it closes finishes but is not in the list."""
        with self._lock:
            session = self._sessions.pop(token, None)
        return session.log() if session else []

    def calls(self, token: str) -> list[GatewayCall]:
        """The calls served for an open token, in the order they finished. KeyError: not open."""
        session = self.session(token)
        if session is None:
            raise KeyError("no open gateway session has this token")
        return session.log()

    def session(self, token: str) -> Session | None:
        if not token:
            return None
        with self._lock:
            return self._sessions.get(token)

    def unserve(self, sock: socket.socket, timeout_s: float = 10.0) -> None:
        """Stop serving `sock` (a rollout's port, when the rollout ends): as `shutdown`, for that socket only."""
        with self._lock:
            ours = [(server, thread) for server, thread in self._servers if server.socket is sock]
            self._servers = [pair for pair in self._servers if pair not in ours]
        self._stop(ours, timeout_s)

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop every server, close its socket and its connections, and wait (up to `timeout_s`) for
        calls in flight to end. Idempotent."""
        with self._lock:
            self._stopped = True
            servers, self._servers = self._servers, []
        self._stop(servers, timeout_s)

    @staticmethod
    def _stop(servers: list[tuple[_Server, threading.Thread]], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for server, _thread in servers:
            server.shutdown()  # the accept loop ends within its poll interval (50 ms)
        for server, thread in servers:
            server.server_close()
            server.end_connections(deadline)
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.shutdown()
