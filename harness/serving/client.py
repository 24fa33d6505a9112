"""The grader's serving client: a workload sent to an OpenAI-compatible completions endpoint, every request's
timeline recorded.

It is ours and runs in the grader's process, outside the patched tree, so a patch cannot change what is
measured. It speaks plain HTTP/1.1 on asyncio streams over sockets the caller opens (`open_socket`): the
grader opens them inside a sandbox's network namespace, where the server listens on its own loopback, and
nothing else can reach it. One connection per request (`Connection: close`), so no request waits on
another's connection; the clock of a request starts before its connection is made, as the serving
benchmarks' does.

Streaming responses are server-sent events (`data: {...}` lines, `data: [DONE]` last); each event that carries
text is a content chunk, timed on arrival. A server that sends usage (`stream_options.include_usage`) has its
completion token count taken, else the chunks are counted (an unstreamed response without usage: its words,
as no tokenizer is at hand). A hostile server cannot hold the grader: every
request has a deadline, a response is cut at `MAX_RESPONSE_BYTES`, and a malformed one is that request's
error.
"""
from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.serving.metrics import RequestRecord
from harness.serving.workload import Request, Workload

MAX_RESPONSE_BYTES = 8 << 20
MAX_TEXT_CHARS = 1 << 16  # what a record keeps of a response's text (the quality gate's prompts are short)


@dataclass(frozen=True)
class Endpoint:
    """Where a server listens, as the client reaches it."""
    open_socket: Callable[[], socket.socket]  # a fresh, unconnected TCP socket (the grader's: in the sandbox)
    port: int
    host: str = "127.0.0.1"
    path: str = "/v1/completions"
    model: str = "model"


class ResponseError(Exception):
    """A response the client cannot read: the request's error, in one line."""


async def _connect(endpoint: Endpoint) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    sock = endpoint.open_socket()
    try:
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (endpoint.host, endpoint.port))
        return await asyncio.open_connection(sock=sock, limit=1 << 20)
    except BaseException:
        sock.close()
        raise


def request_body(endpoint: Endpoint, request: Request, workload: Workload) -> dict[str, Any]:
    body: dict[str, Any] = {"model": endpoint.model, "prompt": request.prompt, "max_tokens": request.max_tokens,
                            "temperature": 0.0, "stream": workload.stream}
    if workload.stream:
        body["stream_options"] = {"include_usage": True}
    body.update(workload.extra_body)
    return body


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = await reader.readline()
    parts = status_line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ResponseError(f"not an HTTP response: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            return int(parts[1]), headers
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()


async def _body(reader: asyncio.StreamReader, headers: dict[str, str]):
    """The response body's bytes as they arrive (chunked, sized or up to the connection's end)."""
    total = 0

    def admit(size: int) -> None:
        """Count `size` more bytes of the body; past the cap, the response fails. A chunk's declared size is
        admitted before it is read (readexactly would hold all of it), other reads once they are in."""
        nonlocal total
        total += size
        if total > MAX_RESPONSE_BYTES:
            raise ResponseError(f"the response passed {MAX_RESPONSE_BYTES >> 20} MiB")

    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = await reader.readline()
            try:
                size = int(size_line.split(b";")[0].strip() or b"x", 16)
            except ValueError:
                raise ResponseError(f"a bad chunk size line {size_line[:40]!r}") from None
            if size == 0:
                return
            admit(size)
            yield await reader.readexactly(size)
            await reader.readexactly(2)  # the chunk's CRLF
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left > 0:
            data = await reader.read(min(left, 65536))
            if not data:
                raise ResponseError("the connection closed before the response's end")
            left -= len(data)
            admit(len(data))
            yield data
    else:
        while data := await reader.read(65536):
            admit(len(data))
            yield data


def _content(event: dict[str, Any]) -> str:
    choices = event.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    text = choice.get("text")
    if text is None:  # a chat endpoint's delta
        text = (choice.get("delta") or {}).get("content")
    return text if isinstance(text, str) else ""


async def send(endpoint: Endpoint, request: Request, workload: Workload, start: float,
               timeout_s: float) -> RequestRecord:
    """Send one request and record its timeline (times from `start`, a perf_counter reading)."""
    record = RequestRecord(request.index, time.perf_counter() - start, max_tokens=request.max_tokens)
    try:
        await asyncio.wait_for(_exchange(endpoint, request, workload, start, record), timeout_s)
    except TimeoutError:
        record.error = f"no complete response within {timeout_s:g} s"
    except ConnectionRefusedError:
        record.error = f"nothing listens on port {endpoint.port}"
    except (ResponseError, OSError, asyncio.IncompleteReadError, ValueError) as err:
        record.error = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
    if record.error:
        record.end_s = None
    return record


async def _exchange(endpoint: Endpoint, request: Request, workload: Workload, start: float,
                    record: RequestRecord) -> None:
    payload = json.dumps(request_body(endpoint, request, workload)).encode()
    reader, writer = await _connect(endpoint)
    try:
        writer.write(f"POST {endpoint.path} HTTP/1.1\r\nHost: {endpoint.host}:{endpoint.port}\r\n"
                     f"Content-Type: application/json\r\nAccept: text/event-stream, application/json\r\n"
                     f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)
        await writer.drain()
        record.status, headers = await _head(reader)
        if record.status != 200:
            raise ResponseError(f"HTTP {record.status}")
        texts: list[str] = []
        usage: int | None = None
        if workload.stream:
            pending = b""

            def take(raw: bytes, now: float) -> None:
                nonlocal usage
                for line in raw.split(b"\n"):
                    value = line[5:].strip() if line.startswith(b"data:") else b"[DONE]"
                    if value == b"[DONE]":  # (and comments, event names, ids)
                        continue
                    event = json.loads(value)
                    if not isinstance(event, dict):
                        raise ResponseError("an event that is not a JSON object")
                    if text := _content(event):
                        texts.append(text)
                        record.chunks_s.append(now)
                    if isinstance(event.get("usage"), dict):
                        usage = event["usage"].get("completion_tokens", usage)

            async for data in _body(reader, headers):
                now = time.perf_counter() - start
                pending += data.replace(b"\r", b"")
                *events, pending = pending.split(b"\n\n")
                for raw in events:
                    take(raw, now)
            take(pending, time.perf_counter() - start)  # a last event the server did not end with a blank line
        else:
            body = b"".join([data async for data in _body(reader, headers)])
            event = json.loads(body)
            if not isinstance(event, dict):
                raise ResponseError("a response that is not a JSON object")
            text = _content(event)
            if text:
                texts.append(text)
                record.chunks_s.append(time.perf_counter() - start)
            usage = (event.get("usage") or {}).get("completion_tokens")
            if not isinstance(usage, int):  # no usage and one chunk: its words (no tokenizer here)
                usage = len(text.split())
        record.end_s = time.perf_counter() - start
        record.text = "".join(texts)[:MAX_TEXT_CHARS]
        record.output_tokens = int(usage) if isinstance(usage, int) else len(record.chunks_s)
        if not record.chunks_s:
            raise ResponseError("the response carried no text")
    finally:
        writer.close()


async def run(endpoint: Endpoint, requests: Sequence[Request], workload: Workload, timeout_s: float = 60.0,
              warmup: Sequence[Request] = ()) -> tuple[list[RequestRecord], float]:
    """Send `warmup` one by one (not recorded), then `requests` as the workload's arrival profile says; the
    records in request order and the workload's start (a perf_counter reading, the records' zero)."""
    for request in warmup:
        await send(endpoint, request, workload, time.perf_counter(), timeout_s)
    cap = asyncio.Semaphore(workload.concurrency) if workload.concurrency else None
    start = time.perf_counter()

    async def one(request: Request) -> RequestRecord:
        delay = start + request.at_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if cap is None:
            return await send(endpoint, request, workload, start, timeout_s)
        async with cap:
            return await send(endpoint, request, workload, start, timeout_s)

    records = await asyncio.gather(*(one(r) for r in requests))
    return list(records), start


def run_sync(endpoint: Endpoint, requests: Sequence[Request], workload: Workload, timeout_s: float = 60.0,
             warmup: Sequence[Request] = ()) -> list[RequestRecord]:
    """`run` on a loop of its own (the grader is synchronous); records' times count from the workload's start."""
    records, _ = asyncio.run(run(endpoint, requests, workload, timeout_s, warmup))
    return records
