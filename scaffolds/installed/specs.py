"""The agent CLIs the `installed` scaffold runs, each as its registry ships it.

An `AgentSpec` says where the agent comes from (a registry, a package, a pinned version), what it needs
in the task image (a Python of some version), which wire format its model calls use, what it counts as a
step, and how it is started non-interactively on a task's text with its model calls sent to the run's
gateway. `command` writes that start as one shell command; everything it is given comes from `Launch`.
"""
from __future__ import annotations

import importlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass

INSTALL_ROOT = "/opt/optrunner-agent"  # where an agent's folder lies in its image (read-only there)
AGENT_HOME = "/tmp/optrunner-agent"  # the agent's HOME, config and logs during a rollout
TASK_FILE = f"{AGENT_HOME}/task.md"


@dataclass(frozen=True)
class Launch:
    """What a start command needs: where the gateway answers, the rollout's token (the only key the
    agent ever sees), the model name it may ask for (the gateway serves the run's model whatever it
    asks), the step limit in the agent's own unit, and where its folder is."""
    base_url: str  # http://127.0.0.1:PORT, no path
    token: str
    model: str
    max_steps: int | None
    folder: str  # INSTALL_ROOT/<agent>
    extra: tuple[str, ...] = ()  # the user's own arguments for the agent (scaffold.options.args)


@dataclass(frozen=True)
class AgentSpec:
    name: str
    registry: str  # "pypi" or "npm"
    package: str  # the requirements (pypi: words), versions pinned; npm: {arch} (x64, arm64), {musl} ("" or "-musl")
    version: str
    module: str  # pypi: what the launcher runs (`module:function`); npm: "" (a native build runs)
    python: tuple[int, int]  # pypi: the oldest Python the agent runs on; npm: (0, 0)
    wire: str  # the gateway endpoint its calls use: openai_chat | anthropic_messages | openai_responses
    step: str  # what the agent counts as a step (docs; the gateway counts model calls)
    command: Callable[[Launch], str]
    logs: tuple[str, ...] = ()  # files the agent writes that the trajectory keeps (absolute paths)
    files: tuple[str, ...] = ()  # pypi: this project's modules (beside specs.py) put beside the agent's packages
    programs: tuple[str, ...] = ()  # what the task image must have for it ("tmux")
    sdists: tuple[str, ...] = ()  # pypi: pure-Python requirements that ship sources only (locked as archives)


def python_agent(launch: Launch, env: dict[str, str], args: list[str]) -> str:
    """A Python agent's start: its launcher on the folder's interpreter (`python -I -S -B`: no site-packages,
    no virtualenv, no byte code written), with these variables and arguments."""
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return (f"{exports} \"$(cat {launch.folder}/python)\" -I -S -B {launch.folder}/launch.py "
            f"{' '.join(shlex.quote(a) for a in args)}")


def _mini_swe_agent(launch: Launch) -> str:
    """mini-swe-agent's own `mini` CLI in yolo mode, exiting when it submits. Its model calls go through
    litellm's OpenAI client to the gateway; the price map is the wheel's own (no download) and its cost
    tracking is off (the gateway prices every call). `agent.step_limit` is its own limit, in its own unit
    (model calls); the gateway refuses the call after it too."""
    env = {"HOME": AGENT_HOME, "MSWEA_SILENT_STARTUP": "1", "MSWEA_CONFIGURED": "true",
           "MSWEA_COST_TRACKING": "ignore_errors", "MSWEA_GLOBAL_CONFIG_DIR": f"{AGENT_HOME}/mini-swe-agent",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": launch.token,
           "OPENAI_BASE_URL": f"{launch.base_url}/v1"}
    args = ["-y", "--exit-immediately", "-m", f"openai/{launch.model}", "-o", f"{AGENT_HOME}/mini.traj.json",
            "-c", "mini.yaml", "-c", f"model.model_kwargs.api_base={launch.base_url}/v1", "-c", "agent.cost_limit=0",
            "-c", f"agent.step_limit={launch.max_steps or 0}", *launch.extra]
    return python_agent(launch, env, args) + f' -t "$(cat {TASK_FILE})"'


MINI_SWE_AGENT = AgentSpec(
    name="mini_swe_agent", registry="pypi", package="mini-swe-agent==2.4.6", version="2.4.6",
    module="minisweagent.run.mini:app", python=(3, 10), wire="openai_chat",
    step="a model call (its `agent.step_limit`)", command=_mini_swe_agent, logs=(f"{AGENT_HOME}/mini.traj.json",))

# name -> where its spec is (`module:NAME`), imported when asked for
AGENTS = {
    "mini_swe_agent": "scaffolds.installed.specs:MINI_SWE_AGENT",
    "claude_code": "scaffolds.installed.claude_code:SPEC",
    "codex": "scaffolds.installed.codex:SPEC",
    "terminus_2": "scaffolds.installed.terminus_2:SPEC",
    "openhands": "scaffolds.installed.openhands:SPEC",
}


def agent_spec(name: str) -> AgentSpec:
    if name not in AGENTS:
        raise ValueError(f"unknown installed agent {name!r}; known: {', '.join(AGENTS)}")
    module, _, attribute = AGENTS[name].partition(":")
    spec = getattr(importlib.import_module(module), attribute)
    assert isinstance(spec, AgentSpec) and spec.name == name
    return spec
