"""Scripted replies in Codex CLI's tool vocabulary (scaffolds.installed.codex).

A Codex request offers `exec_command` (a command in a shell, in the turn's working directory) and
`write_stdin` (more input for, or more output from, a command still running), among others. A step becomes
what a model would answer there: `bash` an exec_command call, `write` an exec_command call whose command
writes the file with a heredoc, `finish` a plain text answer, which ends `codex exec`.

exec_command waits at most 30 s (`yield_time_ms`, which Codex caps) for a command to end; one that runs
longer is left running and its output so far is the answer. A script does not poll it with write_stdin, so
its next step may start before it ends: scripts for Codex keep commands short.

Codex makes no side calls through the gateway with the settings its spec gives (no title, summary or
model-list calls), so every call it makes is a step of its agent loop and takes the scripted model's next
step. The exception is compaction, once a conversation reaches Codex's auto-compact limit: that request
offers no tools, so a scripted model cannot tell whose it is and fails it; a short script never gets there.
"""
from __future__ import annotations

import json
import posixpath
from typing import Any

TOOLS = frozenset({"exec_command", "write_stdin"})  # its unified exec tools, on by default
YIELD_MS = 30_000  # the longest exec_command waits for a command to end (Codex clamps to 250..30000)


def detects(tool_names: set[str]) -> bool:
    return TOOLS <= tool_names


def _exec(cmd: str) -> dict[str, str]:
    return {"name": "exec_command", "arguments": json.dumps({"cmd": cmd, "yield_time_ms": YIELD_MS})}


def heredoc(path: str, text: str) -> str:
    """A command that writes `text` to `path` (its folder made first): a heredoc with a quoted marker, so the
    shell expands nothing in it; the marker is one the text does not hold. The text ends with a newline
    (one is added where it has none), as with every line-based write."""
    marker = "OPTRUNNER_EOF"
    while marker in text:
        marker += "_"
    body = text if text.endswith("\n") else text + "\n"
    folder = posixpath.dirname(path)
    make = f"mkdir -p '{folder}' && " if folder not in ("", "/") else ""
    return f"{make}cat > '{path}' <<'{marker}'\n{body}{marker}"


def render(step: dict[str, Any]) -> tuple[str, list[dict[str, str]]]:
    if "bash" in step:
        return "", [_exec(step["bash"])]
    if "write" in step:
        path = step["write"]
        if "'" in path:
            raise ValueError(f"scripted model: a path with a quote cannot be written through Codex: {path!r}")
        return "", [_exec(heredoc(path, step["text"]))]
    if "finish" in step:
        return step["finish"], []
    if "fault" in step:
        return _fault(step["fault"])
    raise ValueError(f"scripted model: unknown step {step!r}")


def _fault(kind: str) -> tuple[str, list[dict[str, str]]]:
    if kind == "multi":  # parallel calls: Codex runs both and answers both
        return "Two at once.", [_exec("echo one"), _exec("echo two")]
    if kind == "bad_args":  # JSON cut short: Codex answers that it could not parse the arguments
        return "", [{"name": "exec_command", "arguments": '{"cmd": "echo hi'}]
    if kind == "missing_arg":
        return "", [{"name": "exec_command", "arguments": json.dumps({"yield_time_ms": 1000})}]
    if kind == "unknown_tool":
        return "", [{"name": "browse", "arguments": json.dumps({"url": "http://example.com"})}]
    # "malformed" has no Codex form: a reply without a tool call is its final answer
    raise ValueError(f"scripted model: the fault {kind!r} has no Codex form")
