"""The agent's terminal: a tmux session inside the sandbox, driven through `sandbox.exec`.

The session is a 160x40 login bash started in the sandbox's working directory. Keystrokes are sent as the model wrote
them: a whole string that is a tmux key name (`C-c`, `C-d`, `Escape`, `Up`, ...) is sent as that key,
anything else is typed literally, so a command runs only if its keystrokes end with a newline.
Reading returns what was written since the previous read: the full scrollback is captured and the
previous capture is looked up at its start; when it cannot be found (a full-screen program took the
screen, the history rolled over, the capture was too large to transfer) the visible screen is returned
instead. The history keeps what terminus-2's pane keeps (2,000 lines; `history_lines` sets more, so that a
huge output shows as new output); `limit_output` keeps the first and last halves of an oversized
observation, as terminus-2 does.
"""
from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass

from harness.sandbox.interface import ExecResult, Sandbox, SandboxError

SESSION = "terminus"
WIDTH, HEIGHT = 160, 40
# What terminus-2's pane keeps: it raises the global history-limit to 10 million only after creating its
# session, and tmux applies the limit to panes created later, so its one pane keeps tmux's default 2,000.
HISTORY_LINES = 2_000
SEND_CHUNK = 16_000  # characters per send-keys argument, well under the kernel's 128 KiB per argument
_SEPARATOR = "--8<-- optrunner terminus capture --8<--"

_NAMED_KEYS = ("Enter|Escape|Tab|BTab|BSpace|Space|Up|Down|Left|Right|Home|End|PageUp|PageDown|PgUp|PgDn|"
               "NPage|PPage|Insert|IC|DC|Delete|F[1-9]|F1[0-2]")
_KEY_NAME = re.compile(rf"(?:[CMS]-)*(?:{_NAMED_KEYS})|(?:[CMS]-)+\S")


def is_key_name(keys: str) -> bool:
    """True when tmux would read the whole string as one key (`C-c`), not as text to type."""
    return bool(_KEY_NAME.fullmatch(keys))


@dataclass(frozen=True)
class Capture:
    screen: str  # the visible pane
    buffer: str  # scrollback and screen, trailing blank lines removed
    complete: bool  # False when the capture was too large to transfer whole


def new_output(previous: str | None, current: str) -> str | None:
    """What `current` gained since `previous`, by terminus-2's rule: find the previous read (stripped) in
    the current buffer; if it spans several lines, what follows its last line break (offset taken within
    the previous read, so it fits when the previous read is still at the top), otherwise everything from
    where it was found. None when the previous read is not there (it scrolled out of the history)."""
    if previous is None:
        return None
    before = previous.strip()
    if before not in current:
        return None
    return current[before.rfind("\n"):] if "\n" in before else current[current.index(before):]


def limit_output(text: str, limit_bytes: int = 10_000) -> str:
    """At most `limit_bytes` of UTF-8: the first and last halves, with the omitted count between."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit_bytes:
        return text
    half = limit_bytes // 2
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[-half:].decode("utf-8", errors="ignore")
    omitted = len(data) - 2 * half
    return f"{head}\n[... output limited to {limit_bytes} bytes; {omitted} bytes in the middle omitted ...]\n{tail}"


def terminal_text(previous: str | None, capture: Capture) -> str:
    """The observation the model reads: the new output, or the screen when that is unknown or empty."""
    new = new_output(previous, capture.buffer) if capture.complete else None
    if new is not None and new.strip():
        return "New Terminal Output:\n" + new  # terminus-2's headers, word for word
    return "Current Terminal Screen:\n" + capture.screen.rstrip()


class TmuxSession:
    """One tmux session in one sandbox. Every method is one `sandbox.exec` round trip."""

    def __init__(self, sandbox: Sandbox, name: str = SESSION, history_lines: int = HISTORY_LINES) -> None:
        self.sandbox, self.history_lines = sandbox, history_lines
        self.name = name
        self.target = shlex.quote(name)

    def start(self, timeout: float = 30.0, cwd: str | None = None) -> Capture:
        """Start the shell (in `cwd`, else the work tree) and wait (up to 5 s) for its prompt; returns the first
        capture."""
        # history-limit applies to panes created after it is set, hence set before new-session.
        started = self.sandbox.exec(
            f"tmux -u start-server \\; set-option -g history-limit {self.history_lines} \\; "
            f"new-session -d -s {self.target} -x {WIDTH} -y {HEIGHT} -c {shlex.quote(cwd or self.sandbox.workdir)} "
            "'bash --login'",
            timeout=timeout)
        if started.exit_code != 0:
            raise RuntimeError(f"could not start tmux in the sandbox: {started.output.strip()[-300:]}")
        deadline = time.monotonic() + 5.0
        capture = self.capture()
        while not capture.buffer.strip() and time.monotonic() < deadline:
            time.sleep(0.1)
            capture = self.capture()
        return capture

    def send(self, keystrokes: str, wait_s: float = 0.0, timeout: float = 60.0) -> Capture:
        """Send keystrokes, wait `wait_s` inside the container (saves a round trip), then capture."""
        parts = self._send_commands(keystrokes)
        for part in parts[:-1]:  # huge pastes: several execs, each under the argument-size limit
            self._run(part, timeout)
        script = f"{parts[-1]}; sleep {wait_s:.3f}; {self._capture_command()}"
        return self._parse_capture(self._run(script, timeout + wait_s))

    def send_only(self, keystrokes: str, timeout: float = 60.0) -> None:
        """Send without reading, for a caller that waits on its own (long, interruptible waits)."""
        for part in self._send_commands(keystrokes):
            self._run(part, timeout)

    def capture(self, timeout: float = 30.0) -> Capture:
        return self._parse_capture(self._run(self._capture_command(), timeout))

    def cwd(self) -> str | None:
        """The directory of the pane's shell (None when tmux cannot say)."""
        try:
            done = self.sandbox.exec(f"tmux display-message -p -t {self.target} '#{{pane_current_path}}'", timeout=10)
        except SandboxError:
            return None
        return done.output.strip() or None if done.exit_code == 0 else None

    def close(self) -> None:
        try:
            self.sandbox.exec(f"tmux kill-session -t {self.target}", timeout=10)
        except SandboxError:  # the container may already be gone; nothing left to kill then
            pass

    # -- commands
    def _send_commands(self, keystrokes: str) -> list[str]:
        keystrokes = keystrokes.replace("\x00", "")  # cannot travel in an argument
        if is_key_name(keystrokes):
            return [f"tmux send-keys -t {self.target} {shlex.quote(keystrokes)}"]
        chunks = [keystrokes[i:i + SEND_CHUNK] for i in range(0, len(keystrokes), SEND_CHUNK)] or [""]
        sends = [f"tmux send-keys -t {self.target} -l -- {shlex.quote(c)}" for c in chunks if c]
        groups = [" && ".join(sends[i:i + 4]) for i in range(0, len(sends), 4)]
        return groups or ["true"]

    def _capture_command(self) -> str:
        # Screen first: if the transfer is capped, the cut falls in the (long) scrollback.
        return (f"tmux capture-pane -p -t {self.target}; printf '%s\\n' {shlex.quote(_SEPARATOR)}; "
                f"tmux capture-pane -p -S - -t {self.target}")

    def _run(self, script: str, timeout: float) -> ExecResult:
        done = self.sandbox.exec(script, timeout=timeout)
        if done.exit_code != 0:
            raise RuntimeError(f"tmux command failed ({done.exit_code}): {done.output.strip()[-300:]}")
        return done

    @staticmethod
    def _parse_capture(done: ExecResult) -> Capture:
        screen, found, buffer = done.output.partition(_SEPARATOR + "\n")
        return Capture(screen=screen.rstrip(), buffer=buffer.rstrip(), complete=bool(found) and not done.truncated)
