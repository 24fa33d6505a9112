"""The persistent shell behind `execute_bash`: one interactive bash per episode, on a tty in the container.

Why this shape: OpenHands keeps one bash alive for the whole episode, so `cd`, exported variables and an
activated virtualenv persist, and a long command can be watched, typed into or interrupted. A new
`docker exec` per command would lose all that and cost ~10x more, so commands are written into the
already-open shell through the exec socket, and completion is read off the prompt: PS1 carries a
random per-shell marker with the exit code and `$PWD`. Each command is wrapped as `{ :; CMD\n}` so a
multi-line command is parsed and run as one unit (one prompt, one exit code, heredocs intact).

The marker must survive what agents do to a shell: `source /etc/bash.bashrc` (Debian sets PS1 there) or a
nested `bash`. As OpenHands does, PROMPT_COMMAND re-asserts PS1 before every prompt, and both are exported
so a nested bash prints the marker too. If the marker still does not come back (PROMPT_COMMAND replaced),
a silent shell with no child process whose output ends like a prompt is at a foreign prompt: the marker is
re-installed, and the shell is restarted when even that fails. The hard per-action timeout runs from when
the command was sent, so calls that only look at a running command's output do not extend it.

The terminal is set to `-echo` (no input echoed back), `-icanon` (no 4 KiB line limit; bytes reach the
reader as typed), `-onlcr` (plain \\n), and keeps `isig`, so C-c still interrupts the foreground job.
"""
from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass

from harness.sandbox.interface import TESTBED, Sandbox, Stream
from scaffolds.codeact.terminal import render

CONTROL_KEYS = {"C-c": b"\x03", "C-d": b"\x04", "C-z": b"\x1a"}
SHELL_ENV = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat"}
START_TIMEOUT_S = 20.0
INTERRUPT_WAIT_S = 5.0  # how long C-c gets to bring the prompt back before the shell is replaced
MIN_BUFFER = 65_536  # bytes kept per call at the least, whatever the sandbox's output cap
FOREIGN_PROMPT = re.compile(r"[#$>%] ?$")  # how the last line of a shell prompt ends
RESTART_NOTE = ("[The shell had to be restarted: the working directory, environment variables and any "
                "activated environment are back to their defaults.]")


@dataclass
class ShellResult:
    output: str
    exit_code: int  # -1 while the command is still running
    cwd: str
    running: bool = False  # the command goes on after this call returned
    timed_out: bool = False  # the hard per-action timeout fired
    error: bool = False  # the call was refused (nothing was sent to the shell)
    note: str = ""


class ShellError(Exception):
    pass


class PersistentShell:
    def __init__(self, sandbox: Sandbox, no_output_timeout_s: float = 30.0, workdir: str = TESTBED) -> None:
        self.sandbox, self.no_output_timeout_s, self.workdir = sandbox, no_output_timeout_s, workdir
        # The sandbox's one output cap, as on every exec path; the observation shows far less anyway.
        self.cap = max(MIN_BUFFER, sandbox.limits.max_output_bytes)
        self.keep_head = self.cap // 4  # when over the cap, bytes [keep_head, ...) are cut first
        self.stream: Stream | None = None
        self.running = False
        self.cwd = workdir
        self.pid = 0
        self._pending = b""  # bytes that arrived after a prompt, shown with the next call
        self._prompt_setup = ""
        self._sent_at = self._deadline = 0.0  # when the running command was sent; its hard deadline

    # ---------------------------------------------------------------- lifetime
    def start(self) -> None:
        token = secrets.token_hex(6)
        # \r tolerated: a nested interactive bash's readline may turn output newline translation back on.
        self._marker = re.compile(rb"\r?\n?__CA_" + token.encode() + rb"_(-?\d+)_(.*?)_CA__\r?\n")
        self.stream = self.sandbox.open_stream(["bash", "--login", "--noediting", "-i"], tty=True, env=SHELL_ENV,
                                               workdir=self.workdir)
        # PS1 reads the exit code PROMPT_COMMAND saved: by prompt time `$?` is PROMPT_COMMAND's own.
        self._prompt_setup = (f"export __CA_PS1='\\n__CA_{token}_${{__ca_rc}}_${{PWD}}_CA__\\n'; "
                              "export PROMPT_COMMAND='__ca_rc=$?; PS1=$__CA_PS1; PS2='")
        setup = f"stty -echo -icanon -onlcr -ixon -iexten cols 1000 rows 50 2>/dev/null; echo __PID_$$_; " \
                f"{self._prompt_setup}\n"
        self.stream.send(setup.encode())
        deadline = time.monotonic() + START_TIMEOUT_S
        buf = b""
        while not self._marker.search(buf):
            if time.monotonic() > deadline:
                raise ShellError(f"the shell did not start within {START_TIMEOUT_S:g} s: {buf[-300:]!r}")
            buf += self.stream.recv(deadline - time.monotonic())
        pid = re.search(rb"__PID_(\d+)_", buf)
        self.pid = int(pid.group(1)) if pid else 0
        self.running, self.cwd, self._pending = False, self.workdir, b""

    def close(self) -> None:
        if self.stream is None:
            return
        try:
            if self.running:
                self.stream.send(b"\x03")
            self.stream.send(b"exit\n")
        except OSError:
            pass  # the shell is gone already
        self.stream.close()
        self.stream = None

    def restart(self) -> None:
        """Replace a wedged or exited shell: kill its whole session in the container, start a new one."""
        if self.pid:
            self.sandbox.exec(f"pkill -KILL -s {self.pid} || kill -KILL -- -{self.pid}", timeout=15)
        self.close()
        self.start()

    # ---------------------------------------------------------------- one call
    def run(self, command: str, is_input: bool, timeout: float) -> ShellResult:
        """Send `command` (or input, or a control key) and wait for the prompt, for `no_output_timeout_s`
        of silence, or for the hard `timeout` (counted from when the command was sent), whichever is first.
        As upstream: while a command runs, only an empty command (more output) or `is_input="true"` (text or a
        control key such as C-c for it) is accepted; with nothing running, neither is."""
        if self.stream is None:
            self.start()
        assert self.stream is not None
        key = CONTROL_KEYS.get(command.strip())
        if self.running:
            if command.strip() and not is_input:
                return self._refuse(
                    f'The command "{command}" was NOT run: the previous command is still running. Send an '
                    'empty command to see more of its output, or set is_input="true" to send text or a key '
                    '(e.g. C-c to interrupt it) to the running process.')
        else:
            if is_input:
                return self._refuse("No command is running, so there is nothing to send input or keys to.")
            if not command.strip():
                return self._refuse("No command is running, so there is no further output to show.")
        try:
            if not self.running:
                self.stream.send(b"{ :; " + command.encode() + b"\n}\n")
                self.running = True
                self._sent_at = time.monotonic()
                self._deadline = self._sent_at + timeout
            elif key is not None:
                self.stream.send(key)
            elif command:
                self.stream.send(command.encode() + b"\n")
            return self._wait(min(self._deadline, time.monotonic() + timeout))
        except (EOFError, OSError):  # the shell is gone; a restart that fails too raises SandboxError
            self.restart()
            return ShellResult("[The shell exited.]", -1, self.cwd, note=RESTART_NOTE)

    def _refuse(self, message: str) -> ShellResult:
        return ShellResult(message, -1 if self.running else 0, self.cwd, running=self.running, error=True)

    def _wait(self, deadline: float) -> ShellResult:
        buf, code = self._read(deadline)
        if code is None and self.running and time.monotonic() < deadline and self._lost_marker(buf):
            more, code = self._recover_marker()
            buf += more
        if code is not None:
            return ShellResult(buf, code, self.cwd)
        if self.running and time.monotonic() < deadline:
            return ShellResult(buf, -1, self.cwd, running=True, note=(
                f"[The command has printed nothing new for {self.no_output_timeout_s:g} seconds and is still "
                "running. Send an empty command to wait for more output, or send text or a key such as C-c "
                "with is_input=\"true\".]"))
        # The hard timeout: interrupt, and replace the shell if even that does not bring the prompt back.
        assert self.stream is not None
        self.stream.send(b"\x03")
        more, code = self._read(time.monotonic() + INTERRUPT_WAIT_S)
        note = (f"[The command was stopped after {time.monotonic() - self._sent_at:.0f} seconds: it reached the "
                "time limit for one action.]")
        if code is None:
            self.restart()
            return ShellResult(buf + more, -1, self.cwd, timed_out=True, note=note + "\n" + RESTART_NOTE)
        return ShellResult(buf + more, code, self.cwd, timed_out=True, note=note)

    def _lost_marker(self, output: str) -> bool:
        """The shell sits at a prompt that is not ours: its output ends like a prompt, and it has no child
        process (a builtin `read` waiting for input has none either, but prints no prompt by default)."""
        if not self.pid or not FOREIGN_PROMPT.search(output[-200:]):
            return False
        probe = self.sandbox.exec(f"cat /proc/{self.pid}/task/{self.pid}/children", timeout=15)
        return probe.exit_code == 0 and not probe.output.strip()

    def _recover_marker(self) -> tuple[str, int | None]:
        """Put the marker back (keeping the last exit code) and read up to it; restart when that fails."""
        assert self.stream is not None
        self.stream.send(f"{{ __ca_x=$?; {self._prompt_setup}; (exit $__ca_x); }}\n".encode())
        more, code = self._read(time.monotonic() + INTERRUPT_WAIT_S)
        if code is None:
            self.restart()
            return more + "\n" + RESTART_NOTE, -1
        return more, code

    def _read(self, deadline: float) -> tuple[str, int | None]:
        """Output until the prompt (then the exit code), silence, or the `deadline` (then None)."""
        assert self.stream is not None
        now = time.monotonic()
        last_output = now
        buf, self._pending = bytearray(self._pending), b""
        dropped = 0
        scanned = 0
        while True:
            match = self._marker.search(buf, max(0, scanned - 4096))
            if match:
                self.running = False
                self.cwd = match.group(2).decode("utf-8", errors="replace")
                self._pending = bytes(buf[match.end():])
                return _text(buf[:match.start()], dropped, self.keep_head), int(match.group(1))
            scanned = len(buf)
            now = time.monotonic()
            wait = min(last_output + self.no_output_timeout_s, deadline) - now
            if wait <= 0:
                return _text(buf, dropped, self.keep_head), None
            chunk = self.stream.recv(wait)
            if chunk:
                buf += chunk
                last_output = time.monotonic()
                if len(buf) > self.cap:  # keep head and tail; the middle would be cut from view anyway
                    cut = len(buf) - self.cap // 2
                    del buf[self.keep_head:self.keep_head + cut]
                    dropped += cut
                    scanned = len(buf) - len(chunk)


def _text(data: bytes | bytearray, dropped: int, keep_head: int) -> str:
    def decode(part: bytes | bytearray) -> str:
        return render(bytes(part).decode("utf-8", errors="replace"))  # never fail on binary output

    if not dropped:
        return decode(data)
    return f"{decode(data[:keep_head])}\n[... {dropped} bytes of output dropped ...]\n{decode(data[keep_head:])}"
