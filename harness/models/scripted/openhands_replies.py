"""Scripted replies in the tool vocabulary of OpenHands' SDK agent (scaffolds.installed.openhands).

Its requests offer `terminal` (command), `file_editor` (command=create|str_replace|view..., absolute path)
and the built-in `finish` (message), among others. A step becomes what a model would answer there: `bash` a
terminal call, `write` a file_editor create, `finish` a finish call, which ends the conversation.
"""
from __future__ import annotations

from typing import Any

from harness.models.scripted.replies import _fc  # a tool call as the scripted provider returns it

TOOLS = frozenset({"terminal", "file_editor", "finish"})


def detects(tool_names: set[str]) -> bool:
    return TOOLS <= tool_names


def render(step: dict[str, Any]) -> tuple[str, list[dict[str, str]]]:
    if "bash" in step:
        command = step["bash"]
        return f"Running: {command.splitlines()[0][:80]}", [_fc("terminal", command=command)]
    if "write" in step:
        path = step["write"]
        if not path.startswith("/"):
            raise ValueError(f"scripted model: OpenHands' file_editor needs an absolute path, got {path!r}")
        return f"Writing {path}.", [_fc("file_editor", command="create", path=path, file_text=step["text"])]
    if "finish" in step:
        return "", [_fc("finish", message=step["finish"])]
    raise ValueError(f"scripted model: the step {step!r} has no OpenHands form")
