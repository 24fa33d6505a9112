"""Stopping on SIGTERM and SIGHUP the way Ctrl-C stops.

Long runs are ended by SIGTERM (Slurm, Kubernetes, `timeout`) or by SIGHUP (a closed terminal) as often as
by Ctrl-C, and each deserves the same care: the first signal stops the work in order (what finished is
kept, containers are removed, reports are written) and the process exits with the shell's code for that
signal (130, 143, 129); a second signal removes this process's containers and exits at once.

`install()` puts that in place for a command: by default the first signal raises `Stopped` in the main
thread, a `KeyboardInterrupt`, so every existing Ctrl-C path handles SIGTERM and SIGHUP too; the runner
passes its own first-signal handler instead.
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NAMES: dict[int, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


class Stopped(KeyboardInterrupt):
    """The command was asked to stop by a signal; `code` is the exit code the shell expects."""

    def __init__(self, signum: int) -> None:
        super().__init__(NAMES.get(signum, f"signal {signum}"))
        self.signum = signum
        self.code = 128 + signum


def exit_code(exc: BaseException) -> int:
    """The exit code for an interrupt: the signal's, 130 for a plain KeyboardInterrupt."""
    return exc.code if isinstance(exc, Stopped) else 130


def remove_my_sandboxes() -> None:
    """The second signal's cleanup: every sandbox this process started (Docker's and bwrap's alike), whatever
    it was doing."""
    try:
        from harness.sandbox.providers import remove_mine
        remove_mine()
    except Exception:  # noqa: BLE001 - exiting anyway; `harness cleanup` removes what is left
        pass


_stopping: list[int] = []  # the first stopping signal, once one came


def _ignore_late() -> None:
    """Registered at import, so it runs after the other exit handlers: once a signal stopped the process,
    its exit code is decided. Python puts the default handlers back late in its shutdown, where a second
    signal would kill the process by that signal (exit -15, not 143); from here on it is ignored (the
    rest of the shutdown cannot wait on anything; before it, the second signal still exits at once)."""
    if _stopping:
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


atexit.register(_ignore_late)


def install(first: Callable[[int], None] | None = None,
            second: Callable[[], None] = remove_my_sandboxes) -> Callable[[], None]:
    """Handle SIGINT, SIGTERM and SIGHUP from now on (main thread only); returns a function that puts the
    previous handlers back, unless a signal came: then the process is on its way out, and another signal
    must still end it at once with the first one's code. `first(signum)` runs on the first signal
    (default: raise `Stopped`)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    state = {"signum": 0}

    def handler(signum: int, _frame: Any) -> None:
        if state["signum"]:
            print(f"\nsecond signal ({NAMES.get(signum, signum)}): removing sandboxes and exiting now",
                  file=sys.stderr, flush=True)
            second()
            os._exit(128 + state["signum"])
        state["signum"] = signum
        _stopping.append(signum)
        if first is None:
            raise Stopped(signum)
        first(signum)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}

    def restore() -> None:
        if state["signum"]:
            return
        for sig, old in previous.items():
            signal.signal(sig, old)
    return restore
