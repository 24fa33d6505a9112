"""The gateway's session for an installed agent (scaffolds.installed.agent.RecordingHandler): tool results are recorded
with the calls they answer, also when a side call (a session title) comes between."""
from __future__ import annotations

from typing import Any

from scaffolds.episode import Submitted
from scaffolds.mini_swe.agent import BASH_TOOL
from tests.test_atif import _call, _installed, script


def test_a_side_call_between_a_reply_and_its_results_loses_nothing() -> None:
    model = script([
        {"raw": {"content": "Looking around.", "tool_calls": [_call("bash", "ls")]}},
        {"raw": {"content": "A title"}},  # a side call: carries no tool result
        {"raw": {"content": "Done."}},
    ])
    rec, session = _installed(model, "claude_code")
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "Make it fast."}]
    reply = session(conversation, [BASH_TOOL], {})
    session([{"role": "user", "content": "A title for: Make it fast."}], [BASH_TOOL], {})
    conversation += [reply.message, {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "a.py"}]
    session(conversation, [BASH_TOOL], {})
    session.finish()
    steps = rec.finish(Submitted("exit 0"), session.last).to_dict()["step_records"]
    seen = [(i, a["arguments"], o["text"]) for i, step in enumerate(steps)
            for a, o in zip(step["actions"], step["observations"])]
    assert seen == [(0, '{"command": "ls"}', "a.py")], seen  # its reply's step (was: "not sent back")


def test_a_result_the_agent_never_sends_is_said() -> None:
    model = script([{"raw": {"content": "Two.", "tool_calls": [_call("bash", "ls"), _call("bash", "pwd")]}},
                    {"raw": {"content": "Done."}}])
    rec, session = _installed(model, "claude_code")
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    reply = session(conversation, [BASH_TOOL], {})
    conversation += [reply.message, {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "a.py"}]
    session(conversation, [BASH_TOOL], {})
    session.finish()
    steps = rec.finish(Submitted("exit 0"), session.last).to_dict()["step_records"]
    texts = [o["text"] for step in steps for o in step["observations"]]
    assert texts == ["a.py", "(its result was not sent back)"]
