"""What scripted models do, as abstract steps: the oracle, noop, replay and given scripts.

Steps (dicts): {"bash": CMD, "duration": S?}, {"write": PATH, "text": TEXT}, {"finish": MESSAGE,
"submit_file": PATH?} (mini-swe-agent formats print that file after the sentinel),
{"raw": {"content": ..., "tool_calls": [{"name", "arguments"}]}}, {"fault": KIND} with KIND in
malformed, multi, bad_args, missing_arg, unknown_tool, {"error": STATUS, "retry_after": S?} (STATUS may be
"context_window": the prompt overflowed); any step may carry "delay_s" (a slow reply) and "finish_reason"
(e.g. "length": the reply was cut at the token limit). `replies.py` writes a step in the scaffold's format.
"""
from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.layout import TESTBED

MODELS = ("oracle", "noop", "replay", "script", "judge")
WORKDIR = TESTBED


def oracle_steps(patch: str, install_commands: Sequence[str] = (), spec_script: str = "") -> list[dict[str, Any]]:
    """What a competent agent does, in abstract actions: explore, apply `patch` (its effect on the
    repository), rebuild with `install_commands`, run the specification script, finish."""
    if not patch.endswith("\n"):
        patch += "\n"
    steps: list[dict[str, Any]] = [
        {"bash": f"cd {WORKDIR} && git status --short && ls"},
        {"write": "/tmp/optimization.patch", "text": patch},
        {"bash": f"cd {WORKDIR} && git apply --whitespace=nowarn /tmp/optimization.patch && git status --short"},
    ]
    if install_commands:
        steps.append({"bash": f"cd {WORKDIR} && " + " && ".join(install_commands), "duration": 5})
    steps.append({"write": "/tmp/spec_timing.py", "text": spec_script})
    steps.append({"bash": f"cd {WORKDIR} && python3 /tmp/spec_timing.py", "duration": 5})
    steps.append({"finish": "Applied the optimization, rebuilt, and checked the specification script.",
                  "submit_file": "/tmp/optimization.patch"})
    return steps


def solution_steps(files: Sequence[tuple[str, str]], workdir: str) -> list[dict[str, Any]]:
    """The oracle of a task that ships a reference solution (Harbor's solution/): copy it in, run solve.sh."""
    folders = sorted({posixpath.dirname(f"/solution/{name}") for name, _text in files})
    steps: list[dict[str, Any]] = [{"bash": f"cd {workdir} && ls && mkdir -p {' '.join(folders)}"}]
    steps += [{"write": f"/solution/{name}", "text": text} for name, text in files]
    steps.append({"bash": f"cd {workdir} && bash /solution/solve.sh", "duration": 5})
    steps.append({"finish": "Ran the reference solution."})
    return steps


def noop_steps() -> list[dict[str, Any]]:
    return [{"finish": "No changes."}]


def replay_steps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Steps that reproduce the assistant turns of a trajectory (OpenAI-format messages)."""
    steps = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                 for c in message.get("tool_calls") or []]
        steps.append({"raw": {"content": message.get("content") or "", "tool_calls": calls}})
    return steps


@dataclass(frozen=True)
class Script:
    """The plain values a scripted model plays from, given by whoever builds it (never a task object)."""
    patch: str | None = None  # oracle: the change to make
    install_commands: tuple[str, ...] = ()  # oracle: the rebuild after the change
    spec_script: str = ""  # oracle: the specification script it runs
    trajectory: list[dict[str, Any]] | None = None  # replay: OpenAI-format messages of a saved trajectory
    steps: list[dict[str, Any]] | None = None  # script: the steps themselves
    solution: tuple[tuple[str, str], ...] = ()  # oracle: a reference solution's files (solve.sh runs)
    workdir: str = WORKDIR  # where the oracle works
    verdicts: dict[str, Any] | None = None  # judge: its verdicts (harness.models.scripted.judge)


def bind(name: str, script: Script) -> dict[str, Any]:
    """The `extra_body` a scripted model needs: its steps."""
    short = name.split("/", 1)[-1]
    if short == "script":
        return {"steps": list(script.steps or [])}
    if short == "oracle":
        if script.solution:
            return {"steps": solution_steps(script.solution, script.workdir)}
        if script.patch is None:
            raise ValueError("the oracle model needs a patch to apply")
        return {"steps": oracle_steps(script.patch, script.install_commands, script.spec_script)}
    if short == "noop":
        return {"steps": noop_steps()}
    if short == "judge":  # as JSON (string keys): litellm reads extra_body's keys as strings
        return {"verdicts": json.loads(json.dumps(script.verdicts or {}))}
    if short == "replay":
        if script.trajectory is None:
            raise ValueError("the replay model needs a trajectory to replay")
        return {"steps": replay_steps(script.trajectory)}
    raise ValueError(f"unknown scripted model {name!r}; known: {', '.join(MODELS)}")
