"""Harbor's Terminus 2 (PyPI `harbor`), the terminal agent Terminal-Bench's results come from.

Harbor needs Python >= 3.12; where the task image's python3 is older, the agent's folder brings this machine's
interpreter (pythons.py). Harbor runs its agents from outside an environment, so a small driver of ours
(terminus_2_driver.py, beside Harbor's packages in the folder) gives Terminus2 the sandbox it runs in as its
environment and starts it on the task's text; the terminal is a tmux session in the sandbox, as in Harbor.

Its model calls are OpenAI chat completions through its LiteLLM wrapper, to the gateway's `/v1`. Its unit is
an episode (one reply parsed into keystrokes); a reply cut off at the output limit is answered within the same
episode by another call, which the gateway counts as a step of its own. `--max-turns` is the run's step limit.
"""
from __future__ import annotations

from scaffolds.installed.specs import AGENT_HOME, TASK_FILE, AgentSpec, Launch, python_agent

VERSION = "0.24.0"  # 0.25.0 needs certifi>=2026.10.19, which the registry here does not have yet
LOGS = f"{AGENT_HOME}/terminus"  # its trajectory.json and the per-episode prompts and replies
SHELL_ENV = f"{AGENT_HOME}/shell.env"


def command(launch: Launch) -> str:
    """The driver on the task file. The terminal gets the environment the sandbox's shell had (saved first);
    the driver's own process gets the token, the gateway and LiteLLM's bundled price map (no download)."""
    env = {"HOME": AGENT_HOME, "OPENAI_API_KEY": launch.token, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    args = ["--model", launch.model, "--api-base", f"{launch.base_url}/v1", "--task", TASK_FILE, "--logs", LOGS,
            "--shell-env", SHELL_ENV]
    if launch.max_steps:
        args += ["--max-turns", str(launch.max_steps)]
    args += launch.extra
    return f"env -0 > {SHELL_ENV}; " + python_agent(launch, env, args)


SPEC = AgentSpec(
    name="terminus_2", registry="pypi", package=f"harbor=={VERSION}", version=VERSION,
    module="terminus_2_driver:main", python=(3, 12), wire="openai_chat",
    step="a model call: an episode, plus the calls that finish a reply cut at the output limit",
    command=command, logs=(f"{LOGS}/trajectory*.json", "/logs/agent/terminus_2.pane"),
    files=("terminus_2_driver.py",), programs=("tmux",))
