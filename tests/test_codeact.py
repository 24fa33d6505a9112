"""The CodeAct scaffold end to end: real containers, real litellm through the scripted provider.

Covers the episode loop in both action formats (native function calling and the `<function=...>` text
protocol), faults and limits, the persistent shell, the stuck rules, and replay of a trajectory.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks import Task
from harness.tasks.folder import load_task
from harness.models import scripted
from scaffolds.codeact import CodeActConfig, CodeActScaffold
from scaffolds.codeact.agent import Event, stuck_reason
from scaffolds.codeact.shell import PersistentShell
from scaffolds.codeact.tools import ToolError, complete_reply, parse_text_call, validate
from scaffolds.episode import Episode
from scaffolds.limits import Limits
from harness.models.model import Model
from tests.conftest import write_task
from tests.docker_support import client, sandbox_for, smoke_task, task_image
from tests.scaffold_support import actions, bound_model, same_effect, script_model

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return load_task(write_task(tmp_path_factory.mktemp("codeact")))


@pytest.fixture
def box(tiny: Task) -> Iterator[DockerSandbox]:
    yield from sandbox_for(tiny)


@pytest.fixture(scope="module")
def shared_box(tiny: Task) -> Iterator[DockerSandbox]:
    yield from sandbox_for(tiny)


@pytest.fixture
def shell(shared_box: DockerSandbox) -> Iterator[PersistentShell]:
    sh = PersistentShell(shared_box, no_output_timeout_s=1.0)
    sh.start()
    yield sh
    sh.close()


def scripted_model(steps: list[dict[str, Any]], native: bool = True, **config: Any) -> Model:
    return script_model(steps, native_tools=native, **config)


def run(box: DockerSandbox, task: Task, model: Model, limits: Limits = Limits(snapshot_every=0),
        **config: Any) -> Episode:
    return CodeActScaffold(CodeActConfig(**config)).run(task, box, model, limits)


def observations(episode: Episode) -> list[str]:
    return [obs.text for step in episode.step_records for obs in step.observations]


def assert_expert_effect(task: Task, diff: str) -> None:
    assert same_effect(task, diff, task.expert_patch)


# ---------------------------------------------------------------- pure units
def test_stuck_rules() -> None:
    a, b = Event("A", "out-a"), Event("B", "out-b")
    assert stuck_reason([a] * 3) is None
    assert "4 times" in (stuck_reason([b, a, a, a, a]) or "")
    assert stuck_reason([a, a, Event("A", "other"), a]) is None  # same action, a different observation
    err = Event("C", "ERROR: x", error=True)
    assert "failed" in (stuck_reason([a, err, err, err]) or "")
    assert stuck_reason([err, err, Event("C", "ok")]) is None
    talk = Event(None, message="I am done.")
    assert "without a tool call" in (stuck_reason([talk] * 3) or "")
    assert stuck_reason([talk, talk, Event(None, message="else")]) is None
    assert "alternated" in (stuck_reason([a, b] * 3) or "")
    assert stuck_reason([a, b, a, b, a, Event("D", "x")]) is None
    assert stuck_reason([b, a, b, a, b]) is None  # only 5 steps of alternation


def test_text_protocol_and_validation() -> None:
    cut = "Let me look.\n<function=execute_bash>\n<parameter=command>ls -la</parameter>\n"
    assert complete_reply(cut).endswith("</parameter>\n</function>")
    call = parse_text_call(cut)
    assert call is not None and call.name == "execute_bash" and call.arguments == {"command": "ls -la"}
    body = "<function=str_replace_editor>\n<parameter=command>create</parameter>\n<parameter=path>/a</parameter>\n" \
           "<parameter=file_text>\n  x\n</parameter>\n<parameter=view_range>[1, 5]</parameter>\n</function>"
    call = parse_text_call(body)
    assert call is not None and call.arguments["file_text"] == "  x\n"  # leading newline is layout, the rest kept
    assert validate("str_replace_editor", call.arguments)["view_range"] == [1, 5]
    assert validate("str_replace_editor", {"command": "insert", "path": "/a", "insert_line": "3"})["insert_line"] == 3
    assert parse_text_call("no call here") is None
    for name, args, message in [
        ("browse", {}, "Unknown tool"),
        ("str_replace_editor", {"command": "explode", "path": "/a"}, "Invalid value `explode`"),
        ("str_replace_editor", {"command": "view"}, "Missing required parameter `path`"),
        ("finish", {"message": "m", "task_completed": "maybe"}, "allowed values"),
        ("str_replace_editor", {"command": "view", "path": "/a", "view_range": "1-5"}, "list"),
    ]:
        with pytest.raises(ToolError, match=message):
            validate(name, args)


# ---------------------------------------------------------------- episodes
@pytest.mark.parametrize("native", [True, False], ids=["native", "text"])
def test_oracle_submits_the_expert_effect(native: bool, tiny: Task, box: DockerSandbox, tmp_path: Path) -> None:
    model = bound_model("scripted/oracle", tiny, native_tools=native)
    episode = run(box, tiny, model)
    assert episode.exit_reason == "submitted", episode.exit_message
    assert episode.submission.startswith("Applied the optimization")
    assert_expert_effect(tiny, box.diff())
    assert all(o.exit_code == 0 for s in episode.step_records for o in s.observations if o.exit_code is not None)
    if native:
        assert episode.messages[-1]["tool_calls"][0]["function"]["name"] == "finish"
        # replaying the trajectory in a fresh container takes the same actions
        for replay_box in sandbox_for(tiny):
            steps = scripted.replay_steps(episode.messages)
            again = run(replay_box, tiny, script_model(steps, native_tools=True))
            assert again.exit_reason == "submitted" and actions(again) == actions(episode)
            assert replay_box.diff() == box.diff()
    else:
        results = [m["content"] for m in episode.messages if m["role"] == "user"][1:]
        assert results and all(r.startswith("EXECUTION RESULT of [") for r in results)
        assert all("tool_calls" not in m for m in episode.messages)


def test_oracle_on_the_smoke_task(tmp_path: Path) -> None:
    task = smoke_task()
    model = bound_model("scripted/oracle", task, native_tools=True)
    with DockerSandbox.start(task_image(task), client=client()) as smoke_box:
        episode = run(smoke_box, task, model)
        assert episode.exit_reason == "submitted", episode.exit_message
        make = next(o for s in episode.step_records for a, o in zip(s.actions, s.observations)
                    if "make" in str(a["arguments"]))
        assert make.exit_code == 0, make.text
        assert_expert_effect(task, smoke_box.diff())


def test_noop_leaves_an_empty_diff(tiny: Task, box: DockerSandbox) -> None:
    model = bound_model("scripted/noop", tiny)
    episode = run(box, tiny, model)
    assert episode.exit_reason == "submitted" and episode.steps == 1
    assert box.diff() == ""


@pytest.mark.parametrize("native", [True, False], ids=["native", "text"])
def test_faults_come_back_as_observations(native: bool, tiny: Task, box: DockerSandbox) -> None:
    steps = [{"fault": "malformed"}, {"fault": "unknown_tool"}, {"fault": "bad_args"}, {"fault": "missing_arg"},
             {"fault": "multi"}, {"finish": "done"}]
    episode = run(box, tiny, scripted_model(steps, native))
    assert episode.exit_reason == "submitted" and episode.steps == 6
    keep_working = episode.messages[3]
    assert keep_working["role"] == "user" and "no human" in keep_working["content"]
    seen = observations(episode)
    assert "Unknown tool `browse`" in seen[0]
    assert ("not valid JSON" if native else "Invalid value `explode`") in seen[1]
    assert "Missing required parameter `path`" in seen[2]
    assert seen[3].startswith("one\n") and seen[-1] == ""  # the last is finish, which shows nothing
    if native:  # both calls of the reply run, in order
        assert seen[4].startswith("two\n") and len(seen) == 6
    else:  # the stop sequence leaves one call per message
        assert len(seen) == 5


@pytest.mark.parametrize("status, reason", [(500, "provider_error"), (400, "model_error")])
def test_provider_error_ends_the_episode(status: int, reason: str, tiny: Task, box: DockerSandbox) -> None:
    episode = run(box, tiny, scripted_model([{"bash": "true"}, {"error": status}], attempts=1))
    assert episode.exit_reason == reason and episode.steps == 2


@pytest.mark.parametrize("limit, reason", [({"max_steps": 2}, "step_limit"), ({"max_cost_usd": 1e-9}, "cost_limit")])
def test_step_and_cost_limits(limit: dict[str, Any], reason: str, tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": f"echo {i}"} for i in range(5)]
    episode = run(box, tiny, scripted_model(steps), Limits(snapshot_every=0, **limit))
    assert episode.exit_reason == reason
    assert episode.steps == (2 if reason == "step_limit" else 1)


def test_wall_clock_limit_cuts_a_long_command(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": "sleep 30"}, {"bash": "echo never"}]
    started = time.monotonic()
    episode = run(box, tiny, scripted_model(steps), Limits(wall_clock_s=3, snapshot_every=0))
    assert episode.exit_reason == "time_limit"
    assert time.monotonic() - started < 15
    assert "time limit" in observations(episode)[0]


def test_long_and_binary_output(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": "seq 1 100000"}, {"bash": "printf 'ok\\xff\\xfe\\n'"}, {"finish": "done"}]
    episode = run(box, tiny, scripted_model(steps), observation_limit=2_000)
    first, second = [o for s in episode.step_records for o in s.observations][:2]
    assert first.full_chars > 500_000 and len(first.text) < 2_200 and "characters cut" in first.text
    assert first.text.startswith("1\n2\n") and first.text.endswith("[Command finished with exit code 0]")
    assert second.text.startswith("ok\ufffd\ufffd")


def test_stuck_episode(tiny: Task, box: DockerSandbox) -> None:
    episode = run(box, tiny, scripted_model([{"bash": "echo same"}] * 6))
    assert episode.exit_reason == "stuck" and episode.steps == 4


def test_think_is_logged(tiny: Task, box: DockerSandbox) -> None:
    call = {"name": "think", "arguments": '{"thought": "profile first"}'}
    episode = run(box, tiny, scripted_model([{"raw": {"content": "", "tool_calls": [call]}}, {"finish": "ok"}]))
    assert observations(episode)[0] == "Your thought has been logged."


# ---------------------------------------------------------------- the persistent shell
def test_shell_keeps_cwd_env_and_sourced_state(shell: PersistentShell) -> None:
    assert shell.run("mkdir -p /tmp/w && cd /tmp/w && export FOO=bar", False, 10).exit_code == 0
    shell.run("printf 'export ACT=on\\nhi() { echo hello; }\\n' > /tmp/w/activate && source /tmp/w/activate",
              False, 10)
    done = shell.run("pwd; echo $FOO $ACT; hi", False, 10)
    assert done.output == "/tmp/w\nbar on\nhello\n" and done.cwd == "/tmp/w" and done.exit_code == 0
    assert shell.run("false", False, 10).exit_code == 1
    assert shell.run("(exit 7)", False, 10).exit_code == 7
    multi = shell.run("echo a\ncat <<'EOF'\n\tb\nEOF\necho c", False, 10)
    assert multi.output == "a\n\tb\nc\n"
    assert shell.run("printf 'x\\xffy'", False, 10).output == "x\ufffdy"


def test_shell_long_command_input_and_interrupt(shell: PersistentShell) -> None:
    started = time.monotonic()
    first = shell.run("echo started; sleep 40; echo never", False, 60)
    assert first.exit_code == -1 and first.running and "started" in first.output
    assert "still running" in first.note and time.monotonic() - started < 3
    refused = shell.run("echo other", False, 60)
    assert refused.error and "NOT run" in refused.output
    assert shell.run("", False, 60).exit_code == -1  # more output: none yet, still running
    stopped = shell.run("C-c", True, 60)  # keys go to the running command as input
    assert stopped.exit_code == 130 and not stopped.running and "never" not in stopped.output
    assert shell.run("read x; echo got $x", False, 60).running
    answered = shell.run("hello", True, 60)
    assert answered.output == "got hello\n" and answered.exit_code == 0
    assert shell.run("", False, 60).error  # nothing running any more


def test_shell_hard_timeout_and_restart(shell: PersistentShell) -> None:
    shell.no_output_timeout_s = 30
    started = time.monotonic()
    done = shell.run("cd /tmp && sleep 30", False, 1.5)
    assert done.timed_out and done.exit_code == 130 and time.monotonic() - started < 5
    assert shell.run("pwd", False, 10).output == "/tmp\n"  # same shell: C-c was enough
    stubborn = shell.run("trap '' INT; sleep 30", False, 1.5)  # ignores C-c: the shell must be replaced
    assert stubborn.timed_out and "restarted" in stubborn.note
    assert shell.run("pwd", False, 10).output == "/testbed\n"
    gone = shell.run("exit", False, 10)
    assert "restarted" in gone.note and shell.run("echo back", False, 10).output == "back\n"


def test_stream_without_tty_is_demultiplexed(shared_box: DockerSandbox) -> None:
    stream = shared_box.open_stream(["cat"], tty=False)
    try:
        stream.send(b"ping\n")
        got = b""
        deadline = time.monotonic() + 5
        while b"ping\n" not in got and time.monotonic() < deadline:
            got += stream.recv(1)
        assert got == b"ping\n"
    finally:
        stream.close()
