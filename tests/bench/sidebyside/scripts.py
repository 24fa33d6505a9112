"""The scripted model replies both sides get, one list per case, identical for ours and upstream.

Each case covers: a normal command, batched commands (text mode: two blocks in one reply, a format error
upstream and here; tool mode: several tool calls in one reply, and the finish inside a batch; terminus:
several keystroke entries), a failing command, a long output (`seq 1 20000`, ~109,000 chars, 20,000 lines), a
command that outlives its limit (mini: the per-command timeout; terminus has none, so the command is still
running when the terminal is read and the next reply interrupts it) and the finish (mini: the sentinel;
terminus: `task_complete` twice). Plus probes where the agents could plausibly differ: mini's shell (login or
not), an output of exactly 10,000 characters (the truncation boundary), a reply cut off at the output-token
limit (`finish_reason` "length") that still holds one complete block; terminus: a reply that is not JSON, one
cut off at the token limit, and a > 10 kB output of fewer lines than tmux's default 2,000-line history.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.openai_server import Reply, completion, usage

MODEL = "sbs-model"  # the name the server answers with; sides call it as `openai/sbs-model`
COMMAND_TIMEOUT_S = 5  # mini: the same per-command timeout on both sides
SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SHELL_PROBE = "shopt -q login_shell && echo login-shell || echo non-login-shell"
EXACTLY_10000 = "head -c 10000 /dev/zero | tr '\\0' x"  # 10,000 characters, no newline
# 1,500 numbered lines of 60 characters (~100 kB): over terminus' 10 kB limit, under tmux's 2,000-line default.
# A terminus reply cut off by the output-token limit: its one command is complete, the JSON is not.
CUT_OFF = ('{"analysis": "A reply cut off by the token limit.", "plan": "x", "commands": '
           '[{"keystrokes": "echo cut-off-reply\\n", "duration": 0.5}], "task_com')
LONG_LINES = "yes 'abcdefghij abcdefghij abcdefghij abcdefghij abcdefghij' | head -n 1500 | cat -n\n"


@dataclass(frozen=True)
class Case:
    name: str  # e.g. "mini_swe/text"
    scaffold: str  # our scaffold: mini_swe | terminus | codeact
    mode: str  # mini: text | tool; terminus: json; codeact: tool
    replies: tuple[dict[str, Any], ...]  # chat.completion bodies, in call order


def _body(content: str | None, calls: list[str] | None = None, step: int = 0,
          finish_reason: str | None = None) -> dict[str, Any]:
    tool_calls = [{"name": "bash", "arguments": json.dumps({"command": c})} for c in calls or []]
    body = completion(content, tool_calls or None, usage_=usage(100, 20), model=MODEL, finish_reason=finish_reason)
    for i, call in enumerate(body["choices"][0]["message"].get("tool_calls") or []):
        call["id"] = f"call_{step}_{i}"  # unique ids across the conversation, as providers send them
    return body


def _text(command: str, thought: str = "Next step.") -> str:
    return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"


def mini_text() -> Case:
    replies = [
        _text("pwd && echo hello && ls", "A normal command."),
        _text(SHELL_PROBE, "Which shell runs the commands."),
        # Two blocks in one reply: text mode allows exactly one, so this is a format error on both sides.
        _text("echo one", "Batched commands.") + "\n\n```mswea_bash_command\necho two\n```",
        _text("ls /nonexistent-dir", "A failing command."),
        _text("seq 1 20000", "A long output."),
        _text(EXACTLY_10000, "An output of exactly 10,000 characters: the truncation boundary."),
        _text("echo partial && sleep 30", "A command that times out."),
    ]
    bodies = [_body(r) for r in replies]
    # Cut off at the output-token limit, yet holding one complete block.
    bodies.append(_body(_text("echo cut-off-reply", "A reply cut off by the token limit.") + "\n\nAnd then",
                        finish_reason="length"))
    bodies.append(_body(_text(f"echo {SENTINEL}", "Finish.")))
    return Case("mini_swe/text", "mini_swe", "text", tuple(bodies))


def mini_tool() -> Case:
    steps: list[list[str]] = [
        ["pwd && echo hello && ls"],
        [SHELL_PROBE],
        ["echo one", "ls /nonexistent-dir", "echo three"],  # batched tool calls, one of them failing
        ["seq 1 20000"],
        [EXACTLY_10000],
        ["echo partial && sleep 30"],
        ["echo before", f"echo {SENTINEL}", "echo after"],  # the finish in a batch: `after` must not run
    ]
    bodies = [_body("Calling the bash tool.", calls, step) for step, calls in enumerate(steps)]
    return Case("mini_swe/tool", "mini_swe", "tool", tuple(bodies))


def _terminus(commands: list[tuple[str, float]], complete: bool = False, analysis: str = "Next step.") -> str:
    return json.dumps({"analysis": analysis, "plan": "Run the commands.",
                       "commands": [{"keystrokes": k, "duration": d} for k, d in commands],
                       "task_complete": complete}, indent=2)


def terminus_json() -> Case:
    replies = [
        _terminus([("pwd && echo hello && ls\n", 1.0)], analysis="A normal command."),
        _terminus([("cd /tmp\n", 0.5), ("pwd\n", 0.5), ("echo batched-$((6*7))\n", 0.5)],
                  analysis="Batched commands."),
        _terminus([("ls /nonexistent-dir; echo exit=$?\n", 1.0)], analysis="A failing command."),
        _terminus([(LONG_LINES, 3.0)], analysis="A long output (> 10 kB) within 2,000 lines."),
        _terminus([("seq 1 20000\n", 3.0)], analysis="A long output, more lines than tmux's default history."),
        "I will just run something without JSON.",  # malformed: no command runs, the model is asked again
        _terminus([("echo partial && sleep 30\n", 2.0)], analysis="A command still running when read."),
        _terminus([("C-c", 1.0)], analysis="Interrupt it."),
        CUT_OFF,  # finish_reason "length" (set below): nothing of it may run
        _terminus([], complete=True, analysis="Finish."),
        _terminus([], complete=True, analysis="Confirm."),
    ]
    bodies = [_body(r, finish_reason="length" if r == CUT_OFF else None) for r in replies]
    return Case("terminus/json", "terminus", "json", tuple(bodies))


def _calls(step: int, calls: list[tuple[str, dict[str, str]]]) -> dict[str, Any]:
    body = completion("Next step.", [{"name": n, "arguments": json.dumps(a)} for n, a in calls],
                      usage_=usage(100, 20), model=MODEL)
    for i, call in enumerate(body["choices"][0]["message"]["tool_calls"]):
        call["id"] = f"call_{step}_{i}"
    return body


def codeact_tool() -> Case:
    """Our codeact's tool names and arguments (OpenHands' earlier CodeActAgent's); the OpenHands side gets the
    same calls under its SDK's names (openhands.py)."""
    steps: list[list[tuple[str, dict[str, str]]]] = [
        [("execute_bash", {"command": "pwd && echo hello && ls"})],
        [("execute_bash", {"command": "echo one"}), ("execute_bash", {"command": "ls /nonexistent-dir"})],
        [("execute_bash", {"command": "seq 1 20000"})],
        [("str_replace_editor", {"command": "create", "path": "/tmp/sbs_created.txt", "file_text": "hello\n"})],
        [("str_replace_editor", {"command": "view", "path": "/tmp/sbs_created.txt"})],
        [("execute_bash", {"command": "echo partial && sleep 40"})],  # outlives the no-output wait of both
        [("execute_bash", {"command": "C-c", "is_input": "true"})],
        [("finish", {"message": "Done.", "task_completed": "true"})],
    ]
    return Case("codeact/tool", "codeact", "tool", tuple(_calls(i, calls) for i, calls in enumerate(steps)))


CASES = {"mini_swe": (mini_text, mini_tool), "terminus": (terminus_json,), "codeact": (codeact_tool,)}


def replies(case: Case) -> list[Reply]:
    """Fresh server replies for one side's run."""
    return [Reply(body=json.loads(json.dumps(body))) for body in case.replies]
