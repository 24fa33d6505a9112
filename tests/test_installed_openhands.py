"""Installed agents: OpenHands' SDK agent (PyPI `openhands-sdk`, `openhands-tools`; Python >= 3.12, brought from
this machine where the image has 3.11) run inside the rollout's sandbox on a local workspace, no Docker and no
network; its model calls answered by the run's gateway. The scripted oracle answers through its terminal,
file_editor and finish tools."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.grader.config import MEASURED
from harness.models.scripted.replies import detect_format, render
from scaffolds.installed import pythons
from scaffolds.installed.specs import Launch, agent_spec
from tests.test_runner import containers_of, results, run_dir, runner

OPENHANDS = ("scaffold=installed/openhands", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1")
EVENTS = "/tmp/optrunner-agent/openhands/events.jsonl"
needs_312 = pytest.mark.skipif(pythons.choose((3, 12), os.uname().machine, pythons.host_glibc()) is None,
                               reason="no CPython >= 3.12 on this machine to bring in")


def _served(record: dict) -> list[dict]:
    return [c for c in record["details"]["gateway_calls"] if c["status"] == 200]


@pytest.mark.long("the agent's image is built from its registry packages on an engine that lacks it: up to ~200 s")
@pytest.mark.docker
@needs_312
def test_openhands_solves_a_task_through_the_gateway(tmp_path: Path) -> None:
    done = runner(*OPENHANDS, "model=oracle", "grading.rounds=2", out=tmp_path, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "submitted" and record["exit_message"] == "the agent exited with status 0"
    agent = record["details"]["agent"]
    assert agent["exit_code"] == 0 and agent["version"] == "1.58.2"
    assert "openhands: conversation finished" in agent["output_tail"]
    assert "rollstats/window.py" in record["patch"]
    grading = record["grading"]
    assert grading["status"] in MEASURED and grading["opt_base"], grading
    served = _served(record)
    assert record["steps"] == len(served) == record["usage"]["calls"] > 2
    assert record["usage"]["input_tokens"] == sum(c["input_tokens"] for c in served)
    assert record["usage"]["output_tokens"] == sum(c["output_tokens"] for c in served)
    trajectory = json.loads((run_dir(tmp_path) / record["trajectory"]).read_text())
    tools = [a["tool"] for step in trajectory["step_records"] for a in step["actions"]]
    assert {"terminal", "file_editor"} <= set(tools) and tools[-1] == "finish"
    # the agent's own event log: the task as its first message, the finish as its last action
    events = [json.loads(line) for line in trajectory["details"]["agent_logs"][EVENTS].splitlines()]
    assert events and any(e.get("kind") == "MessageEvent" for e in events)
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]


def test_the_command_runs_the_sdk_driver_against_the_gateway_only() -> None:
    spec = agent_spec("openhands")
    line = spec.command(Launch(base_url="http://127.0.0.1:39217", token="tok-1", model="m", max_steps=7,
                               folder="/opt/optrunner-agent/openhands"))
    assert "OPENAI_API_KEY=tok-1" in line and "--api-base http://127.0.0.1:39217/v1" in line
    assert "--max-iterations 7" in line and "LITELLM_LOCAL_MODEL_COST_MAP=True" in line
    assert spec.python == (3, 12) and spec.sdists == ("func-timeout",) and spec.files == ("openhands_driver.py",)


def test_scripted_steps_render_as_openhands_tool_calls() -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("terminal", "file_editor", "task_tracker",
                                                                       "finish", "think")]
    assert detect_format([], tools) == "openhands"
    assert render({"bash": "ls"}, "openhands")[1] == [{"name": "terminal", "arguments": '{"command": "ls"}'}]
    (call,) = render({"write": "/tmp/a.py", "text": "x = 1\n"}, "openhands")[1]
    assert call["name"] == "file_editor" and json.loads(call["arguments"]) == {
        "command": "create", "path": "/tmp/a.py", "file_text": "x = 1\n"}
    assert render({"finish": "done"}, "openhands")[1] == [{"name": "finish", "arguments": '{"message": "done"}'}]
    with pytest.raises(ValueError, match="absolute path"):
        render({"write": "a.py", "text": ""}, "openhands")


