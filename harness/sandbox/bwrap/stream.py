"""A byte stream to a long-lived process in a bubblewrap sandbox: a pipe, or a pseudo-terminal."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from typing import IO

from harness.sandbox.interface import OutputCapture


class BwrapStream:
    """Reads and writes a process started (through nsenter) in the sandbox. With a tty the process gets a
    pseudo-terminal as its controlling terminal (a shell's job control works); without one, its stdout and
    stderr arrive merged on a pipe."""

    def __init__(self, argv: list[str], env: dict[str, str], tty: bool) -> None:
        self.closed = False
        self._code: int | None = None
        if tty:
            pid, fd = _spawn_tty(argv, env)
            self._pid, self._proc, self._read_fd, self._write_fd = pid, None, fd, fd
        else:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
            assert proc.stdin is not None and proc.stdout is not None
            self._pid, self._proc = proc.pid, proc
            self._read_fd, self._write_fd = proc.stdout.fileno(), proc.stdin.fileno()

    def fileno(self) -> int:
        return self._read_fd

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._write_fd, view)
            except OSError as err:
                raise EOFError(f"the process behind the stream has exited ({err.strerror})") from None
            view = view[written:]

    def recv(self, timeout: float) -> bytes:
        """What arrived within `timeout` seconds (b"" if nothing did). EOFError when the process is gone."""
        deadline = time.monotonic() + max(0.0, timeout)
        ready, _, _ = select.select([self._read_fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return b""
        try:
            chunk = os.read(self._read_fd, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            chunk = b""
        if not chunk:
            raise EOFError("the process behind the stream has exited")
        return chunk

    def exit_code(self) -> int | None:
        """The process's exit code, or None while it runs."""
        if self._code is None:
            if self._proc is not None:
                self._code = self._proc.poll()
            else:
                done, status = os.waitpid(self._pid, os.WNOHANG)
                if done:
                    self._code = os.waitstatus_to_exitcode(status)
        return self._code

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._proc is not None:
            for pipe in (self._proc.stdin, self._proc.stdout):
                if pipe is not None:
                    pipe.close()
        else:
            os.close(self._read_fd)
            if self._code is not None:  # reaped already: its pid may be another process's by now
                return
            try:  # the shell got SIGHUP with its terminal; reap it when it has gone
                os.kill(self._pid, signal.SIGHUP)
                os.waitpid(self._pid, os.WNOHANG)
            except (ProcessLookupError, ChildProcessError):
                pass


def _spawn_tty(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
    """Fork `argv` on a new pseudo-terminal that becomes its controlling terminal (pty.fork's way)."""
    pid, fd = os.forkpty()
    if pid == 0:  # the child: only exec (or exit) after a fork in a threaded process
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def drain(pipe: IO[bytes], capture: OutputCapture) -> None:
    """Read a command's output pipe to its end into `capture` (a thread per command)."""
    while chunk := pipe.read1(65536):  # type: ignore[attr-defined]  # (a Popen pipe: a BufferedReader)
        capture.add(chunk)
