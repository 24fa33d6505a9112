"""ATIF export (runner.atif, runner.export): every scaffold kind's trajectory becomes a valid ATIF v1.7 document.

Valid means: tests/fixtures/atif_v1_7.schema.json (this project's transcription of the field tables of Harbor's
RFC 0001; Harbor's own package needs Python 3.12 and brings its whole framework) and the rules across fields
that Harbor's validator holds besides (step ids 1, 2, 3...; an observation result names a tool call of its own
step; ISO 8601 timestamps; unique tool call ids in a step). The validator is shown to reject each kind of fault.

The trajectories are the real scaffolds' own, made offline: a stored codeact run (tests/fixtures/run_a718ad9);
mini_swe, codeact and terminus run with the scripted model, their commands answered by stand-ins for the
container's processes, shell and tmux (the loops, prompts, parsing and step records are the real code); an
installed agent's episode recorded by the gateway handler (`RecordingHandler`), fed requests as an agent CLI sends them.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.models.scripted import Script
from harness.sandbox.interface import ExecResult, SandboxLimits
from harness.tasks import Task
from harness.tasks.folder import load_task
from runner.atif import to_atif
from runner.export import main as export_main
from scaffolds.codeact.agent import CodeActScaffold
from scaffolds.codeact.shell import ShellResult
from scaffolds.episode import Submitted
from scaffolds.installed.agent import RecordingHandler
from scaffolds.limits import Limits
from scaffolds.mini_swe.agent import BASH_TOOL, SENTINEL, MiniSweScaffold
from scaffolds.recorder import Recorder
from scaffolds.terminus import TerminusConfig, TerminusScaffold
from scaffolds.terminus.tmux import Capture
from tests.conftest import write_task

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
RUN = FIXTURES / "run_a718ad9"
VALIDATOR = Draft202012Validator(json.loads((FIXTURES / "atif_v1_7.schema.json").read_text()))
LIMITS = Limits(max_steps=30, snapshot_every=0)


def problems(doc: dict[str, Any]) -> list[str]:
    """Why `doc` is not a valid ATIF trajectory (nothing: it is)."""
    found = [f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)]
    if found:
        return found
    for n, step in enumerate(doc["steps"], 1):
        if step["step_id"] != n:
            found.append(f"steps[{n - 1}].step_id is {step['step_id']}, not {n}")
        if step.get("timestamp") is not None:
            try:
                datetime.fromisoformat(step["timestamp"].replace("Z", "+00:00"))
            except ValueError:
                found.append(f"step {n}: timestamp {step['timestamp']!r} is not ISO 8601")
        ids = [c["tool_call_id"] for c in step.get("tool_calls") or []]
        if len(ids) != len(set(ids)):
            found.append(f"step {n}: a tool_call_id twice")
        for result in (step.get("observation") or {}).get("results") or []:
            if result.get("source_call_id") is not None and result["source_call_id"] not in ids:
                found.append(f"step {n}: source_call_id {result['source_call_id']!r} names no tool call of the step")
    embedded = [t.get("trajectory_id") for t in doc.get("subagent_trajectories") or []]
    if len(embedded) != len(set(embedded)):
        found.append("two embedded subagents share a trajectory_id")
    return found


def exported(trajectory: dict[str, Any], record: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = to_atif(json.loads(json.dumps(trajectory, default=str)), record, session_id="run/t/0", version="9.9")
    assert problems(doc) == [], json.dumps(doc, indent=1)[:3000]
    assert doc["schema_version"] == "ATIF-v1.7" and doc["session_id"] == "run/t/0"
    return doc


def agent_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in doc["steps"] if s["source"] == "agent"]


def assert_metrics_are_the_calls(doc: dict[str, Any], trajectory: dict[str, Any]) -> None:
    calls = [s["call"] for s in trajectory["step_records"] if s.get("call")]
    metrics = [s["metrics"] for s in agent_steps(doc) if "metrics" in s]
    assert [(m["prompt_tokens"], m["completion_tokens"], m["cached_tokens"], m.get("cost_usd")) for m in metrics] \
        == [(c["input_tokens"], c["output_tokens"], c["cached_read_tokens"], c["cost_usd"]) for c in calls]
    usage, final = trajectory["usage"], doc["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"], final["total_cached_tokens"]) \
        == (usage["input_tokens"], usage["output_tokens"], usage["cached_read_tokens"])
    assert final["total_cost_usd"] == pytest.approx(usage["cost_usd"]) and final["total_steps"] == len(doc["steps"])


def script(steps: list[dict[str, Any]]) -> Model:
    return Model(ModelConfig(name="scripted/script", attempts=1), script=Script(steps=steps))


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return load_task(write_task(tmp_path_factory.mktemp("atif")))


# ---------------------------------------------------------------- stand-ins for what runs in the container
class Box:
    """A sandbox whose commands are answered here: `exec` only (no stream, so commands take the exec path)."""
    workdir = "/testbed"
    limits = SandboxLimits()

    def open_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def exec(self, command: str, timeout: float = 0, **kwargs: Any) -> ExecResult:
        if SENTINEL in command:
            return ExecResult(f"{SENTINEL}\n", 0, False, 0.01)
        return ExecResult(f"output of {command}\n", 0 if "false" not in command else 1, False, 0.01)


class Shell:
    """codeact's persistent shell, answered here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.cwd = "/testbed"

    def start(self) -> None:
        pass

    def run(self, command: str, is_input: bool, timeout: float) -> ShellResult:
        return ShellResult(f"output of {command}\n", 0, self.cwd)

    def close(self) -> None:
        pass


class Terminal:
    """terminus's tmux session, answered here: every command prints `lines` lines."""
    lines = 2

    def __init__(self, sandbox: Any, *args: Any, **kwargs: Any) -> None:
        self.sandbox, self.buffer = sandbox, "$ "

    def capture(self, timeout: float = 0) -> Capture:
        return Capture(self.buffer[-2000:], self.buffer, True)

    def start(self, timeout: float = 0, cwd: str | None = None) -> Capture:
        return self.capture()

    def send(self, keystrokes: str, wait_s: float = 0.0, timeout: float = 0) -> Capture:
        self.send_only(keystrokes)
        return self.capture()

    def send_only(self, keystrokes: str, timeout: float = 0) -> None:
        printed = "".join(f"{keystrokes.strip()} line {i}\n" for i in range(self.lines))
        self.buffer += f"{keystrokes}{printed}$ "

    def cwd(self) -> str:
        return "/testbed"

    def close(self) -> None:
        pass


# ---------------------------------------------------------------- every scaffold kind
def test_a_stored_codeact_run_exports_every_rollout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    assert export_main([str(run)]) == 0
    assert capsys.readouterr().out.strip() == f"atif: 6 trajectories written to {run / 'atif'}"
    files = sorted(p.relative_to(run / "atif").as_posix() for p in (run / "atif").rglob("*.json"))
    assert files == [f"{t}/{i}.json" for t in ("imgblur", "rollstats", "spanindex") for i in (0, 1)]
    for name in files:
        doc = json.loads((run / "atif" / name).read_text())
        trajectory = json.loads((run / "trajectories" / name).read_text())
        record = json.loads((run / "rollouts" / name).read_text())
        assert problems(doc) == []
        assert doc["session_id"] == doc["trajectory_id"] == f"run/{name.removesuffix('.json')}"
        assert doc["agent"] == {"name": "codeact", "version": "0.2.0", "model_name": "scripted/oracle",
                                "extra": {"scaffold": "codeact"}}
        assert [s["source"] for s in doc["steps"]] == ["system", "user"] + ["agent"] * record["steps"]
        assert doc["steps"][1]["message"] == trajectory["messages"][1]["content"]
        assert_metrics_are_the_calls(doc, trajectory)
        replies = [m for m in trajectory["messages"] if m["role"] == "assistant"]
        for step, reply in zip(agent_steps(doc), replies, strict=True):
            assert step["message"] == reply["content"] and step["llm_call_count"] == 1
            assert [c["tool_call_id"] for c in step["tool_calls"]] == [c["id"] for c in reply["tool_calls"]]
            assert all(r["source_call_id"] == step["tool_calls"][0]["tool_call_id"]
                       for r in step.get("observation", {}).get("results", []))
        tools = [m for m in trajectory["messages"] if m["role"] == "tool"]
        shown = [r["content"] for s in agent_steps(doc) for r in s.get("observation", {}).get("results", [])]
        assert shown == [m["content"] for m in tools]  # every result the model was shown, once, in order
        assert doc["extra"]["exit_reason"] == record["exit_reason"]


@pytest.mark.parametrize("mode", ["text", "tool"])
def test_mini_swe_episodes_with_a_format_error_export(mode: str, task: Task) -> None:
    steps = [{"bash": "ls"}, {"fault": "malformed"}, {"bash": "false"}, {"finish": "done"}]
    episode = MiniSweScaffold(mode=mode).run(task, Box(), script(steps), LIMITS)  # type: ignore[arg-type]
    assert episode.exit_reason == "submitted", episode.exit_message
    trajectory = episode.to_dict()
    doc = exported(trajectory, {"model_name": "scripted/script", "instance_id": "tiny", "rollout": 0})
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent", "agent", "agent"]
    assert_metrics_are_the_calls(doc, trajectory)
    ls, bad, false, submit = agent_steps(doc)
    assert ls["tool_calls"][0]["function_name"] == "bash" and ls["tool_calls"][0]["arguments"] == {"command": "ls"}
    (result,) = ls["observation"]["results"]  # the command's output, tied to its call; not the error prompt
    assert result["source_call_id"] == ls["tool_calls"][0]["tool_call_id"] and "output of ls" in result["content"]
    # the unparsable reply is no part of the conversation: its step keeps it, and the prompt that replaced it
    assert "tool_calls" not in bad and bad["message"] == trajectory["step_records"][1]["actions"][0]["reply"]
    assert bad["extra"]["format_error"] and len(bad["observation"]["results"]) == 1
    assert bad["observation"]["results"][0]["content"] in [m["content"] for m in trajectory["messages"]]
    assert false["tool_calls"][0]["extra"]["exit_code"] == 1
    assert SENTINEL in submit["tool_calls"][0]["arguments"]["command"]
    assert doc["agent"]["name"] == "mini_swe" and doc["agent"]["version"] == "9.9"
    assert doc["agent"]["extra"]["patch_source"] == "container"


@pytest.mark.parametrize("native", [True, False])
def test_codeact_episodes_export(native: bool, task: Task, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scaffolds.codeact.agent.PersistentShell", Shell)
    steps = [{"bash": "ls"}, {"fault": "malformed"}, {"fault": "multi"}, {"finish": "done"}]
    scaffold = CodeActScaffold(native_tools=native)
    episode = scaffold.run(task, Box(), script(steps), LIMITS)  # type: ignore[arg-type]
    assert episode.exit_reason == "submitted", episode.exit_message
    trajectory = episode.to_dict()
    doc = exported(trajectory)
    assert_metrics_are_the_calls(doc, trajectory)
    ls, chat, multi, finish = agent_steps(doc)
    assert ls["tool_calls"][0]["function_name"] == "execute_bash"
    assert ls["tool_calls"][0]["arguments"]["command"] == "ls"
    assert ls["observation"]["results"][0]["source_call_id"] == ls["tool_calls"][0]["tool_call_id"]
    assert "output of ls" in ls["observation"]["results"][0]["content"]
    # a reply without a call: no tool call, and the nudge the model got next as its observation
    assert "tool_calls" not in chat and chat["observation"]["results"][0].get("source_call_id") is None
    calls = multi["tool_calls"]
    if native:  # both calls ran, each result tied to its own call
        assert [r["source_call_id"] for r in multi["observation"]["results"]] == [c["tool_call_id"] for c in calls]
    else:  # the text protocol runs one call per reply (the second is reported as an error)
        assert len(calls) == 1
    assert finish["tool_calls"][0]["function_name"] == "finish" and "observation" not in finish
    assert doc["agent"]["extra"]["mode"] == ("native" if native else "text")


def test_terminus_episodes_with_a_hand_off_export(task: Task, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scaffolds.terminus.agent.TmuxSession", Terminal)
    monkeypatch.setattr(Terminal, "lines", 60)
    steps: list[dict[str, Any]] = [{"bash": f"seq 1 60; echo step-{i}", "duration": 0.01} for i in range(6)]
    steps += [{"fault": "multi"}, {"finish": "done"}]
    config = TerminusConfig(max_duration_s=0.01, context_window=3_000, handoff_free_tokens=1_000)
    episode = TerminusScaffold(config).run(task, Box(), script(steps), LIMITS)  # type: ignore[arg-type]
    assert episode.exit_reason == "submitted", episode.exit_message
    trajectory = episode.to_dict()
    doc = exported(trajectory)
    assert_metrics_are_the_calls(doc, trajectory)
    assert [s["source"] for s in doc["steps"][:2]] == ["user", "agent"]  # terminus has no system prompt
    replies = [m["content"] for m in trajectory["messages"] if m["role"] == "assistant"]
    assert [s["message"] for s in agent_steps(doc)] == replies  # hand-off calls included, in order
    keyed = [s for s in agent_steps(doc) if "tool_calls" in s]
    assert keyed and all(c["function_name"] == "send_keys" for s in keyed for c in s["tool_calls"])
    assert any(len(s["tool_calls"]) == 2 for s in keyed)  # one reply, two commands
    assert any("hand-over summary" in r["content"] for s in agent_steps(doc)
               for r in s.get("observation", {}).get("results", []))  # the summary request came after a reply
    assert len(agent_steps(doc)) > len(keyed)  # the hand-off's calls run nothing


def _installed(model: Model, agent: str) -> tuple[Recorder, RecordingHandler]:
    rec = Recorder(f"installed/{agent}", Box(), model, Limits(snapshot_every=0))  # type: ignore[arg-type]
    rec.details["agent"] = {"name": agent, "version": "1.2.3", "wire": "openai_chat", "registry": "npm",
                            "package": agent}
    rec.details["agent_logs"] = {"/root/log.txt": "long"}
    return rec, RecordingHandler(rec)


def _call(name: str, command: str) -> dict[str, str]:
    return {"name": name, "arguments": json.dumps({"command": command})}


def test_an_installed_agents_calls_through_the_gateway_export() -> None:
    model = script([
        {"raw": {"content": "Looking around.", "tool_calls": [_call("bash", "ls")]}},
        {"raw": {"content": "Speed up the module"}},  # a side call (a session title): not in the conversation
        {"raw": {"content": "Two checks.", "tool_calls": [_call("bash", "echo a"), _call("bash", "echo b")]}},
        {"raw": {"content": "Done: the loop is vectorised."}},
    ])
    rec, session = _installed(model, "claude_code")
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."},
                                          {"role": "user", "content": [{"type": "text", "text": "Make it fast."}]}]
    for request in range(4):
        if request == 1:
            session([{"role": "user", "content": "A title for: Make it fast."}], [BASH_TOOL], {})
            continue
        reply = session(conversation, [BASH_TOOL], {})
        conversation.append(reply.message)
        conversation += [{"role": "tool", "tool_call_id": c.id, "content": f"ran {c.arguments}"}
                         for c in reply.tool_calls]
    session.finish()
    trajectory = rec.finish(Submitted("the agent exited with status 0"), session.last).to_dict()
    doc = exported(trajectory, {"model_name": "scripted/script"})
    assert_metrics_are_the_calls(doc, trajectory)
    assert doc["agent"]["name"] == "claude_code" and doc["agent"]["version"] == "1.2.3"
    assert doc["agent"]["extra"]["scaffold"] == "installed/claude_code" and "agent_logs" not in doc["agent"]["extra"]
    assert doc["steps"][1] == {"step_id": 2, "source": "user", "message": "Make it fast."}
    first, side, checks, done = agent_steps(doc)
    assert first["message"] == "Looking around." and first["tool_calls"][0]["arguments"] == {"command": "ls"}
    assert first["observation"]["results"][0]["content"].startswith("ran ")  # as the conversation has it
    assert side["message"] == "" and side["extra"]["reply_kept"] is False and "metrics" in side
    assert [c["arguments"]["command"] for c in checks["tool_calls"]] == ["echo a", "echo b"]
    assert [r["source_call_id"] for r in checks["observation"]["results"]] \
        == [c["tool_call_id"] for c in checks["tool_calls"]]
    assert done["message"] == "Done: the loop is vectorised." and "tool_calls" not in done


def test_an_installed_agent_that_replies_in_text_exports() -> None:
    def keys(text: str, complete: bool = False) -> dict[str, Any]:
        return {"raw": {"content": json.dumps({"commands": [{"keystrokes": text}], "task_complete": complete})}}
    model = script([keys("ls\n"), keys("make\n"), keys("", True)])
    rec, session = _installed(model, "terminus_2")
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "Reply in JSON with keystrokes."}]
    for n in range(3):
        reply = session(conversation, None, {})
        conversation += [reply.message, {"role": "user", "content": f"terminal {n}"}]
    trajectory = rec.finish(Submitted("done"), session.last).to_dict()
    doc = exported(trajectory)
    assert [s["source"] for s in doc["steps"]] == ["user", "agent", "agent", "agent"]
    assert [json.loads(s["message"])["commands"][0]["keystrokes"] for s in agent_steps(doc)] == ["ls\n", "make\n", ""]
    assert [[r["content"] for r in s.get("observation", {}).get("results", [])] for s in agent_steps(doc)] \
        == [["terminal 0"], ["terminal 1"], []]
    assert all("metrics" in s and "tool_calls" not in s for s in agent_steps(doc))


def test_reasoning_unknown_costs_late_calls_and_failed_calls() -> None:
    call = {"started_at": 100.0, "latency_s": 1.0, "input_tokens": 10, "cached_read_tokens": 4,
            "cache_write_tokens": 2, "output_tokens": 5, "reasoning_tokens": 3, "cost_usd": None,
            "finish_reason": "stop", "attempts": 1}
    trajectory = {
        "scaffold": "mini_swe", "exit_reason": "model_error", "exit_message": "boom", "steps": 2,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cached_read_tokens": 4},
        "messages": [{"role": "user", "content": "go"},
                     {"role": "assistant", "content": "ok", "reasoning_content": "think",
                      "thinking_blocks": [{"thinking": "harder"}]}],
        "step_records": [{"index": 0, "started_at": 99.0, "call": call, "actions": [], "observations": []},
                         {"index": 1, "started_at": 101.0, "call": None, "actions": [], "observations": []}],
        "late_calls": [{**call, "cost_usd": 0.5}]}
    doc = exported(trajectory)
    (step,) = agent_steps(doc)
    assert step["reasoning_content"] == "think\nharder" and step["timestamp"] == "1970-01-01T00:01:40Z"
    assert step["metrics"] == {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 4,  # no cost: no price
                               "extra": {"cache_write_tokens": 2, "reasoning_tokens": 3, "latency_s": 1.0,
                                         "finish_reason": "stop", "attempts": 1}}
    assert (doc["final_metrics"]["total_prompt_tokens"], doc["final_metrics"]["total_cached_tokens"]) == (10, 4)
    assert "total_cost_usd" not in doc["final_metrics"]  # a call without a price: no total, not a guess
    assert doc["final_metrics"]["extra"] == {"cache_write_tokens": 2, "reasoning_tokens": 3, "late_calls": 1,
                                             "late_calls_cost_usd": 0.5}
    assert doc["extra"]["failed_calls"] == 1 and doc["extra"]["exit_reason"] == "model_error"


# ---------------------------------------------------------------- the validator can fail
def _break(doc: dict[str, Any], how: str) -> None:
    agent = next(s for s in doc["steps"] if s["source"] == "agent" and s.get("tool_calls"))
    if how == "agent without version":
        del doc["agent"]["version"]
    elif how == "tool calls on a user step":
        doc["steps"][1]["tool_calls"] = agent["tool_calls"]
    elif how == "metrics on the system prompt":
        doc["steps"][0]["metrics"] = {"prompt_tokens": 1}
    elif how == "a step id skipped":
        doc["steps"][-1]["step_id"] += 1
    elif how == "an unknown source":
        agent["source"] = "assistant"
    elif how == "a result naming no call":
        agent["observation"]["results"][0]["source_call_id"] = "nobody"
    elif how == "arguments as text":
        agent["tool_calls"][0]["arguments"] = "{}"
    elif how == "a field ATIF does not have":
        doc["steps_total"] = 3
    elif how == "no inference with metrics":
        agent["llm_call_count"] = 0
    elif how == "a timestamp that is not one":
        agent["timestamp"] = "yesterday"
    elif how == "a later schema":
        doc["schema_version"] = "ATIF-v2.0"


@pytest.mark.parametrize("how", ["agent without version", "tool calls on a user step", "metrics on the system prompt",
                                 "a step id skipped", "an unknown source", "a result naming no call",
                                 "arguments as text", "a field ATIF does not have", "no inference with metrics",
                                 "a timestamp that is not one", "a later schema"])
def test_the_validator_rejects_each_fault(how: str) -> None:
    doc = to_atif(json.loads((RUN / "trajectories/rollstats/0.json").read_text()), session_id="s")
    assert problems(doc) == []
    _break(doc, how)
    assert problems(doc), how


# ---------------------------------------------------------------- the command
def test_discarded_attempts_export_beside_their_rollout_and_out_elsewhere(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    shutil.copy(run / "trajectories/rollstats/1.json", run / "trajectories/rollstats/1.attempt1.json")
    (run / "trajectories/rollstats/notes.json").write_text("{}")  # not a trajectory's name: left alone
    (run / "trajectories/imgblur/0.json").write_text("{torn")
    out = tmp_path / "elsewhere"
    assert export_main([str(run), "--format", "atif", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"atif: 6 trajectories written to {out}"
    assert captured.err.strip() == "skipped 1 unreadable trajectory file(s): trajectories/imgblur/0.json"
    assert not (run / "atif").exists()
    attempt = json.loads((out / "rollstats/1.attempt1.json").read_text())
    assert problems(attempt) == []
    assert attempt["session_id"] == "run/rollstats/1" and attempt["trajectory_id"] == "run/rollstats/1/attempt1"
    assert not (out / "rollstats/notes.json").exists() and not (out / "imgblur/0.json").exists()
    assert len(list(out.rglob("*.json"))) == 6


@pytest.mark.parametrize("what", ["not a run", "missing", "unknown format"])
def test_refusals_are_one_line_and_write_nothing(what: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    if what == "not a run":
        run.mkdir()
    elif what == "unknown format":
        shutil.copytree(RUN, run)
    args = [str(run if what != "missing" else tmp_path / "nowhere")]
    args += ["--format", "sharegpt"] if what == "unknown format" else []
    before = sorted(p for p in tmp_path.rglob("*"))
    assert export_main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1, captured.err
    assert captured.err.startswith("error: ") and "Traceback" not in captured.err
    expected = "unknown format 'sharegpt'; known: atif" if what == "unknown format" else "is not a run directory"
    assert expected in captured.err
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_python_m_runner_export_refuses_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "runner.export", str(tmp_path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"error: {tmp_path} is not a run directory (no config.yaml)"


@pytest.mark.docker
def test_atif_true_writes_each_rollout_beside_the_run_as_it_finishes(tmp_path: Path) -> None:
    from tests.test_runner import run_dir, runner

    done = runner("model=oracle", "scaffold=mini_swe", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=2",
                  "grade=none", "atif=true", out=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    path = run_dir(tmp_path)
    docs = {p.name: json.loads(p.read_text()) for p in sorted((path / "atif" / "rollstats").glob("*.json"))}
    assert set(docs) == {"0.json", "1.json"}
    for doc in docs.values():
        assert problems(doc) == [] and doc["schema_version"] == "ATIF-v1.7"
        assert any(step["source"] == "agent" for step in doc["steps"])
