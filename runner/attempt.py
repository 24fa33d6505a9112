"""The phases of one rollout attempt after its sandbox started (runner.rollout.RolloutRunner._attempt calls
them in order): the scaffold's loop driven under the wall clock from outside (`drive`), the change read
out of the sandbox whatever happened (`collect`), and the record told what ended it (`conclude`).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from harness import gpus
from harness.models.model import Model
from harness.models.redaction import redact
from harness.sandbox.interface import NoPatch, PatchTooLarge, Sandbox, SandboxError, SandboxKilledFromInside
from harness.tasks.task import Task
from runner import late_calls
from runner.live import Live
from runner.records import RolloutRecord
from scaffolds.episode import Episode
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits

GRACE_S = 30.0  # time a step in flight gets past the wall-clock limit before the runner steps in
STOPPED_WHY = {ExitReason.TIME_LIMIT: "stopped from outside at the wall-clock limit",
               ExitReason.RUN_COST_LIMIT: "the run's cost cap was reached"}


class Interrupted(Exception):
    """The run is stopping (Ctrl-C): the rollout is dropped, not recorded, and redone on resume."""


@dataclass
class Driven:
    """How the scaffold's loop ended: its episode (None: it never returned, or raised `error`), and the
    answered calls of an abandoned loop (`counted`, late_calls.given_up)."""
    episode: Episode | None
    error: BaseException | None
    counted: Any


@dataclass
class Collected:
    """The change read out of the sandbox, and why there is none when there is none."""
    patch: str = ""
    no_patch: str = ""  # the agent broke its repository or git
    too_large: str = ""  # over sandbox.max_patch_bytes
    killed: str = ""  # the sandbox's own processes ended it (SandboxKilledFromInside): the agent's outcome


def drive(scaffold: Any, task: Task, sandbox: Sandbox, model: Model, limits: Limits, live: Live,
          more: dict[str, Any]) -> Driven:
    """The loop in a worker thread, stopped from outside once it overruns its wall clock (plus GRACE_S);
    raises Interrupted at once on Ctrl-C, and a SandboxError of the loop's (infrastructure: retried)."""
    produced: dict[str, Any] = {}

    def loop() -> None:
        try:
            produced["episode"] = scaffold.run(task, sandbox, model, limits, live.stop, **more)
        except BaseException as exc:  # noqa: BLE001 - reported below, with its kind
            produced["error"] = exc

    worker = threading.Thread(target=loop, name=f"rollout-{task.id}-{live.index}", daemon=True)
    worker.start()
    until = None if limits.wall_clock_s is None else time.monotonic() + limits.wall_clock_s + GRACE_S
    while worker.is_alive():
        worker.join(0.2)
        if live.stop_reason == ExitReason.INTERRUPTED:  # Ctrl-C: don't wait for a step in flight
            raise Interrupted
        if until is not None and time.monotonic() > until:  # overran its wall clock: stop it from outside
            live.stop_reason = live.stop_reason or ExitReason.TIME_LIMIT
            live.stop.set()
            worker.join(GRACE_S)
            break
    if live.stop_reason == ExitReason.INTERRUPTED:
        raise Interrupted
    episode: Episode | None = produced.get("episode")  # (read once: an abandoned worker may end later)
    counted = late_calls.given_up(model) if episode is None else None
    live.episode = episode.to_dict() if episode else None  # (kept if retried)
    error = produced.get("error")
    if isinstance(error, SandboxError) and not isinstance(error, SandboxKilledFromInside):
        raise error
    return Driven(episode, error, counted)


def collect(sandbox: Sandbox, driven: Driven, max_patch_bytes: int) -> Collected:
    """The scaffold's rule: the container's diff, or (mini_swe's upstream option) what it submitted."""
    out = Collected(killed=str(driven.error) if isinstance(driven.error, SandboxKilledFromInside) else "")
    submitted = driven.episode.patch if driven.episode else None
    try:
        out.patch = sandbox.diff() if submitted is None else submitted
    except PatchTooLarge as err:  # a generated file in the work tree: recorded, never read whole
        out.too_large = str(err)
    except NoPatch as err:  # the agent broke its repository or git: its outcome, graded as no patch
        out.no_patch = str(err)
    except SandboxKilledFromInside as err:  # gone with the sandbox its processes ended: graded as no patch
        out.killed = out.killed or str(err)
    if len(out.patch.encode()) > max_patch_bytes:  # (a submitted one, mini_swe's rule)
        out.patch, out.too_large = "", f"the submitted patch is over sandbox.max_patch_bytes ({max_patch_bytes} bytes)"
    return out


def conclude(record: RolloutRecord, driven: Driven, collected: Collected, live: Live,
             given: tuple[gpus.Gpu, ...], late: Any) -> None:
    """What ended the attempt, in its record: late calls, why there is no patch, the GPUs, the exit reason."""
    late_record, late_usage = late
    if late_record is not None:
        from harness.models.records import Usage

        record.details["late_calls"] = late_record
        record.usage = Usage.total([record.usage, late_usage])
        record.cost_usd = record.usage.cost_usd if record.usage.cost_known else None
    if collected.no_patch:
        record.details["no_patch"] = collected.no_patch
    if collected.too_large:
        record.details["patch_too_large"] = collected.too_large
    if given:
        record.details["gpus"] = [gpu.record() for gpu in given]
    episode, error = driven.episode, driven.error
    if episode is None:
        if error is not None:
            record.exit_reason, record.exit_message = ExitReason.ERROR, redact(f"{type(error).__name__}: {error}")
        else:
            record.exit_reason, record.exit_message = ExitReason.TIME_LIMIT, STOPPED_WHY[ExitReason.TIME_LIMIT]
    elif episode.exit_reason == ExitReason.INTERRUPTED and live.stop_reason:
        record.exit_reason, record.exit_message = live.stop_reason, STOPPED_WHY.get(live.stop_reason, "")
    if collected.killed:  # whatever the episode said: the sandbox, and the change in it, ended with what the agent ran
        record.details["sandbox_killed"] = collected.killed
        if record.exit_reason != ExitReason.SANDBOX_KILLED:
            record.exit_reason, record.exit_message = ExitReason.SANDBOX_KILLED, f"sandbox: {collected.killed}"
