"""Installed agents: Codex CLI from npm (its static build), run inside the rollout's sandbox, its model calls
answered by the run's gateway on the Responses wire. The scripted oracle answers through its exec_command
tool; the run, its grade, its limits and its cleanup are the runner's own."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from harness.grader.config import MEASURED

from harness.models.scripted import codex_replies
from harness.models.scripted.replies import detect_format, render
from scaffolds.installed.specs import Launch, agent_spec
from tests.test_runner import containers_of, results, run_dir, runner

CODEX = ("scaffold=installed/codex", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1")
EVENTS = "/tmp/optrunner-agent/codex.events.jsonl"
LAST = "/tmp/optrunner-agent/codex.last.txt"


def _served(record: dict) -> list[dict]:
    return [c for c in record["details"]["gateway_calls"] if c["status"] == 200]


@pytest.mark.docker
@pytest.mark.slow  # (CI time, 40-90 s here: make bench)
def test_codex_solves_a_task_through_the_gateway(tmp_path: Path) -> None:
    done = runner(*CODEX, "model=oracle", "grading.rounds=2", out=tmp_path, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "submitted" and record["exit_message"] == "the agent exited with status 0"
    agent = record["details"]["agent"]
    assert agent["exit_code"] == 0 and agent["version"] == "0.171.0" and agent["registry"] == "npm"
    assert "rollstats/window.py" in record["patch"]
    grading = record["grading"]
    # its tests passed and it measured faster (the outside-clock guard is statistical: it may flag when loaded)
    assert grading["status"] in MEASURED and grading["opt_base"], grading
    # every step is a call the gateway answered (no side calls), and the record's tokens are the gateway's
    calls = record["details"]["gateway_calls"]
    assert calls == _served(record) and record["steps"] == len(calls) == record["usage"]["calls"] > 2
    assert record["usage"]["input_tokens"] == sum(c["input_tokens"] for c in calls)
    assert record["usage"]["output_tokens"] == sum(c["output_tokens"] for c in calls)
    assert all(c["wire"] == "openai_responses" and c["path"] == "/v1/responses" and c["stream"] for c in calls)
    # the trajectory: its tool calls as actions with the results it sent back, and its own event stream
    trajectory = json.loads((run_dir(tmp_path) / record["trajectory"]).read_text())
    actions = [a for step in trajectory["step_records"] for a in step["actions"]]
    assert {a["tool"] for a in actions} == {"exec_command"}
    assert any(m.get("role") == "tool" for m in trajectory["messages"])
    logs = trajectory["details"]["agent_logs"]
    events = [json.loads(line) for line in logs[EVENTS].splitlines()]
    assert events[0]["type"] == "thread.started" and events[-1]["type"] == "turn.completed"
    commands = [e["item"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"]
    assert len(commands) == len(actions) and all(c["exit_code"] == 0 for c in commands)
    assert not any(c["command"].startswith("/bin/bash -lc") for c in commands)  # a plain shell: the image's PATH
    assert logs[LAST].startswith("Applied the optimization")
    (session,) = [path for path in logs if path.startswith("/var/lib/optrunner-agent/codex/sessions/")]
    assert json.loads(logs[session].splitlines()[0])["type"] == "session_meta"  # its transcript, found by the pattern
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]


def test_the_command_runs_codex_exec_against_the_gateway_only() -> None:
    spec = agent_spec("codex")
    assert spec.registry == "npm" and spec.wire == "openai_responses" and spec.logs[:2] == (EVENTS, LAST)
    assert spec.package.format(arch="arm64", musl="") == "@openai/codex@0.171.0-linux-arm64"
    line = spec.command(Launch(base_url="http://127.0.0.1:39217", token="tok", model="oracle", max_steps=7,
                               folder="/opt/optrunner-agent/codex", extra=("-c", "model_reasoning_effort=low")))
    exports = dict(w.split("=", 1) for w in shlex.split(line.split(";")[1].removeprefix(" export")))
    assert exports == {"HOME": "/tmp/optrunner-agent", "CODEX_HOME": "/var/lib/optrunner-agent/codex",
                       "OPTRUNNER_API_KEY": "tok"}
    run = next(part for part in line.split(";") if '/bin/codex"' in part)
    words = shlex.split(run.split('/bin/codex"', 1)[1])
    assert words[:7] == ["exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
                         "--strict-config", "--json", "-o", LAST]
    settings = [words[i + 1] for i, w in enumerate(words) if w == "-c"]
    assert settings[0] == 'model_provider="optrunner"'
    assert settings[1] == ('model_providers.optrunner={name = "optrunner", base_url = "http://127.0.0.1:39217/v1", '
                           'env_key = "OPTRUNNER_API_KEY", wire_api = "responses", request_max_retries = 0, '
                           'stream_max_retries = 0}')
    assert "check_for_update_on_startup=false" in settings and "allow_login_shell=false" in settings
    assert settings[-1] == "model_reasoning_effort=low"  # the user's own words come last, before the prompt
    at = words.index("<")  # the task on stdin (`-`), after every option
    assert words[at - 1:at + 2] == ["-", "<", "/tmp/optrunner-agent/task.md"]
    assert words[words.index("-m") + 1] == "oracle"
    assert "--max-turns" not in line and f"| tee {EVENTS}" in line  # its step limit is the gateway's


def test_scripted_steps_render_as_codex_tool_calls() -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("exec_command", "write_stdin", "view_image")]
    assert detect_format([], tools) == "codex"
    assert not codex_replies.detects({"bash", "Bash", "Write"})
    content, calls = render({"bash": "ls -la"}, "codex")
    assert content == "" and calls[0]["name"] == "exec_command"
    assert json.loads(calls[0]["arguments"]) == {"cmd": "ls -la", "yield_time_ms": 30000}
    _, calls = render({"write": "/tmp/a/b.py", "text": "x = '$HOME'\nOPTRUNNER_EOF\n"}, "codex")
    cmd = json.loads(calls[0]["arguments"])["cmd"]
    # a quoted marker the text does not hold: the shell expands nothing and the text cannot end it early
    assert cmd == ("mkdir -p '/tmp/a' && cat > '/tmp/a/b.py' <<'OPTRUNNER_EOF_'\n"
                   "x = '$HOME'\nOPTRUNNER_EOF\nOPTRUNNER_EOF_")
    assert render({"finish": "Done."}, "codex") == ("Done.", [])
    assert len(render({"fault": "multi"}, "codex")[1]) == 2
    assert render({"fault": "unknown_tool"}, "codex")[1][0]["name"] == "browse"
    with pytest.raises(ValueError, match="'malformed' has no Codex form"):
        render({"fault": "malformed"}, "codex")
