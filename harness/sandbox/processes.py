"""Fresh processes in a sandbox, each started without a `docker exec` of its own.

Both the mini-swe-agent style scaffold (every command a new `bash -lc`) and the grader (every timed
test run a new Python process) need a fresh process per command. Starting each through `docker exec`
costs ~70 ms of Docker API round trips, more than some timed experiments take. Instead one small
launcher loop runs in the container on an open exec stream; for each command it starts a fresh
`timeout -k 5 T bash FLAGS CMD` in the working directory (stdin from /dev/null, stderr merged into
stdout) and then writes a marker carrying the exit code. A command is sent base64-encoded on one
line, so any bytes survive. If the launcher wedges or dies, it is restarted; if no stream can be
opened, `sandbox.exec` is used instead.
"""
from __future__ import annotations

import base64
import secrets
import time
from typing import Any

from harness.sandbox.interface import TESTBED, ExecResult, OutputCapture, Sandbox, SandboxError

KILL_GRACE = 5.0  # timeout(1)'s -k: TERM, then KILL after this many seconds
BACKSTOP_S = 15.0  # extra host-side wait before the launcher is declared wedged
PROBE_AFTER_S = 0.5  # a lost launcher: how long before asking whether the sandbox itself is gone
LAUNCHER = r"""
while IFS=' ' read -r id t b64; do
  printf '%s' "$b64" | base64 -d > /tmp/.optrunner-cmd
  ( cd "$WORKDIR" && exec timeout -k KILL "$t" bash $SHELL_FLAGS "$(cat /tmp/.optrunner-cmd)" ) < /dev/null 2>&1
  printf '\036optrunner-done:%s:%d\036' "$id" "$?"
done
""".replace("KILL", f"{KILL_GRACE:g}")


class FreshProcesses:
    """Runs commands, each in a new bash process, over one long-lived launcher.

    login=True runs `bash -lc` (what an agent's shell gets), False `bash --noprofile --norc -c` (the grader's:
    no start-up file of the sandbox's runs).
    """

    def __init__(self, sandbox: Sandbox, env: dict[str, str], workdir: str = TESTBED, login: bool = True) -> None:
        self.sandbox, self.env, self.workdir = sandbox, env, workdir
        self.login = login
        self.flags = "-lc" if login else "--noprofile --norc -c"
        self._stream: Any = None

    def _open(self) -> Any:
        if self._stream is None:
            env = {**self.env, "WORKDIR": self.workdir, "SHELL_FLAGS": self.flags}
            self._stream = self.sandbox.open_stream(["bash", "--noprofile", "--norc", "-c", LAUNCHER], tty=False,
                                                    env=env, workdir=self.workdir)
        return self._stream

    def run(self, command: str, timeout: float) -> ExecResult:
        try:
            stream = self._open()
        except (SandboxError, NotImplementedError):  # a sandbox without streams still works, just slower
            return self.sandbox.exec(command, timeout=timeout, cwd=self.workdir, env=self.env, login=self.login)
        token = secrets.token_hex(6)
        line = f"{token} {timeout:g} {base64.b64encode(command.encode()).decode()}\n"
        marker = f"\x1eoptrunner-done:{token}:".encode()
        started = time.monotonic()
        deadline = started + timeout + KILL_GRACE + BACKSTOP_S
        capture = OutputCapture(self.sandbox.limits.max_output_bytes)
        try:
            stream.send(line.encode())
            pending = bytearray()
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                pending += stream.recv(min(left, 1.0))
                at = pending.find(marker)
                if at >= 0:
                    end = pending.find(b"\x1e", at + len(marker))
                    if end < 0:
                        continue  # the exit code is still on its way
                    code = int(pending[at + len(marker):end])
                    body = bytes(pending[:at])
                    break
                keep = len(marker) + 16  # bytes that may hold the start of a marker
                if len(pending) > keep:
                    capture.add(bytes(pending[:-keep]))
                    del pending[:-keep]
        except (TimeoutError, EOFError, OSError, SandboxError):
            self.close()  # wedged or gone: the next command gets a fresh launcher
            # A sandbox that is gone raises SandboxError here: the infrastructure failed, not the agent's command.
            # (A killed container still answers for a moment after its processes died, hence the pause.)
            time.sleep(PROBE_AFTER_S)
            self.sandbox.exec(":", timeout=30)
            return ExecResult(capture.text() + "\n[the command could not be stopped: its launcher was restarted]", -1,
                              True, time.monotonic() - started, capture.truncated)
        capture.add(body)
        duration = time.monotonic() - started
        timed_out = code in (124, 137) and duration >= timeout * 0.98
        return ExecResult(capture.text(), code, timed_out, duration, capture.truncated)

    def close(self) -> None:
        if self._stream is not None:
            try:
                self._stream.close()
            finally:
                self._stream = None

