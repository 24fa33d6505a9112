"""Upstream half of the mini_swe side-by-side: mini-swe-agent 2.4.6 against the bench's scripted model server.

Runs with the bench-only venv's python (`.bench/upstream-mini`), never the project's. What runs is upstream's
own SWE-bench setup: `swebench_backticks.yaml` (text mode, `LitellmTextbasedModel`) or `swebench.yaml` (tool
mode, `LitellmModel`), its DefaultAgent, templates, limits and DockerEnvironment (`docker exec ... bash -c`).
Changed only where a side-by-side must: the model name and `api_base` (the loopback server), a price file so
upstream's cost check passes, the command timeout (the same on both sides), and the container: upstream's
DockerEnvironment adopts the container the bench started from the task image instead of `docker run`-ning its
own (the bench removes it), so both sides run in identically configured containers.

usage: python upstream_mini_driver.py SPEC.json   (writes the result JSON to spec["out"])
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from minisweagent import __version__
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import get_config_path
from minisweagent.environments.docker import DockerEnvironment
from minisweagent.exceptions import Submitted
from minisweagent.models import get_model

CONFIGS = {"text": ("swebench_backticks", "litellm_textbased"), "tool": ("swebench", "litellm")}


class AdoptedDockerEnvironment(DockerEnvironment):
    """Upstream's DockerEnvironment on an existing container; records every command it executes."""

    def __init__(self, container_id: str, **kwargs: Any) -> None:
        self._adopt = container_id
        self.executed: list[dict[str, Any]] = []
        self.agent: DefaultAgent | None = None
        super().__init__(**kwargs)

    def _start_container(self) -> None:  # the bench started it from the same image
        self.container_id = self._adopt

    def cleanup(self) -> None:  # the bench removes the container
        pass

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        step = self.agent.n_calls - 1 if self.agent else -1  # n_calls counts the call being acted on
        entry = {"step": step, "command": action.get("command", ""), "returncode": None}
        self.executed.append(entry)
        try:
            output = super().execute(action, cwd, timeout=timeout)
        except Submitted:
            entry["returncode"] = 0  # upstream submits only on exit code 0
            entry["submitted"] = True
            raise
        entry["returncode"] = output["returncode"]
        return output


def run(spec: dict[str, Any], registry: Path) -> dict[str, Any]:
    config_name, model_class = CONFIGS[spec["mode"]]
    config = yaml.safe_load(get_config_path(config_name).read_text())
    registry.write_text(json.dumps({spec["model"]: {
        "input_cost_per_token": spec["price_in"] / 1e6, "output_cost_per_token": spec["price_out"] / 1e6,
        "litellm_provider": "openai", "mode": "chat", "max_input_tokens": 128_000, "max_output_tokens": 8_192,
        "supports_function_calling": True}}))
    model_cfg = {**config["model"], "model_name": spec["model"], "model_class": model_class,
                 "litellm_model_registry": str(registry),
                 "model_kwargs": {**config["model"].get("model_kwargs", {}), "api_base": spec["api_base"],
                                  "api_key": "dummy"}}
    env_cfg = {k: v for k, v in config["environment"].items() if k != "environment_class"}
    env_cfg.update(image=spec["image"], timeout=spec["timeout"])
    env = AdoptedDockerEnvironment(spec["container_id"], **env_cfg)
    agent = DefaultAgent(get_model(config=model_cfg), env, **config["agent"])
    env.agent = agent
    try:
        result = agent.run(spec["task"])
        error = ""
    except Exception as exc:  # noqa: BLE001 - reported to the bench, which prints it
        result, error = {"exit_status": type(exc).__name__}, f"{type(exc).__name__}: {exc}"
    return {
        "version": __version__,
        "config": config_name,
        "model_class": model_class,
        "exit_status": result.get("exit_status", ""),
        "submission": result.get("submission", ""),
        "error": error,
        "n_calls": agent.n_calls,
        "cost": agent.cost,
        "executed": env.executed,
        "messages": [{k: v for k, v in m.items() if k != "extra"} | {"extra_keys": sorted(m.get("extra", {}))}
                     for m in agent.messages],
        "interpreter": env.config.interpreter,
    }


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    with tempfile.TemporaryDirectory(prefix="sbs-mini-") as tmp:  # the price file upstream's cost check reads
        result = run(spec, Path(tmp) / "registry.json")
    Path(spec["out"]).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
