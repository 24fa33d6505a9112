"""Installed agents: Claude Code from npm (its native build), run inside the rollout's sandbox, its model calls
answered by the run's gateway on the Anthropic messages wire. The scripted oracle answers through its Bash
and Write tools; the run, its grade, its limits and its cleanup are the runner's own."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from harness.grader.config import MEASURED

from harness.models.scripted import claude_code_replies
from harness.models.scripted.replies import detect_format, render
from scaffolds.installed.specs import Launch, agent_spec
from tests.test_runner import containers_of, results, run_dir, runner

CLAUDE = ("scaffold=installed/claude_code", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1")
LOG = "/tmp/optrunner-agent/claude.stream.jsonl"


def _served(record: dict) -> list[dict]:
    return [c for c in record["details"]["gateway_calls"] if c["status"] == 200]


@pytest.mark.long("the agent's image is built from its registry packages on an engine that lacks it: up to ~200 s")
@pytest.mark.docker
def test_claude_code_solves_a_task_through_the_gateway(tmp_path: Path) -> None:
    done = runner(*CLAUDE, "model=oracle", "grading.rounds=2", out=tmp_path, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "submitted" and record["exit_message"] == "the agent exited with status 0"
    agent = record["details"]["agent"]
    assert agent["exit_code"] == 0 and agent["version"] == "2.1.332" and agent["registry"] == "npm"
    assert agent["installed"]["packages"] == ["@anthropic-ai/claude-code-linux-x64@2.1.332"]  # its locked build
    assert "rollstats/window.py" in record["patch"]
    grading = record["grading"]
    # its tests passed and it measured faster (the outside-clock guard is statistical: it may flag when loaded)
    assert grading["status"] in MEASURED and grading["opt_base"], grading
    # every step is a call the gateway answered (no side calls), and the record's tokens are the gateway's
    calls = record["details"]["gateway_calls"]
    assert calls == _served(record) and record["steps"] == len(calls) == record["usage"]["calls"] > 2
    assert record["usage"]["input_tokens"] == sum(c["input_tokens"] for c in calls)
    assert record["usage"]["output_tokens"] == sum(c["output_tokens"] for c in calls)
    assert all(c["wire"] == "anthropic_messages" and c["path"] == "/v1/messages" and c["stream"] for c in calls)
    # the trajectory: its tool calls as actions with the results it sent back, and its own event stream
    trajectory = json.loads((run_dir(tmp_path) / record["trajectory"]).read_text())
    actions = [a for step in trajectory["step_records"] for a in step["actions"]]
    assert {a["tool"] for a in actions} == {"Bash", "Write"}
    assert any(m.get("role") == "tool" for m in trajectory["messages"])
    events = [json.loads(line) for line in trajectory["details"]["agent_logs"][LOG].splitlines()]
    assert events[0]["type"] == "system" and events[-1]["type"] == "result"
    assert events[-1]["num_turns"] == record["steps"] and not events[-1]["is_error"]
    transcripts = [path for path in trajectory["details"]["agent_logs"] if "/.claude/projects/" in path]
    assert len(transcripts) == 1 and transcripts[0].endswith(".jsonl")  # its session, found by the pattern
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]


def test_the_command_runs_print_mode_against_the_gateway_only() -> None:
    spec = agent_spec("claude_code")
    assert spec.registry == "npm" and spec.wire == "anthropic_messages" and spec.logs[0] == LOG
    assert spec.package.format(arch="arm64", musl="-musl") == "@anthropic-ai/claude-code-linux-arm64-musl@2.1.332"
    line = spec.command(Launch(base_url="http://127.0.0.1:39217", token="tok", model="oracle", max_steps=7,
                               folder="/opt/optrunner-agent/claude_code", extra=("--effort", "low")))
    words = shlex.split(line.split(";")[1].removeprefix(" export"))
    env = dict(w.split("=", 1) for w in words)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:39217" and env["ANTHROPIC_API_KEY"] == "tok"
    assert env["HOME"] == "/tmp/optrunner-agent" and env["IS_SANDBOX"] == "1"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == env["DISABLE_NON_ESSENTIAL_MODEL_CALLS"] == "1"
    assert env["ENABLE_TOOL_SEARCH"] == "false"  # the gateway cannot expand tool_reference blocks
    assert ("/opt/optrunner-agent/claude_code/package/claude -p --output-format stream-json --verbose --model oracle "
            "--dangerously-skip-permissions --max-turns 7 --effort low < /tmp/optrunner-agent/task.md") in line
    unlimited = spec.command(Launch("http://x", "t", "m", None, "/f"))
    assert "--max-turns" not in unlimited and f"| tee {LOG}" in unlimited


def test_scripted_steps_render_as_claude_code_tool_calls() -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("Agent", "Bash", "Edit", "Read", "Write")]
    assert detect_format([], tools) == "claude_code"
    assert not claude_code_replies.detects({"bash", "write"})
    content, calls = render({"bash": "ls -la"}, "claude_code")
    assert content == "" and calls[0]["name"] == "Bash" and json.loads(calls[0]["arguments"])["command"] == "ls -la"
    _, calls = render({"write": "/tmp/a.py", "text": "x = 1\n"}, "claude_code")
    assert calls == [{"name": "Write", "arguments": json.dumps({"file_path": "/tmp/a.py", "content": "x = 1\n"})}]
    assert render({"finish": "Done."}, "claude_code") == ("Done.", [])
    assert len(render({"fault": "multi"}, "claude_code")[1]) == 2
    with pytest.raises(ValueError, match="absolute path"):
        render({"write": "a.py", "text": ""}, "claude_code")
    with pytest.raises(ValueError, match="'malformed' has no Claude Code form"):
        render({"fault": "malformed"}, "claude_code")
