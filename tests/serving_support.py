"""A small OpenAI-style completions server for the serving client's tests: real HTTP on a loopback port, in a
thread of the test's process, whose timing and faults the test chooses.

Its "model" answers word i of the prompt's words cycled (so a response is known in advance), one server-sent
event per word, `first_s` before the first and `gap_s` between the next ones. `mode` picks a fault.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(prompt: str, max_tokens: int) -> list[str]:
    words = prompt.split() or ["empty"]
    return [f"{words[i % len(words)]} " for i in range(max_tokens)]


@dataclass
class Behaviour:
    first_s: float = 0.0
    gap_s: float = 0.0
    mode: str = "sse"  # sse | json | sse-sized | short | http500 | hang | flood | bigchunk | garbage | no-blank-end
    usage: bool = True
    seen: int = 0  # requests received


def handler_for(behaviour: Behaviour) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # the readiness probe
            self._send(200 if self.path == "/health" else 404, b"{}", "application/json")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            behaviour.seen += 1
            words = answer(body["prompt"], body["max_tokens"])
            mode = behaviour.mode
            if mode == "http500":
                return self._send(500, b"{}", "application/json")
            if mode == "hang":
                time.sleep(30)
                return None
            if mode == "garbage":
                self.wfile.write(b"SPAM\r\n\r\n")
                return None
            if mode == "short":
                words = words[: max(1, len(words) // 2)]
            time.sleep(behaviour.first_s)
            if mode == "json":
                usage = {"completion_tokens": len(words)} if behaviour.usage else None
                data = json.dumps({"choices": [{"text": "".join(words)}], "usage": usage}).encode()
                return self._send(200, data, "application/json")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            sized = mode == "sse-sized"
            events = [f"data: {json.dumps({'choices': [{'text': w}]})}\n\n".encode() for w in words]
            if behaviour.usage:
                events.append(f"data: {json.dumps({'choices': [], 'usage': {'completion_tokens': len(words)}})}\n\n"
                              .encode())
            events.append(b"data: [DONE]" + (b"" if mode == "no-blank-end" else b"\n\n"))
            if sized:  # all at once, with a length: no timing, but the client must read it
                data = b"".join(events)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return None
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if mode == "bigchunk":  # a chunk said to be a terabyte, sent slowly
                self.wfile.write(b"%x\r\n" % (1 << 40) + b"data: ")
                self.wfile.flush()
                time.sleep(30)
                return None
            if mode == "flood":
                block = b"data: " + b"x" * 65536 + b"\n"
                while True:
                    self._chunk(block)
            for i, event in enumerate(events):
                if i and i < len(words):
                    time.sleep(behaviour.gap_s)
                self._chunk(event)
            self.wfile.write(b"0\r\n\r\n")
            return None

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _send(self, code: int, data: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def completions_server(behaviour: Behaviour, port: int = 0) -> Iterator[int]:
    """The server's port while the block runs (`port` 0: a free one)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(behaviour))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":  # in a sandbox: python3 serving_support.py PORT FIRST_S (standard library only)
    import sys
    with completions_server(Behaviour(first_s=float(sys.argv[2])), int(sys.argv[1])):
        threading.Event().wait()
