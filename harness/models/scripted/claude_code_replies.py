"""Scripted replies in Claude Code's tool vocabulary (scaffolds.installed.claude_code).

A Claude Code request offers its built-in tools by name (Bash, Read, Edit, Write, ...; subagents get
fewer). A step becomes what a Claude model would answer: `bash` a Bash call, `write` a Write call (an
absolute path, as the tool requires; it refuses to overwrite a file the conversation has not read, so the
scripts write new files only), `finish` a plain text answer, which ends a `-p` run.

Claude Code makes no side calls through the gateway with the variables its spec sets (no title or
summary calls, no count_tokens), so every call it makes is a step of the agent loop and takes the
scripted model's next step.
"""
from __future__ import annotations

from typing import Any

from harness.models.scripted.replies import _fc  # a tool call as the scripted provider returns it

TOOLS = frozenset({"Bash", "Write"})  # the ones the steps use; both are in the main loop's default set


def detects(tool_names: set[str]) -> bool:
    return TOOLS <= tool_names


def render(step: dict[str, Any]) -> tuple[str, list[dict[str, str]]]:
    if "bash" in step:
        command = step["bash"]
        return "", [_fc("Bash", command=command, description=f"Run {command.splitlines()[0][:60]}")]
    if "write" in step:
        path = step["write"]
        if not path.startswith("/"):
            raise ValueError(f"scripted model: Claude Code's Write tool needs an absolute path, got {path!r}")
        return "", [_fc("Write", file_path=path, content=step["text"])]
    if "finish" in step:
        return step["finish"], []
    if "fault" in step:
        return _fault(step["fault"])
    raise ValueError(f"scripted model: unknown step {step!r}")


def _fault(kind: str) -> tuple[str, list[dict[str, str]]]:
    if kind == "multi":  # parallel calls: Claude Code runs both and answers both
        return "Two at once.", [_fc("Bash", command="echo one"), _fc("Bash", command="echo two")]
    if kind == "bad_args":  # JSON cut short: the gateway hands it over whole, its schema check refuses it
        return "", [{"name": "Bash", "arguments": '{"command": "echo hi'}]
    if kind == "missing_arg":
        return "", [_fc("Bash", description="no command")]
    if kind == "unknown_tool":
        return "", [_fc("browse", url="http://example.com")]
    # "malformed" has no Claude Code form: a reply without a tool call is its final answer
    raise ValueError(f"scripted model: the fault {kind!r} has no Claude Code form")
