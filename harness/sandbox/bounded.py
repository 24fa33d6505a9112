"""Reading what a sandbox holds without letting it decide how much this process takes in.

Files in a sandbox are the agent's (or a patch's): a log can be a sparse file of gigabytes that costs it no
disk, a reward file can be endless. Every read from a sandbox states a cap (`read_file(path, max_bytes)`,
READ_CAP by default); the size is the engine's (the tar header of its archive) or the bytes counted here,
never what the sandbox's own tools report, and past the cap nothing more is read: `FileTooLarge` carries the
first `max_bytes`, for a caller that keeps a cut copy.
"""
from __future__ import annotations

import os
import select
import subprocess
import tarfile
import time
from collections.abc import Iterator, Mapping

from harness.sandbox.interface import FileTooLarge


class Chunks:
    """A read-only file over an iterator of byte chunks (the engine's archive stream), read forward only."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._buffer = chunks, b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        if size < 0:
            out, self._buffer = self._buffer, b""
        else:
            out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out


def archive_member(chunks: Iterator[bytes], path: str, max_bytes: int) -> bytes:
    """The one regular file of an engine's archive stream (`docker cp`'s tar), at most `max_bytes` of it taken
    in: the header's size decides. IsADirectoryError for anything but a regular file; tarfile.TarError for an
    archive cut short (the file shrank while the engine read it)."""
    with tarfile.open(fileobj=Chunks(chunks), mode="r|") as tar:  # type: ignore[call-overload]
        member = tar.next()
        if member is None or not member.isfile():
            raise IsADirectoryError(path)
        extracted = tar.extractfile(member)
        assert extracted is not None
        data = extracted.read(min(member.size, max_bytes + 1))
        if len(data) < min(member.size, max_bytes + 1):
            raise tarfile.ReadError(f"{path}: the archive ended early")
        if member.size > max_bytes:
            raise FileTooLarge(path, member.size, max_bytes, data[:max_bytes])
        return data


def bounded_output(argv: list[str], env: Mapping[str, str], max_bytes: int, timeout: float,
                   path: str = "its output") -> tuple[int, bytes, bytes]:
    """Run `argv` (which prints the file `path`); (exit status, stdout, stderr), with at most `max_bytes` of
    stdout and 64 KiB of stderr taken in: FileTooLarge once stdout goes past `max_bytes` (the process killed,
    the rest never read); TimeoutExpired after `timeout` seconds."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(env))
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    limits = {proc.stdout.fileno(): (out, max_bytes + 1), proc.stderr.fileno(): (err, 65536)}
    open_fds = set(limits)
    deadline = time.monotonic() + timeout
    try:
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(argv, timeout)
            ready, _, _ = select.select(list(open_fds), [], [], left)
            for fd in ready:
                buffer, cap = limits[fd]
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.discard(fd)
                    continue
                buffer += chunk[:cap - len(buffer)]  # (stderr past its cap: read and dropped)
                if len(buffer) >= cap and fd == proc.stdout.fileno():  # enough: the rest is never read
                    open_fds.clear()
                    break
        if len(out) > max_bytes:  # (the pipes closed below: a writer in the sandbox gets EPIPE and ends)
            raise FileTooLarge(path, len(out), max_bytes, bytes(out[:max_bytes]))
        return proc.wait(timeout=max(0.1, deadline - time.monotonic())), bytes(out), bytes(err)
    finally:
        proc.stdout.close()
        proc.stderr.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
