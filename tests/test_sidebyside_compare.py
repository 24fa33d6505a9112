"""The side-by-side bench's comparison (tests/bench/sidebyside/compare.py): what counts as a difference in what
the model learns and what is template wording, on hand-written observations of each scaffold family."""
from __future__ import annotations

from tests.bench.sidebyside.compare import compare, payload
from tests.bench.sidebyside.sides import SideRun, StepView, tool_action


def test_codeact_observations_compare_exit_code_and_output_not_status_lines() -> None:
    ours = "hello\n[Current working directory: /testbed]\n[Command finished with exit code 0]"
    theirs = "hello\n[The command completed with exit code 0.]\n[Current working directory: /testbed]"
    assert payload("codeact", ours) == payload("codeact", theirs) == ("exit=0", "hello")
    assert payload("codeact", "hello\n[Command finished with exit code 2]") == ("exit=2", "hello")
    # a command still running: ours says exit code -1, OpenHands' SDK says there was no new output
    assert payload("codeact", "partial\n[The command has no new output after 30 seconds. You may wait.]") == \
        payload("codeact", "partial\n[Command still running; exit code -1]") == ("exit=-1", "partial")
    assert payload("codeact", "File created successfully at: /tmp/a") == ()  # an editor's answer: wording only


def test_a_step_differing_in_output_is_an_observation_difference() -> None:
    def run(*shown: str) -> SideRun:
        return SideRun("x", [StepView(["execute_bash ls"], [], text) for text in shown], "submitted", 2, 2, 0)

    same = compare("c", run("a\n[exit code 0]", "b [exit code 0]"), run("a [exit code 0.]", "c [exit code 0]"),
                   "codeact")
    assert [(d.step, d.field) for d in same.differences] == [(0, "wording"), (1, "observation")]


def test_the_sdks_tool_names_map_to_ours() -> None:
    assert tool_action({"tool": "terminal", "arguments": '{"command": "ls"}'}) == "execute_bash ls"
    assert tool_action({"tool": "str_replace_editor", "arguments": {"command": "view", "path": "/a"}}) == \
        "str_replace_editor view /a"
    assert tool_action({"tool": "file_editor", "arguments": "{not json"}) == "str_replace_editor"
