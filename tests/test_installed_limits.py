"""The run's limits over every installed agent (mini-swe-agent, Claude Code, Codex, terminus-2, OpenHands), one
parametrised test per limit instead of one copy per agent: over the step or cost limit the gateway refuses the
next call and the agent is stopped; an agent's own turn limit is set to ours and stops it first; nothing is
left running. What only one agent does is in its own module (tests/test_installed*.py)."""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scaffolds.installed import pythons
from tests.test_runner import containers_of, results, run_dir, runner

needs_312 = pytest.mark.skipif(pythons.choose((3, 12), os.uname().machine, pythons.host_glibc()) is None,
                               reason="no CPython >= 3.12 on this machine to bring in")
STEPS = "model.steps=[{bash: 'echo \"openai=[$(env | grep -c ^OPENAI)] home=[$HOME]\"'}" + ", {bash: 'true'}" * 7 + "]"


def _pane_has_no_token(record: dict[str, Any], run: Path) -> None:
    """terminus-2: the terminal's shell has the sandbox's environment, not the driver's (token, HOME)."""
    trajectory = json.loads((run / record["trajectory"]).read_text())
    pane = trajectory["details"]["agent_logs"]["/logs/agent/terminus_2.pane"]
    assert "openai=[0] home=[/root]" in pane, pane[-2000:]


def _terminal_has_no_token(record: dict[str, Any], run: Path) -> None:
    """OpenHands: its terminal tool's first observation shows no key of the driver's."""
    trajectory = json.loads((run / record["trajectory"]).read_text())
    first = trajectory["step_records"][0]["observations"][0]
    assert "openai=[0]" in (first["text"] if isinstance(first, dict) else str(first))


@dataclass(frozen=True)
class Agent:
    name: str
    lift: tuple[str, ...]  # the overrides that lift its own turn limit, so the gateway's refusal is what stops it
    cost: str  # a cost limit two or three of its calls reach at the scripted price
    scripted: bool = False  # driven by model=script's plain steps (a terminal agent), else by the oracle
    own_limit: int | None = 3  # the step limit its own turn limit is tested at (None: it keeps none)
    marks: tuple[Any, ...] = ()  # on every case of this agent
    # on its step-limit case, the agent's first here: LONG (its image may be built first), or slow (make bench)
    step_marks: tuple[Any, ...] = ()
    check: Callable[[dict[str, Any], Path], None] | None = None  # its own assertion on a step-limited run

    @property
    def task(self) -> tuple[str, ...]:
        return (f"scaffold=installed/{self.name}", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1", "grade=none")

    @property
    def model(self) -> tuple[str, ...]:
        return ("model=script", STEPS) if self.scripted else ("model=oracle",)


LONG = pytest.mark.long("the agent's image is built from its registry packages on an engine that lacks it: "
                        "up to ~200 s")
AGENTS = (
    Agent("mini_swe_agent", ("scaffold.options.args='-c agent.step_limit=0'",), "0.003", step_marks=(LONG,)),
    Agent("claude_code", ("scaffold.options.args='--max-turns 1000'",), "0.03", own_limit=2, step_marks=(LONG,)),
    Agent("codex", (), "0.02", own_limit=None, step_marks=(LONG,)),  # it keeps no turn limit of its own
    Agent("terminus_2", ("scaffold.options.args='--max-turns 1000'",), "0.01", scripted=True, marks=(needs_312,),
          step_marks=(LONG,), check=_pane_has_no_token),
    Agent("openhands", ("scaffold.options.args='--max-iterations 1000'",), "0.02", scripted=True,
          marks=(needs_312,), step_marks=(pytest.mark.slow,), check=_terminal_has_no_token),
)


def _served(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in record["details"]["gateway_calls"] if c["status"] == 200]


def _case(agent: Agent, limit: str) -> Any:
    marks = (*agent.marks, *(agent.step_marks if limit == "steps" else (pytest.mark.slow,)))
    return pytest.param(agent, limit, id=f"{agent.name}-{limit}", marks=marks)


@pytest.mark.docker
@pytest.mark.parametrize(("agent", "limit"), [_case(a, limit) for a in AGENTS for limit in ("steps", "cost")])
def test_a_limit_refuses_the_next_call_and_stops_the_agent(tmp_path: Path, agent: Agent, limit: str) -> None:
    setting = "budget.max_steps=3" if limit == "steps" else f"budget.max_cost_usd={agent.cost}"
    done = runner(*agent.task, *agent.model, setting, *agent.lift, out=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == ("step_limit" if limit == "steps" else "cost_limit"), record["exit_message"]
    calls = record["details"]["gateway_calls"]
    served = len(_served(record))
    # the oracle's calls have a known size (two reach the cost limit); a terminal agent's prompts vary
    assert served == record["steps"] == (3 if limit == "steps" else 2 if not agent.scripted else served) >= 1
    assert served < 8 and calls[:served] == _served(record)  # what was answered, then only refusals
    assert [c["status"] for c in calls[served:]] and all(c["status"] == 403 for c in calls[served:])
    assert "optrunner:" in calls[-1]["error"]  # the agent was told why, then stopped
    if limit == "cost":
        assert record["usage"]["cost_usd"] >= float(agent.cost)
    elif agent.check is not None:
        agent.check(record, run_dir(tmp_path))
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("agent", [pytest.param(a, id=a.name, marks=a.marks) for a in AGENTS if a.own_limit])
def test_the_agents_own_turn_limit_is_ours(tmp_path: Path, agent: Agent) -> None:
    limit = agent.own_limit
    assert limit is not None
    done = runner(*agent.task, "model=oracle", f"budget.max_steps={limit}", out=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "step_limit" and record["steps"] == limit
    assert [c["status"] for c in record["details"]["gateway_calls"]] == [200] * limit  # it stopped by itself
    if agent.name == "claude_code":  # it says so itself
        assert record["details"]["agent"]["exit_code"] == 1
        assert '"terminal_reason":"max_turns"' in record["details"]["agent"]["output_tail"]
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]
