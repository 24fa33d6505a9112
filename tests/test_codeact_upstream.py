"""CodeAct where OpenHands 0.35 (as GSO ran it) behaves differently from a naive loop: iterations counted
per action, condensation on context overflow, one command per call, keys only as input, the rendered
terminal, the resolved mode, invalid tool arguments kept out of the history, and a shell whose prompt
was changed under it. Real containers, real litellm through the scripted provider.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks import Task
from harness.tasks.folder import load_task
from scaffolds.codeact import CodeActConfig, CodeActScaffold
from scaffolds.codeact.shell import RESTART_NOTE, PersistentShell
from scaffolds.codeact.terminal import render
from scaffolds.episode import Episode
from scaffolds.limits import Limits
from tests.conftest import write_task
from tests.docker_support import sandbox_for
from tests.scaffold_support import actions, script_model

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return load_task(write_task(tmp_path_factory.mktemp("codeact_up")))


@pytest.fixture
def box(tiny: Task) -> Iterator[DockerSandbox]:
    yield from sandbox_for(tiny)


def bash_call(command: str, is_input: str | None = None) -> dict[str, str]:
    args = {"command": command} if is_input is None else {"command": command, "is_input": is_input}
    return {"name": "execute_bash", "arguments": json.dumps(args)}


def reply(*calls: dict[str, str]) -> dict[str, Any]:
    return {"raw": {"content": "", "tool_calls": list(calls)}}


def run(box: DockerSandbox, task: Task, steps: list[dict[str, Any]], native: bool = True,
        limits: Limits = Limits(snapshot_every=0), **config: Any) -> Episode:
    model = script_model(steps, native_tools=native)
    return CodeActScaffold(CodeActConfig(**config)).run(task, box, model, limits)


def observations(episode: Episode) -> list[str]:
    return [obs.text for step in episode.step_records for obs in step.observations]


# ---------------------------------------------------------------- pure
def test_terminal_rendering() -> None:
    assert render("10%\r55%\r100%\ndone\r\n") == "100%\ndone\n"
    assert render("\x1b[1;31mred\x1b[0m plain") == "red plain"
    assert render("long progress line\r\x1b[Kok") == "ok"
    assert render("abc\b\bX") == "aXc" and render("\x1b]0;title\x07text") == "text"
    assert render("plain\ttext\n") == "plain\ttext\n"


def test_the_resolved_mode_is_shown_in_the_run_report() -> None:
    from pathlib import Path

    from runner.config import validate
    from runner.report import build_report, render_markdown
    from runner.store import RunStore

    store = RunStore(Path(__file__).parent / "fixtures" / "run_a718ad9")  # a real run's records (6 rollouts)
    conf, records = validate(store.load_config()), store.results()
    tasks = ["imgblur", "rollstats", "spanindex"]
    assert "action format" not in render_markdown(build_report(records, conf, tasks), "runs/x")  # none recorded
    for i, record in enumerate(records):
        record.actions = 3
        record.details = {"mode": "text" if i % 3 == 0 else "native"}
    report = build_report(records, conf, tasks)
    assert report["tasks"]["imgblur"]["rollouts"][0]["details"] == {"mode": "text"}
    markdown = render_markdown(report, "runs/x")
    assert "| mean actions | 3.0 |\n| action format | native (4), text (2) |" in markdown


# ---------------------------------------------------------------- the loop
def test_each_action_is_an_iteration(tiny: Task, box: DockerSandbox) -> None:
    steps = [reply(bash_call("echo a"), bash_call("echo b"), bash_call("echo c")), {"bash": "echo d"},
             {"finish": "done"}]
    episode = run(box, tiny, steps, limits=Limits(max_steps=2, snapshot_every=0))
    assert episode.exit_reason == "step_limit" and "iteration limit of 2" in episode.exit_message
    assert [a["arguments"]["command"] for a in actions(episode)] == ["echo a", "echo b"]  # c never ran
    assert episode.steps == 1 and episode.actions == 2
    unlimited = run(box, tiny, steps)
    assert unlimited.exit_reason == "submitted" and unlimited.steps == 3 and unlimited.actions == 5


def test_a_reply_without_a_call_is_an_iteration(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"raw": {"content": "Let me think.", "tool_calls": []}}, {"bash": "echo a"}, {"bash": "echo b"}]
    episode = run(box, tiny, steps, limits=Limits(max_steps=2, snapshot_every=0))
    assert episode.exit_reason == "step_limit" and episode.steps == 2 and episode.actions == 1


@pytest.mark.parametrize("native", [True, False], ids=["native", "text"])
def test_context_overflow_condenses_and_goes_on(native: bool, tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": f"echo step{i}"} for i in range(6)] + [{"error": "context_window"}, {"finish": "done"}]
    episode = run(box, tiny, steps, native)
    assert episode.exit_reason == "submitted", episode.exit_message
    assert episode.details["mode"] == ("native" if native else "text")
    [condensed] = episode.details["condensations"]
    assert condensed["dropped_messages"] >= 6
    calls = [s.call for s in episode.step_records if s.call is not None]
    assert calls[-1].input_tokens < calls[-2].input_tokens  # the call after the overflow sent less
    assert len([m for m in episode.messages if m["role"] == "assistant"]) == 7  # the trajectory keeps all
    refused = run(box, tiny, steps, native, condense_on_overflow=False)
    assert refused.exit_reason == "context_window"


def test_overflow_with_nothing_left_to_drop_ends_the_episode(tiny: Task, box: DockerSandbox) -> None:
    episode = run(box, tiny, [{"error": "context_window"}] * 3)
    assert episode.exit_reason == "context_window"


def test_several_commands_in_one_call_are_refused(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": "echo one\necho two"}, {"bash": "cat <<'EOF'\nx\ny\nEOF"},
             {"bash": "for i in 1 2; do\n  echo $i\ndone"}, {"finish": "done"}]
    seen = observations(run(box, tiny, steps))
    assert "NOT run" in seen[0] and "(1) echo one" in seen[0] and "(2) echo two" in seen[0]
    assert seen[1].startswith("x\ny\n") and seen[2].startswith("1\n2\n")  # one command over several lines


def test_keys_and_input_need_is_input(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": "sleep 30"}, reply(bash_call("C-c")), reply(bash_call("C-c", "true")),
             reply(bash_call("hello", "true")), {"finish": "done"}]
    episode = run(box, tiny, steps, no_output_timeout_s=1.0)
    seen = observations(episode)
    assert "still running" in seen[0]
    assert "NOT run" in seen[1]  # a key without is_input is refused while the command runs
    assert "exit code 130" in seen[2]
    assert "nothing to send input" in seen[3]


def test_observations_are_the_rendered_terminal(tiny: Task, box: DockerSandbox) -> None:
    progress = "for i in 1 2 3 4; do printf '\\r%d%% \\033[32m#\\033[0m' $((i*25)); done; echo"
    seen = observations(run(box, tiny, [{"bash": progress}, {"finish": "done"}]))
    assert seen[0].startswith("100% #\n") and "\r" not in seen[0] and "\x1b" not in seen[0]


def test_invalid_arguments_are_not_sent_back(tiny: Task, box: DockerSandbox) -> None:
    episode = run(box, tiny, [{"fault": "bad_args"}, {"finish": "done"}])
    assert episode.exit_reason == "submitted"
    call = episode.messages[2]["tool_calls"][0]
    assert call["function"]["arguments"] == "{}"  # what the provider sees from now on
    assert actions(episode)[0]["arguments"] == '{"command": "echo hi'  # what the model wrote, kept in the record


# ---------------------------------------------------------------- the shell's prompt
@pytest.fixture
def shell(box: DockerSandbox) -> Iterator[PersistentShell]:
    sh = PersistentShell(box, no_output_timeout_s=1.0)
    sh.start()
    yield sh
    sh.close()


def test_prompt_survives_bashrc_and_nested_bash(shell: PersistentShell) -> None:
    assert shell.run("source /etc/bash.bashrc; PS1='$ '", False, 10).exit_code == 0
    assert shell.run("echo after; (exit 4)", False, 10).output == "after\n"
    assert shell.run("(exit 4)", False, 10).exit_code == 4
    nested = shell.run("bash", False, 10)
    assert not nested.running and nested.exit_code == 0
    assert shell.run("cd /tmp && echo inner", False, 10).output.endswith("inner\n")
    assert shell.run("exit", False, 10).exit_code == 0
    assert shell.run("pwd", False, 10).output == "/testbed\n"  # back in the outer shell


def test_prompt_command_replaced_is_recovered(shell: PersistentShell) -> None:
    started = time.monotonic()
    lost = shell.run("PROMPT_COMMAND=; PS1='root# '; (exit 3)", False, 20)
    assert lost.exit_code == 3 and not lost.running and time.monotonic() - started < 8
    assert shell.run("echo fine", False, 10).output == "fine\n"


def test_a_marker_that_cannot_be_recovered_restarts_the_shell(tiny: Task, box: DockerSandbox) -> None:
    # `exec sh` puts dash in bash's place: a foreign prompt, no child process, and no PROMPT_COMMAND to put
    # the marker back, so the shell is replaced, and the model is told what that reset.
    steps = [{"bash": "cd /tmp && exec sh"}, {"bash": "echo $0 in $(pwd)"}, {"finish": "done"}]
    started = time.monotonic()
    episode = run(box, tiny, steps, no_output_timeout_s=1.0)
    assert episode.exit_reason == "submitted", episode.exit_message
    seen = observations(episode)
    assert RESTART_NOTE in seen[0] and "[Current working directory: /testbed]" in seen[0]
    assert seen[1].startswith("bash in /testbed\n") and seen[1].endswith("[Command finished with exit code 0]")
    assert time.monotonic() - started < 15


def test_hard_timeout_counts_from_the_command(shell: PersistentShell) -> None:
    started = time.monotonic()
    result = shell.run("sleep 60", False, 4.0)
    while not result.timed_out and time.monotonic() - started < 20:
        result = shell.run("", False, 4.0)  # looking at the output must not extend the deadline
    assert result.timed_out and time.monotonic() - started < 8


THOUGHT = "the tests run from /testbed"
BLOCKS = [{"type": "thinking", "thinking": "look before editing", "signature": "sig-1"}]


@pytest.mark.parametrize("native", [True, False], ids=["native", "text"])
def test_reasoning_fields_go_back_to_the_provider(native: bool, tiny: Task, box: DockerSandbox) -> None:
    from harness.models.config import ModelConfig
    from harness.models.model import REASONING_FIELDS, Model
    from harness.models.records import Price
    from tests.openai_server import OpenAIServer, Reply, completion

    if native:
        first = completion(None, tool_calls=[bash_call("true")])
        finish = completion(None, tool_calls=[{"name": "finish", "arguments": json.dumps(
            {"message": "done", "task_completed": "true"})}])
    else:  # the text protocol: the call is in the reply's text
        first = completion("<function=execute_bash>\n<parameter=command>true</parameter>\n</function>")
        finish = completion("<function=finish>\n<parameter=message>done</parameter>\n"
                            "<parameter=task_completed>true</parameter>\n</function>")
    first["choices"][0]["message"].update(reasoning_content=THOUGHT, thinking_blocks=BLOCKS)
    with OpenAIServer() as server:
        server.push(Reply(body=first), Reply(body=finish))
        model = Model(ModelConfig(name="openai/thinker", api_base=server.base_url, native_tools=native,
                                  price=Price(input=1.0, output=1.0)), api_key="k")
        episode = CodeActScaffold(CodeActConfig()).run(tiny, box, model, Limits(snapshot_every=0))
        sent = server.requests[1].body["messages"]
    assert episode.exit_reason == "submitted" and episode.details["mode"] == ("native" if native else "text")
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert assistant["reasoning_content"] == THOUGHT and assistant["thinking_blocks"] == BLOCKS
    kept = next(m for m in episode.messages if m["role"] == "assistant")
    assert {k: assistant.get(k) for k in REASONING_FIELDS if k in kept} == {k: kept[k] for k in REASONING_FIELDS
                                                                            if k in kept}
