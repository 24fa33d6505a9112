"""The third side of the mini-swe-agent rows: upstream mini-swe-agent *installed* in the sandbox
(`scaffold=installed/mini_swe_agent`), its calls through the run's gateway and the model layer to the same
loopback server and scripted replies as the other two sides.

It runs the agent's own `mini` command with upstream's SWE-bench config (`swebench.yaml`, as the upstream
side does) on its local environment, the same per-command timeout, and upstream's SWE-bench step limit; the
observations are read from the server's log as for the other sides.
"""
from __future__ import annotations

import json
from typing import Any

from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.sandbox.providers import provider
from harness.tasks.task import Task
from scaffolds import make_scaffold
from scaffolds.installed.agent import prepare_images
from tests.bench.sidebyside.scripts import COMMAND_TIMEOUT_S, MODEL, Case
from tests.bench.sidebyside.sides import LIMITS, PRICE, SideRun, _left, _reset, _with_observations, observations
from tests.openai_server import OpenAIServer

ARGS = f"-c swebench.yaml -c environment.environment_class=local -c environment.timeout={COMMAND_TIMEOUT_S}"


def run_installed(case: Case, server: OpenAIServer, image: str, task: Task) -> SideRun:
    """mini_swe cases in tool mode only: the installed CLI's config is the tool-calling one."""
    if case.scaffold != "mini_swe" or case.mode != "tool":
        raise ValueError(f"the installed side runs mini-swe-agent's tool mode, not {case.name}")
    _reset(server, case)
    docker = provider("docker")
    installed_image = prepare_images("mini_swe_agent", {task.id: image}, docker, lambda _m: None)[task.id]
    model = Model(ModelConfig(name=f"openai/{MODEL}", api_base=server.base_url, price=PRICE, native_tools=True,
                              attempts=1, timeout_s=60), api_key="dummy")
    scaffold = make_scaffold("installed", {"agent": "mini_swe_agent", "args": ARGS})
    box = docker.start(installed_image)
    try:
        episode = scaffold.run(task, box, model, LIMITS["mini_swe"])
        hosts = [box.container.id]  # type: ignore[attr-defined]
    finally:
        box.close()
    # the gateway's calls are the steps; the agent sent each tool call's result back on its next call
    steps = []
    for record in episode.step_records:
        commands = [str(_arguments(a).get("command", "")) for a in record.actions]
        steps.append((commands, []))  # (exit codes: the agent reports them to its model only, in text)
    detail: dict[str, Any] = {"exit_message": episode.exit_message, "agent": episode.details.get("agent", {}),
                              "cost": episode.usage.cost_usd, "hosts": hosts}
    return SideRun("mini-swe-agent 2.4.6 installed (swebench.yaml, through the gateway)",
                   _with_observations(steps, observations(server, hosts)), episode.exit_reason.value,
                   len(server.requests), episode.steps, _left(server), detail)


def _arguments(action: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(action.get("arguments") or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
