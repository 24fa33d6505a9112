"""The terminus scaffold end to end: real containers, real tmux, real litellm through the scripted provider."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks import Task
from harness.tasks.folder import load_task
from scaffolds.episode import Episode
from scaffolds.limits import Limits
from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.models.scripted.replies import _terminus
from scaffolds.terminus import TerminusConfig, TerminusScaffold
from tests.conftest import write_task
from tests.docker_support import sandbox_for, smoke_task
from tests.scaffold_support import bound_model, script_model, task_oracle_steps

pytestmark = pytest.mark.docker
FAST = TerminusConfig(max_duration_s=0.3)  # the tiny task's commands all finish well within 0.3 s
CONFIRM = "You marked the task as complete"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return load_task(write_task(tmp_path_factory.mktemp("terminus")))


@pytest.fixture
def box(tiny: Task) -> Iterator[DockerSandbox]:
    yield from sandbox_for(tiny)


def scripted_model(name: str, task: Task | None = None, steps: list[dict[str, Any]] | None = None,
                   trajectory: list[dict[str, Any]] | None = None) -> Model:
    if steps is not None:
        return script_model(steps)
    assert task is not None
    return bound_model(f"scripted/{name}", task, **({"trajectory": trajectory} if trajectory else {}))


def run(task: Task, box: DockerSandbox, model: Model, config: TerminusConfig = FAST,
        limits: Limits = Limits(max_steps=60)) -> Episode:
    return TerminusScaffold(config).run(task, box, model, limits)


def keystrokes(episode: Episode) -> list[str]:
    return [a["keystrokes"] for step in episode.step_records for a in step.actions]


def user_texts(episode: Episode) -> list[str]:
    return [m["content"] for m in episode.messages if m["role"] == "user"]


def raw(commands: list[tuple[str, float]], complete: bool = False) -> dict[str, Any]:
    content = json.dumps({"analysis": "a", "plan": "p", "task_complete": complete,
                          "commands": [{"keystrokes": k, "duration": d} for k, d in commands]})
    return {"raw": {"content": content}}


# ---------------------------------------------------------------- oracle, noop, replay
@pytest.mark.parametrize("fmt", ["json", "xml"])
def test_oracle_applies_the_expert_patch_and_submits_after_confirming(tiny: Task, box: DockerSandbox,
                                                                      fmt: str) -> None:
    config = TerminusConfig(format=fmt, max_duration_s=0.3)
    episode = run(tiny, box, scripted_model("oracle", tiny), config)
    assert episode.exit_reason == "submitted", episode.exit_message
    assert box.diff() == tiny.expert_patch
    oracle = task_oracle_steps(tiny)
    assert episode.steps == len(oracle) + 1  # the finish is asked to be confirmed once
    messages = episode.messages
    assert messages[0]["role"] == "user" and [m["role"] for m in messages[:2]] == ["user", "assistant"]
    assert ('"keystrokes"' if fmt == "json" else '<keystrokes duration="') in messages[0]["content"]
    assert sum(CONFIRM in text for text in user_texts(episode)) == 1
    assert keystrokes(episode)[0] == oracle[0]["bash"] + "\n"
    assert "tiny" in messages[2]["content"]  # the `ls` output came back
    assert box.exec("tmux ls").exit_code != 0, "the tmux session must be gone after the episode"


def test_oracle_on_the_compiled_smoke_task() -> None:
    task = smoke_task()
    for box in sandbox_for(task):
        episode = run(task, box, scripted_model("oracle", task), TerminusConfig(max_duration_s=1.0))
        assert episode.exit_reason == "submitted", episode.exit_message
        assert box.diff() == task.expert_patch
        built = box.exec("ls /testbed/*.so /testbed/*/*.so 2>/dev/null").output
        assert ".so" in built, "make ran in the terminal"


def test_noop_submits_an_empty_diff(tiny: Task, box: DockerSandbox) -> None:
    episode = run(tiny, box, scripted_model("noop", tiny))
    assert episode.exit_reason == "submitted" and episode.steps == 2
    assert box.diff() == ""
    assert episode.usage.calls == 2 and episode.usage.cost_usd > 0


def test_replay_reproduces_the_keystrokes(tiny: Task, box: DockerSandbox) -> None:
    first = run(tiny, box, scripted_model("oracle", tiny))
    for other in sandbox_for(tiny):
        again = run(tiny, other, scripted_model("replay", tiny, trajectory=first.messages))
        assert again.exit_reason == "submitted"
        assert keystrokes(again) == keystrokes(first) and len(keystrokes(first)) == 6
        assert other.diff() == tiny.expert_patch


# ---------------------------------------------------------------- reply faults and confirmation
def test_malformed_replies_get_an_error_and_run_nothing(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"fault": "malformed"}, {"fault": "bad_args"}, {"bash": "echo still-here", "duration": 0.2},
             {"finish": "done"}]
    episode = run(tiny, box, scripted_model("script", steps=steps))
    assert episode.exit_reason == "submitted" and episode.steps == 5
    texts = user_texts(episode)
    assert "could not be used" in texts[1] and "missing required field(s)" in texts[1]
    assert "'commands' must be a list" in texts[2]
    assert keystrokes(episode) == ["echo still-here\n"]


def test_repaired_json_runs_and_warns(tiny: Task, box: DockerSandbox) -> None:
    content = ('Here is my answer:\n{"analysis": "a", "plan": "p", '
               '"commands": [{"keystrokes": "echo fixed-$((40+2))\\n"}')
    steps = [{"raw": {"content": content}}, {"finish": "done"}]
    episode = run(tiny, box, scripted_model("script", steps=steps))
    assert episode.exit_reason == "submitted"
    observation = user_texts(episode)[1]
    assert "repaired automatically" in observation and "text before the JSON object" in observation
    assert "was not closed" in observation and "no duration" in observation
    assert "fixed-42" in observation


def test_a_false_resets_the_confirmation(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"finish": "done?"}, {"bash": "echo not-yet", "duration": 0.2}, {"finish": "done"}, {"finish": "sure"}]
    episode = run(tiny, box, scripted_model("script", steps=steps))
    assert episode.exit_reason == "submitted" and episode.steps == 4
    assert [CONFIRM in text for text in user_texts(episode)] == [False, True, False, True]


# ---------------------------------------------------------------- the terminal
def test_ctrl_c_interrupts_a_running_command(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": "sleep 100", "duration": 0.3}, raw([("C-c", 0.3)]),
             {"bash": "echo after-$((6*7))", "duration": 0.3}, {"finish": "done"}]
    started = time.monotonic()
    episode = run(tiny, box, scripted_model("script", steps=steps))
    assert episode.exit_reason == "submitted" and time.monotonic() - started < 30
    texts = user_texts(episode)
    assert "^C" in texts[2]
    assert "after-42" in texts[3], "the shell is back at its prompt only if sleep was interrupted"


def test_long_and_non_utf8_output(tiny: Task, box: DockerSandbox) -> None:
    # Over 10 kB in fewer lines than terminus-2's 2,000-line history: new output, cut to head and tail.
    steps = [{"bash": "seq 1 1800 | sed 's/$/ padding/'", "duration": 0.3},
             {"bash": r"printf 'ok-\xff\xfe-done\n'", "duration": 0.3},
             {"finish": "done"}]
    episode = run(tiny, box, scripted_model("script", steps=steps))
    assert episode.exit_reason == "submitted"
    long_text, bad_bytes = user_texts(episode)[1:3]
    assert "output limited to 10000 bytes" in long_text
    assert len(long_text.encode()) < 10_200 and long_text.rstrip().endswith("#")
    assert "\n1 padding\n2 padding\n" in long_text and "\n1799 padding\n1800 padding\n" in long_text
    recorded = episode.step_records[0].observations[0]
    assert recorded.full_chars > 13_000 and len(recorded.text.encode()) < 10_200
    assert "ok-" in bad_bytes and "-done" in bad_bytes


def test_duration_is_capped(tiny: Task, box: DockerSandbox) -> None:
    steps = [raw([("echo capped\n", 500)]), {"finish": "done"}]
    started = time.monotonic()
    episode = run(tiny, box, scripted_model("script", steps=steps), TerminusConfig(max_duration_s=1.0))
    assert time.monotonic() - started < 15
    assert episode.step_records[0].actions[0]["waited_s"] == 1.0
    assert "capped" in user_texts(episode)[1]


# ---------------------------------------------------------------- context, errors, limits
def test_context_handoff_summary_questions_answers_then_continues(tiny: Task, box: DockerSandbox) -> None:
    steps: list[dict[str, Any]] = [{"bash": f"seq 1 150; echo step-{i}", "duration": 0.2} for i in range(10)]
    steps.append({"finish": "done"})
    config = TerminusConfig(max_duration_s=0.3, context_window=3_000, handoff_free_tokens=1_000)
    episode = run(tiny, box, scripted_model("script", steps=steps), config)
    assert episode.exit_reason == "submitted", episode.exit_message
    roles_texts = [(m["role"], m["content"]) for m in episode.messages]
    summary_at = next(i for i, (r, t) in enumerate(roles_texts) if r == "user" and "hand-over summary" in t)
    # summary request, its answer, the fresh agent's question prompt, its questions, the answer request,
    # the answers, then the fresh conversation's resume message with the terminal state
    roles = [r for r, _ in roles_texts[summary_at:summary_at + 7]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    texts = [t for _, t in roles_texts[summary_at:summary_at + 7]]
    assert "You are taking over" in texts[2] and texts[1] in texts[2]  # the summary goes to the fresh agent
    assert texts[3] in texts[4]  # the questions go to the old conversation
    assert texts[5] in texts[6] and "terminal" in texts[6].lower()
    ran = keystrokes(episode)
    assert ran[-1].endswith("echo step-9\n") and len(ran) < 10  # hand-off calls consumed script steps


def test_provider_error_ends_with_model_error(tiny: Task, box: DockerSandbox) -> None:
    episode = run(tiny, box, scripted_model("script", steps=[{"bash": "echo hi", "duration": 0.1}, {"error": 401}]))
    assert episode.exit_reason == "model_error" and "auth" in episode.exit_message
    assert episode.steps == 2


def test_wall_clock_limit_cuts_the_wait(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": "sleep 100", "duration": 60}, {"finish": "done"}]
    started = time.monotonic()
    episode = run(tiny, box, scripted_model("script", steps=steps), TerminusConfig(),
                  Limits(max_steps=None, wall_clock_s=3.0))
    assert episode.exit_reason == "time_limit"
    assert time.monotonic() - started < 12


def test_step_limit_from_the_runner_is_honoured(tiny: Task, box: DockerSandbox) -> None:
    steps = [{"bash": f"echo {i}", "duration": 0.1} for i in range(10)]
    episode = run(tiny, box, scripted_model("script", steps=steps), limits=Limits(max_steps=3))
    assert episode.exit_reason == "step_limit" and episode.steps == 3


def test_task_prompt_hint_and_formats(tmp_path: Path) -> None:
    from scaffolds.terminus.agent import _TerminusEpisodeState  # the prompt builder works without a sandbox

    task = load_task(write_task(tmp_path, description="the loop adds one element at a time"))
    for fmt, hint in (("json", True), ("xml", False)):
        config = TerminusConfig(format=fmt, hint=hint)
        state = _TerminusEpisodeState(config, task, None, None, None)  # type: ignore[arg-type]
        prompt = state.task_prompt()
        assert "<test_script>\nimport tiny" in prompt and "    true" in prompt  # script and rebuild commands
        assert ("the loop adds one element at a time" in prompt) is hint
        assert "Waits are capped at 60 s" in state.format_prompt()


def _openai_server(replies: list[Any], seen: list[list[dict[str, Any]]]) -> tuple[Any, str]:
    """A loopback chat-completions server: reply i answers request i (a dict is sent as an error body)."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body["messages"])
            reply = replies[min(len(seen), len(replies)) - 1]
            if isinstance(reply, dict):
                status, payload = 400, {"error": reply}
            else:
                status, payload = 200, {
                    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/v1"


def test_context_overflow_from_the_provider_drops_the_latest_exchange_and_hands_off(tiny: Task,
                                                                                     box: DockerSandbox) -> None:
    def reply(keys: str, complete: bool = False) -> str:
        return json.dumps({"analysis": "a", "plan": "p", "task_complete": complete,
                           "commands": [{"keystrokes": keys, "duration": 0.1}] if keys else []})

    overflow = {"message": "This model's maximum context length is 100 tokens.", "type": "invalid_request_error",
                "code": "context_length_exceeded"}
    replies = [reply("echo one\n"), overflow, "SUMMARY: ran echo one", "QUESTIONS: what next?",
               "ANSWERS: finish", reply("", True), reply("", True)]
    seen: list[list[dict[str, Any]]] = []
    server, base = _openai_server(replies, seen)
    try:
        model = Model(ModelConfig(name="openai/overflow-test", api_base=base, attempts=1), api_key="sk-test")
        episode = run(tiny, box, model)
    finally:
        server.shutdown()
    assert episode.exit_reason == "submitted", episode.exit_message
    assert len(seen) == 7
    assert len(seen[1]) == 3  # first prompt, the reply, its observation: too long
    assert [m["role"] for m in seen[2]] == ["user", "user"]  # the latest exchange was dropped before the summary
    assert "hand-over summary" in seen[2][1]["content"]
    assert len(seen[3]) == 1 and "SUMMARY: ran echo one" in seen[3][0]["content"]  # a fresh conversation
    assert "QUESTIONS: what next?" in seen[4][-1]["content"]
    assert "ANSWERS: finish" in seen[5][-1]["content"] and len(seen[5]) == 3


# ---------------------------------------------------------------- where terminus-2 decides the numbers
@pytest.mark.parametrize("history", [2_000, 10_000_000])
def test_a_huge_output_past_the_history_shows_the_screen(history: int, tiny: Task, box: DockerSandbox) -> None:
    steps = [raw([("echo start\n", 0.3)]), raw([("seq 1 30000\n", 0.3)]), raw([], complete=True),
             raw([], complete=True)]
    config = TerminusConfig(max_duration_s=0.3, history_lines=history)
    shown = user_texts(run(tiny, box, scripted_model("script", steps=steps), config))[2]
    assert "29999\n30000" in shown
    if history == 2_000:  # terminus-2's pane: the previous read scrolled away, so the visible screen
        assert shown.count("\n") < 60 and "Current Terminal Screen:" in shown
    else:  # a longer history: the whole output is new, cut to its head and tail
        assert "New Terminal Output:" in shown and "seq 1 30000\n1\n2\n3\n" in shown
        assert "output limited to 10000 bytes" in shown


@pytest.mark.parametrize("fmt", ["json", "xml"])
def test_a_reply_cut_off_at_the_token_limit_runs_nothing(fmt: str, tiny: Task, box: DockerSandbox) -> None:
    def reply(commands: list[tuple[str, float]], complete: bool = False) -> dict[str, Any]:
        return {"raw": {"content": _terminus(f"terminus_{fmt}", commands, complete, "note")}}

    cut = {**reply([("touch /tmp/cut_off\n", 0.1)]), "finish_reason": "length"}
    steps = [cut, reply([("ls /tmp/cut_off; echo rc=$?\n", 0.2)]), reply([], True), reply([], True)]
    episode = run(tiny, box, scripted_model("script", steps=steps), TerminusConfig(format=fmt, max_duration_s=0.3))
    assert episode.exit_reason == "submitted"
    texts = user_texts(episode)
    if fmt == "json":
        assert "Nothing from your last reply was run" in texts[1]
        assert "touch /tmp/cut_off\n" not in keystrokes(episode) and "rc=2" in texts[2]
    else:  # a complete XML response inside the cut-off reply is used, as terminus-2 salvages it
        assert keystrokes(episode)[0] == "touch /tmp/cut_off\n" and "rc=0" in texts[2]


def test_reasoning_fields_go_back_to_the_provider(tiny: Task, box: DockerSandbox) -> None:
    from harness.models.model import REASONING_FIELDS
    from harness.models.records import Price
    from tests.openai_server import OpenAIServer, Reply, completion

    def answer(keys: str, complete: bool = False) -> dict[str, Any]:
        return completion(json.dumps({"analysis": "a", "plan": "p", "task_complete": complete,
                                      "commands": [{"keystrokes": keys, "duration": 0.1}] if keys else []}))

    blocks = [{"type": "thinking", "thinking": "look before editing", "signature": "sig-1"}]
    first = answer("echo one\n")
    first["choices"][0]["message"].update(reasoning_content="the tests run from /testbed", thinking_blocks=blocks)
    with OpenAIServer() as server:
        server.push(Reply(body=first), Reply(body=answer("", True)), Reply(body=answer("", True)))
        model = Model(ModelConfig(name="openai/thinker", api_base=server.base_url, price=Price(input=1.0, output=1.0)),
                      api_key="k")
        episode = run(tiny, box, model)
        sent = server.requests[1].body["messages"]
    assert episode.exit_reason == "submitted", episode.exit_message
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert assistant["reasoning_content"] == "the tests run from /testbed" and assistant["thinking_blocks"] == blocks
    kept = next(m for m in episode.messages if m["role"] == "assistant")
    assert {k: assistant.get(k) for k in REASONING_FIELDS if k in kept} == {k: kept[k] for k in REASONING_FIELDS
                                                                            if k in kept}
