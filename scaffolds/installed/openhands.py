"""OpenHands' agent from its SDK (PyPI `openhands-sdk` and `openhands-tools`), the CodeAct lineage that
OpenHands' results come from.

The SDK needs Python >= 3.12; where the task image's python3 is older, the agent's folder brings this machine's
interpreter (pythons.py). It runs in-process on a local workspace, no Docker and no network needed (its browser
tools are left out, as in its CLI mode); a small driver of ours (openhands_driver.py) builds the SDK's default
agent and runs one conversation on the task's text. `func-timeout`, one of openhands-tools' requirements, ships
only sources: its wheel is built here first (`sdists`).

Its model calls are OpenAI chat completions through LiteLLM to the gateway's `/v1`. Its unit is an iteration
(one model call and the actions it asks for); `max_iteration_per_run` is the run's step limit. Its condenser
summarises long histories with model calls of its own, which the gateway counts as steps too.
"""
from __future__ import annotations

from scaffolds.installed.specs import AGENT_HOME, TASK_FILE, AgentSpec, Launch, python_agent

VERSION = "1.58.2"
LOGS = f"{AGENT_HOME}/openhands"


def command(launch: Launch) -> str:
    env = {"HOME": AGENT_HOME, "OPENAI_API_KEY": launch.token, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "OPENHANDS_SUPPRESS_BANNER": "1"}
    args = ["--model", launch.model, "--api-base", f"{launch.base_url}/v1", "--task", TASK_FILE, "--logs", LOGS]
    if launch.max_steps:
        args += ["--max-iterations", str(launch.max_steps)]
    args += launch.extra
    return python_agent(launch, env, args)


SPEC = AgentSpec(
    name="openhands", registry="pypi", package=f"openhands-sdk=={VERSION} openhands-tools=={VERSION}",
    version=VERSION, module="openhands_driver:main", python=(3, 12), wire="openai_chat",
    step="a model call: an iteration of its agent loop (its `max_iteration_per_run`), or a condenser summary",
    command=command, logs=(f"{LOGS}/events.jsonl",), files=("openhands_driver.py",), sdists=("func-timeout",))
