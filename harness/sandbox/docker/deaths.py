"""Why a sandbox's container stopped: its own processes, or something outside it.

A sandbox container runs `docker-init -- sleep infinity`. Nothing inside can kill docker-init (a pid
namespace's init gets no signal from inside that it does not handle), but killing its keep-alive
(`pkill -KILL -x sleep`, `kill -9 -1`) makes docker-init exit with 128+9: the same 137, the same state
(`exited`, not OOM-killed) as a `docker kill` from the host. An agent could so turn a bad attempt into an
infrastructure error and a fresh attempt. What tells the two apart is the engine's own account: every stop
from outside (`docker kill`/`stop`/`restart`/`rm -f`, a cleanup by label, a daemon shutting down, our own
backstop for a wedged exec) is a `kill` (or `stop`, `restart`, `destroy`) event of the container before its
`die`; a container whose processes ended it only `die`s.

The engine keeps only its last few hundred events (seconds' worth on a busy engine, and a model call takes
longer than that), so one watcher per process follows the event stream of this process's sandboxes live,
from before each one starts. When it cannot tell (its stream broke, the engine went away, no `die` came),
the stop counts as infrastructure, as before: the runner's retry cap bounds what that leaves open.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import Container

from harness.sandbox.docker.containers import OWNER_LABEL, owner_id
from harness.sandbox.interface import SandboxError, SandboxKilledFromInside

ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.ConnectionError)
ACTIONS = ("start", "kill", "stop", "restart", "die", "oom", "destroy")  # the events the watcher keeps
OUTSIDE = frozenset({"kill", "stop", "restart", "destroy"})  # what only a request to the engine makes
DIE_WAIT_S = 15.0  # how long a verdict waits for the engine's `die` event (moments; more on a loaded machine)
SETTLE_S = 3.0  # how long a stopped container may still report `running` before it counts as running
Event = tuple[str, dict[str, str]]  # (action, attributes)


def verdict(events: list[Event]) -> str | None:
    """How the container's own processes ended its last run (one line), from its events in order; None when
    something outside stopped it or it has not stopped."""
    dies = [i for i, (action, _) in enumerate(events) if action == "die"]
    if not dies:
        return None
    starts = [i for i, (action, _) in enumerate(events[:dies[-1]]) if action == "start"]
    run = [action for action, _ in events[(starts[-1] + 1 if starts else 0):dies[-1]]]
    if OUTSIDE & set(run):
        return None
    code = events[dies[-1]][1].get("exitCode", "?")
    if "oom" in run:
        return f"its processes ran out of memory and its keep-alive was killed (exit code {code})"
    return f"a process inside it killed its keep-alive (exit code {code}), with no stop or kill from outside"


class _Watcher:
    """One engine's event stream for this process's sandboxes, read by a daemon thread."""

    def __init__(self, client: docker.DockerClient) -> None:
        self._client = client
        self._changed = threading.Condition()
        self._events: dict[str, list[Event]] = {}  # container id -> its events since it was followed
        self._blind: set[str] = set()  # followed while the stream broke: events may be missing
        self._known: dict[str, str] = {}  # verdicts given (a stopped container's do not change)
        self._stream: Any = None

    def follow(self, container_id: str) -> None:
        """Keep `container_id`'s events from now on; returns once the stream is live (call before it starts)."""
        with self._changed:
            self._events[container_id] = []
            if self._stream is not None:
                return
            self._stream = self._client.api.events(decode=True, filters={
                "type": "container", "event": list(ACTIONS), "label": [f"{OWNER_LABEL}={owner_id()}"]})
            threading.Thread(target=self._read, args=(self._stream,), name="docker-events", daemon=True).start()

    def forget(self, container_id: str) -> None:
        with self._changed:
            for kept in (self._events, self._known):
                kept.pop(container_id, None)
            self._blind.discard(container_id)

    def _read(self, stream: Any) -> None:
        try:
            for event in stream:
                actor = event.get("Actor") or {}
                found = self._events.get(event.get("id") or actor.get("ID") or "")
                if found is not None:
                    with self._changed:
                        found.append((str(event.get("Action") or event.get("status")), actor.get("Attributes") or {}))
                        self._changed.notify_all()
        except Exception:  # noqa: BLE001 - a broken stream (the engine went away): below
            pass
        with self._changed:  # whatever happened since is unknown: those containers' stops count as infrastructure
            if self._stream is stream:
                self._stream = None
                self._blind.update(self._events)
            self._changed.notify_all()

    def why_stopped(self, container_id: str) -> str | None:
        """verdict() of a stopped container, once its `die` has come (at most DIE_WAIT_S); None when unknown."""
        deadline = time.monotonic() + DIE_WAIT_S
        with self._changed:
            if container_id in self._known:
                return self._known[container_id] or None
            while True:
                events = self._events.get(container_id)
                if events is None or container_id in self._blind:
                    return None
                if any(action == "die" for action, _ in events):
                    self._known[container_id] = verdict(events) or ""
                    return self._known[container_id] or None
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)


_watchers: dict[int, _Watcher] = {}
_lock = threading.Lock()


def watcher(client: docker.DockerClient) -> _Watcher:
    with _lock:
        return _watchers.setdefault(id(client), _Watcher(client))


class _Box(Protocol):
    _client: docker.DockerClient
    container: Container


def failure(box: _Box, message: str) -> SandboxError:
    """The error for a command or transfer that failed in `box`'s container: SandboxKilledFromInside when the
    container stopped and its own processes did it (the agent's outcome), else SandboxError(message)."""
    # A container whose keep-alive just died still reports `running` for a moment: its state settles first.
    settle = time.monotonic() + SETTLE_S
    while True:
        try:
            box.container.reload()
        except ENGINE_ERRORS:
            return SandboxError(message)  # removed, or the engine is away: infrastructure
        if box.container.status not in ("running", "paused", "restarting", "created"):
            break
        if time.monotonic() >= settle:
            return SandboxError(message)
        time.sleep(0.1)
    why = watcher(box._client).why_stopped(box.container.id)
    return SandboxKilledFromInside(f"the sandbox ended: {why}") if why else SandboxError(message)


@contextmanager
def judged(box: _Box) -> Iterator[None]:
    """docker-py's and the connection's exceptions as `failure` says."""
    try:
        yield
    except ENGINE_ERRORS as err:
        text = str(err).strip()
        raise failure(box, f"docker: {(text.splitlines()[0] if text else type(err).__name__)[:300]}") from None
