"""The completions server: POST /v1/completions (OpenAI-style; streamed as server-sent events when the
request asks), GET /health. Usage: python3 server.py PORT"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import tokstream


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/health":
            self._reply(200, b'{"status": "ok"}')
        else:
            self._reply(404, b'{"error": "not found"}')

    def do_POST(self):
        if self.path != "/v1/completions":
            return self._reply(404, b'{"error": "not found"}')
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        count = int(request.get("max_tokens") or 16)
        words = tokstream.generate(str(request.get("prompt") or ""), count)
        if not request.get("stream"):
            words = list(words)
            return self._reply(200, json.dumps({
                "object": "text_completion", "model": request.get("model"),
                "choices": [{"index": 0, "text": " ".join(words), "finish_reason": "length"}],
                "usage": {"completion_tokens": len(words)}}).encode())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        for word in words:
            self._event({"object": "text_completion", "choices": [{"index": 0, "text": word + " "}]})
            sent += 1
        if (request.get("stream_options") or {}).get("include_usage"):
            self._event({"object": "text_completion", "choices": [], "usage": {"completion_tokens": sent}})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _event(self, event):
        self._chunk(b"data: " + json.dumps(event).encode() + b"\n\n")

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _reply(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    request_queue_size = 128  # connections waiting to be accepted (the default 5 drops a burst's)
    daemon_threads = True


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
