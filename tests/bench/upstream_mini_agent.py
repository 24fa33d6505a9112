"""Run upstream mini-swe-agent 2.4.6 on a Docker image with a scripted model and print per-step timings as JSON.

This file runs with the separate upstream venv's python (see `upstream_mini.ensure_upstream`), never with the
project's: it imports `minisweagent`, which the project does not depend on.

What runs is upstream's own SWE-bench text-mode setup (`benchmarks/swebench_backticks.yaml`: its agent templates,
step limit 250, cost limit $3, DockerEnvironment with cwd /testbed, 60 s timeout, `bash -c`, the PAGER/TQDM env),
changed only where a benchmark must: the image, and a `DeterministicModel` instead of an LLM. The model answers
`steps` times with one `mswea_bash_command` block running `true`, then with the submit command. Its replies cost
$0 so the $3 cost limit never ends the run early; the step limit is raised only if `steps` would exceed it.

usage: python upstream_mini_agent.py --image optrunner/task-tiny:TAG [--steps 50]
The last stdout line is the JSON result.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import yaml
from minisweagent import __version__
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import get_config_path
from minisweagent.environments import get_environment
from minisweagent.models.test_models import DeterministicModel, make_output

CONFIG = "swebench_backticks"  # upstream's text-mode SWE-bench config: same action format as our mini text mode
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class TimedAgent(DefaultAgent):
    """Upstream's agent, unchanged except that each step's wall time is recorded (step() is its hook point)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.step_seconds: list[float] = []

    def step(self) -> list[dict]:
        start = time.perf_counter()
        try:  # the submit step ends by raising Submitted; time it too
            return super().step()
        finally:
            self.step_seconds.append(time.perf_counter() - start)


def reply(command: str) -> dict:
    return make_output(f"THOUGHT: benchmark step.\n\n```mswea_bash_command\n{command}\n```", [{"command": command}],
                       cost=0.0)


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def run(image: str, steps: int) -> dict:
    config = yaml.safe_load(get_config_path(CONFIG).read_text())
    agent_cfg = dict(config["agent"])
    agent_cfg["step_limit"] = max(agent_cfg.get("step_limit", 0), steps + 1)
    env_cfg = {**config["environment"], "image": image}

    outputs = [reply("true") for _ in range(steps)] + [reply(SUBMIT)]
    model = DeterministicModel(outputs=outputs, observation_template=config["model"]["observation_template"])

    start = time.perf_counter()
    env = get_environment(env_cfg)  # starts the container (`docker run -d ... sleep 2h`)
    startup = time.perf_counter() - start
    agent = TimedAgent(model, env, **agent_cfg)
    start = time.perf_counter()
    result = agent.run("Benchmark run: no task.")
    total = time.perf_counter() - start
    # Like upstream's SWE-bench runner, nothing calls env.cleanup(): it runs from __del__ when env is dropped.
    true_steps = agent.step_seconds[:steps]
    return {
        "upstream_version": __version__,
        "config": CONFIG,
        "image": image,
        "container_id": env.container_id,
        "exit_status": result.get("exit_status"),
        "steps": agent.n_calls,
        "true_steps": len(true_steps),
        "step_times_s": true_steps,
        "step_median_ms": statistics.median(true_steps) * 1000,
        "step_p90_ms": p90(true_steps) * 1000,
        "submit_step_ms": agent.step_seconds[-1] * 1000,
        "total_s": total,
        "startup_s": startup,
        "environment": {k: env.config.model_dump()[k] for k in ("cwd", "timeout", "interpreter", "run_args", "env")},
        "limits": {"step_limit": agent.config.step_limit, "cost_limit": agent.config.cost_limit,
                   "wall_time_limit_seconds": agent.config.wall_time_limit_seconds},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    print(json.dumps(run(args.image, args.steps)), flush=True)


if __name__ == "__main__":
    main()
