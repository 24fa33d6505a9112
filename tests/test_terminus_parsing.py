"""Terminus reply parsing and terminal-text helpers: pure functions, no containers."""
from __future__ import annotations

import json

import pytest

from harness.models.scripted.replies import _terminus
from scaffolds.terminus.parsing import ParseError, parse_json, parse_reply, parse_xml, unescape
from scaffolds.terminus.tmux import is_key_name, limit_output, new_output, terminal_text, Capture

GOOD = {"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n", "duration": 0.5}], "task_complete": False}


def test_valid_json_has_no_warnings() -> None:
    reply = parse_json(json.dumps(GOOD))
    assert reply.analysis == "a" and reply.plan == "p" and not reply.task_complete
    assert [(c.keystrokes, c.duration) for c in reply.commands] == [("ls\n", 0.5)]
    assert reply.warnings == []


def test_text_around_the_object_is_ignored_with_warnings() -> None:
    text = "Sure, here it is:\n```json\n" + json.dumps(GOOD) + "\n```\nGood luck {}"
    reply = parse_json(text)
    assert reply.commands[0].keystrokes == "ls\n"
    assert any("before" in w for w in reply.warnings) and any("after" in w for w in reply.warnings)


def test_missing_closing_brace_is_repaired_with_a_warning() -> None:
    text = json.dumps(GOOD)[:-1]  # the last } is gone
    reply = parse_json(text)
    assert reply.commands[0].keystrokes == "ls\n"
    assert any("not closed" in w and "'}'" in w for w in reply.warnings)
    nested = '{"analysis": "a", "plan": "b", "commands": [{"keystrokes": "x\\n", "duration": 1}'
    assert parse_json(nested).commands[0].keystrokes == "x\n"  # "]}" added


def test_braces_inside_strings_do_not_confuse_the_scan() -> None:
    obj = dict(GOOD, analysis='a "quoted" {brace} \\ and }', commands=[{"keystrokes": "echo '}{'\n", "duration": 1}])
    reply = parse_json("I think {this} is it: " + json.dumps(obj))
    assert reply.analysis == obj["analysis"] and reply.commands[0].keystrokes == "echo '}{'\n"


@pytest.mark.parametrize("text, message", [
    ("no json here at all", "no JSON object"),
    ("I should think about this more {", "missing required field(s): analysis, plan, commands"),
    ('{"analysis": "a", "plan": "b", "commands": "echo hi", "task_complete": false}', "'commands' must be a list"),
    ('{"analysis": "a", "plan": "b", "commands": [{"duration": 1}]}', "command 1: 'keystrokes'"),
    ('{"analysis": "a", "plan": "b", "commands": ["ls"]}', "command 1 must be an object"),
    ('{"analysis": 3, "plan": "b", "commands": []}', "'analysis' must be a string"),
    ('{"analysis": "a", "plan": "b", "commands": [], }', "invalid JSON"),
    ('{"analysis": "cut off here', "ends inside a string"),
])
def test_malformed_json_gives_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_json(text)
    assert message in str(err.value)


def test_durations_defaults_and_task_complete_forms() -> None:
    obj = {"analysis": "a", "plan": "b", "task_complete": "True",
           "commands": [{"keystrokes": "a\n"}, {"keystrokes": "b\n", "duration": -2},
                        {"keystrokes": "c\n", "duration": "3"}, {"keystrokes": "C-c", "duration": 0}]}
    reply = parse_json(json.dumps(obj), default_duration=1.5)
    assert [c.duration for c in reply.commands] == [1.5, 1.5, 3.0, 0.0]
    assert reply.task_complete is True
    assert sum("default 1.5" in w for w in reply.warnings) == 2


def test_command_without_newline_before_another_is_warned() -> None:
    obj = dict(GOOD, commands=[{"keystrokes": "echo a", "duration": 1}, {"keystrokes": "C-c", "duration": 1},
                               {"keystrokes": "echo b\n", "duration": 1}])
    warnings = parse_json(json.dumps(obj)).warnings
    assert len(warnings) == 1 and "command 1 does not end with a newline" in warnings[0]


def test_scripted_renderings_round_trip_in_both_formats() -> None:
    keys = "cd /testbed && cat a <b >c\tx\n"
    for fmt in ("json", "xml"):
        text = _terminus(f"terminus_{fmt}", [(keys, 2.0), ("C-c", 0.5)], False, "note with && and <tags>")
        reply = parse_reply(text, fmt)
        assert [(c.keystrokes, c.duration) for c in reply.commands] == [(keys, 2.0), ("C-c", 0.5)], fmt
        assert reply.analysis == "note with && and <tags>" and not reply.task_complete and not reply.warnings
        done = parse_reply(_terminus(f"terminus_{fmt}", [], True, "done"), fmt)
        assert done.task_complete and done.commands == []


def test_xml_repairs_and_errors() -> None:
    body = ('<response><analysis>a</analysis><plan>p</plan><commands>'
            '<keystrokes duration="0.3">echo &lt;ok&gt; &amp;&amp; true\n</keystrokes>'
            '<keystrokes>ls\n</keystrokes></commands><task_complete>false</task_complete>')
    reply = parse_xml("Here you go: " + body)
    assert [(c.keystrokes, c.duration) for c in reply.commands] == [("echo <ok> && true\n", 0.3), ("ls\n", 1.0)]
    assert any("</response> was missing" in w for w in reply.warnings)
    assert any("before <response>" in w for w in reply.warnings)
    assert any("no duration" in w for w in reply.warnings)
    with pytest.raises(ParseError, match="no <response>"):
        parse_xml('{"analysis": "json instead"}')
    with pytest.raises(ParseError, match="missing required field.*commands"):
        parse_xml("<response><analysis>a</analysis><plan>p</plan></response>")


def test_unescape_is_single_pass_and_handles_numeric_references() -> None:
    assert unescape("&amp;lt; &lt; &#65;&#x42; &quot;&apos; &nbsp;") == "&lt; < AB \"' &nbsp;"


def test_key_names() -> None:
    assert all(is_key_name(k) for k in ("C-c", "C-d", "M-x", "Escape", "Up", "C-Left", "F5", "Enter"))
    assert not any(is_key_name(k) for k in ("C-c\n", "ls\n", "q", "echo C-c", "", "Cc"))


def test_new_output_starts_at_the_cursor_line_and_detects_lost_history() -> None:
    before = "$ echo a\na\n$"
    assert new_output(before, before + " echo b\nb\n$") == "\n$ echo b\nb\n$"
    assert new_output(before, before) == "\n$"  # unchanged: the cursor line, as terminus-2 shows it
    assert new_output(None, before) is None
    assert new_output(before, "a\n$ echo b\nb\n$") is None  # the first line scrolled out of history
    assert new_output("$", "$ ls\nx\n$") == "$ ls\nx\n$"  # a one-line read: from where it is found
    assert new_output("$ x", "y\n$ x\nz") == "$ x\nz"


def test_terminal_text_falls_back_to_the_screen() -> None:
    capture = Capture(screen="screen", buffer="$ ls\nx\n$", complete=True)
    assert terminal_text("$", capture) == "New Terminal Output:\n$ ls\nx\n$"
    assert terminal_text("$ ls\nx\n$", capture) == "New Terminal Output:\n\n$"  # nothing new: the prompt line
    assert terminal_text("unrelated\nhistory", capture) == "Current Terminal Screen:\nscreen"
    partial = Capture(screen="screen", buffer="$ ls\nx\n$", complete=False)
    assert terminal_text("$", partial) == "Current Terminal Screen:\nscreen"


def test_limit_output_keeps_head_and_tail_in_bytes() -> None:
    text = "é" * 4000 + "MIDDLE" + "z" * 8000  # 8,000 bytes of two-byte characters, then ASCII
    out = limit_output(text, 10_000)
    head, _, rest = out.partition("\n[... output limited to 10000 bytes; ")
    assert head == "é" * 2500 and rest.endswith("z" * 5000)
    assert rest.startswith(f"{len(text.encode()) - 10_000} bytes in the middle omitted ...]")
    assert limit_output("short", 10_000) == "short"
