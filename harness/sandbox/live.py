"""This process's live sandboxes, of every provider: one registry, closed at exit, on SIGINT/SIGTERM (where
no other handler is in place) and by a second stopping signal (harness.signals).

A provider tracks a sandbox from the moment it exists until it is really gone, with the function that ends
it, and names its sweep: what finds by label or record the sandboxes of this process that were never
tracked or whose close another thread had begun (a container the engine made while its answer was lost, a
worker closing its rollout's sandbox while the process exits). `close_all` ends the tracked ones, then runs
every sweep once.
"""
from __future__ import annotations

import atexit
import signal
import sys
import threading
from collections.abc import Callable

_live: dict[str, Callable[[], None]] = {}  # provider:key -> what ends that sandbox
_sweeps: dict[str, Callable[[], object]] = {}  # provider -> its sweep of this process's sandboxes
_lock = threading.RLock()  # re-entrant: the signal handler may interrupt a holder
_hooks = False


def track(provider: str, key: str, close: Callable[[], None], sweep: Callable[[], object]) -> None:
    """Sandbox `key` of `provider` is live; `close` ends it, `sweep` ends every one of this process's."""
    _install_hooks()
    with _lock:
        _live[f"{provider}:{key}"] = close
        _sweeps.setdefault(provider, sweep)


def untrack(provider: str, key: str) -> None:
    with _lock:
        _live.pop(f"{provider}:{key}", None)


def tracked() -> list[str]:
    """The live sandboxes (`provider:key`), for a test or a message."""
    with _lock:
        return sorted(_live)


def close_all() -> set[str]:
    """End every live sandbox, then let each provider used sweep what is left of this process's; the
    providers swept. Nothing raises: the process is exiting, and `harness cleanup` removes what could not
    be."""
    with _lock:
        closers, swept = list(_live.values()), dict(_sweeps)
        _live.clear()
    for close in closers:
        try:
            close()
        except Exception:  # noqa: BLE001 - the next one still gets its turn
            pass
    for sweep in swept.values():
        try:
            sweep()
        except Exception:  # noqa: BLE001 - an engine gone away: nothing more can be done here
            pass
    return set(swept)


def _on_signal(signum: int, _frame: object) -> None:
    close_all()
    # Then behave as the default would: Ctrl-C raises, SIGTERM exits with the conventional code.
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    sys.exit(128 + signum)


def _install_hooks() -> None:
    global _hooks
    if _hooks:
        return
    _hooks = True
    atexit.register(close_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(sig, _on_signal)
