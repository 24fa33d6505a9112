"""The other side of the codeact row: OpenHands' own agent (its SDK's default agent, the CodeAct lineage GSO's
codeact results come from) *installed* in the sandbox (`scaffold=installed/openhands`), its calls through the
run's gateway and the model layer to the same loopback server.

The scripted calls are the case's, under the SDK's tool names and arguments: `execute_bash` is its `terminal`
(`is_input` a boolean), `str_replace_editor` its `file_editor`, `finish` keeps only its `message`. Observations
are read from the server's log as for the other sides; steps are compared as `tool command path` lines with the
SDK's names mapped back to ours.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.sandbox.providers import provider
from harness.tasks.task import Task
from scaffolds import make_scaffold
from scaffolds.installed.agent import prepare_images
from scaffolds.installed.openhands import VERSION
from tests.bench.sidebyside.scripts import MODEL, Case
from tests.bench.sidebyside.sides import (LIMITS, OPENHANDS_NAMES, PRICE, SideRun, _left, _reset,
                                          _with_observations, observations, tool_action)
from tests.openai_server import OpenAIServer

THEIRS = {ours: theirs for theirs, ours in OPENHANDS_NAMES.items()}


def _translated(body: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(json.dumps(body))
    for call in body["choices"][0]["message"].get("tool_calls") or []:
        function = call["function"]
        arguments = json.loads(function["arguments"])
        if function["name"] == "execute_bash" and "is_input" in arguments:
            arguments["is_input"] = arguments["is_input"] == "true"
        if function["name"] == "finish":
            arguments = {"message": arguments.get("message", "")}
        function["name"] = THEIRS.get(function["name"], function["name"])
        function["arguments"] = json.dumps(arguments)
    return body


def run_openhands(case: Case, server: OpenAIServer, image: str, task: Task) -> SideRun:
    if case.scaffold != "codeact":
        raise ValueError(f"the OpenHands side runs codeact cases, not {case.name}")
    _reset(server, dataclasses.replace(case, replies=tuple(_translated(b) for b in case.replies)))
    docker = provider("docker")
    installed_image = prepare_images("openhands", {task.id: image}, docker, lambda _m: None)[task.id]
    model = Model(ModelConfig(name=f"openai/{MODEL}", api_base=server.base_url, price=PRICE, native_tools=True,
                              attempts=1, timeout_s=60), api_key="dummy")
    box = docker.start(installed_image)
    try:
        episode = make_scaffold("installed", {"agent": "openhands"}).run(task, box, model, LIMITS["codeact"])
        hosts = [box.container.id]  # type: ignore[attr-defined]
    finally:
        box.close()
    steps = [([tool_action(a) for a in record.actions], []) for record in episode.step_records]
    detail: dict[str, Any] = {"exit_message": episode.exit_message, "agent": episode.details.get("agent", {}),
                              "cost": episode.usage.cost_usd, "hosts": hosts}
    return SideRun(f"OpenHands SDK {VERSION} installed (default agent, CLI mode)",
                   _with_observations(steps, observations(server, hosts)), episode.exit_reason.value,
                   len(server.requests), episode.steps, _left(server), detail)
