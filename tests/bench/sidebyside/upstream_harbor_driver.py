"""Upstream half of the terminus side-by-side: Harbor's Terminus2 agent against the bench's scripted model server.

Runs with the bench-only venv's python (`.bench/upstream-harbor`, Python 3.12: Harbor needs >= 3.12), never
the project's. What runs is Harbor's own `Terminus2` (JSON parser, its tmux session, its LiteLLM wrapper), with
its defaults except: the model and `api_base` (the loopback server, `model_info` carrying the price and
context size), and no asciinema recording (a recording tool to install is not what is compared).

Harbor's own Docker environment drives `docker compose`, which this machine does not have, so the
environment here is a minimal `BaseEnvironment` over the container the bench started from the task image:
`exec` is `docker exec -w WORKDIR [-e K=V] [-u USER] CONTAINER bash -c CMD` with stderr merged into stdout
and a timeout, which is what Harbor's Docker environment runs through compose on Unix.

usage: python upstream_harbor_driver.py SPEC.json   (writes the result JSON to spec["out"])
"""
from __future__ import annotations

import asyncio
import importlib.metadata
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harbor.agents.terminus_2 import Terminus2
from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths


class DockerExecEnvironment(BaseEnvironment):
    """Harbor's environment interface over `docker exec` into an existing container."""

    def __init__(self, container_id: str, workdir: str, trial_dir: Path) -> None:
        self.container_id = container_id
        self.commands: list[str] = []
        super().__init__(environment_dir=trial_dir, environment_name="sidebyside",
                         session_id="sidebyside__env", trial_paths=TrialPaths(trial_dir=trial_dir),
                         task_env_config=EnvironmentConfig(workdir=workdir))

    @staticmethod
    def type() -> str:
        return "docker-exec"

    def _validate_definition(self) -> None:
        pass  # nothing to build: the bench hands over a running container

    async def start(self, force_build: bool) -> None:
        # Harbor's Docker environment mounts its log directories; create the agent's (tmux pipes the pane there).
        await self.exec("mkdir -p /logs/agent /logs/verifier /logs/artifacts", user="root")

    async def stop(self, delete: bool) -> None:
        pass  # the bench removes the container

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        argv = ["docker", "exec", "-w", cwd or self.task_env_config.workdir or "/"]
        for key, value in (self._merge_env(env) or {}).items():
            argv += ["-e", f"{key}={value}"]
        user = self._resolve_user(user)
        if user is not None:
            argv += ["-u", str(user)]
        argv += [self.container_id, "bash", "-c", command]
        self.commands.append(command)
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=timeout_sec or None)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        return ExecResult(stdout=out.decode(errors="replace") if out else None, stderr=None,
                          return_code=proc.returncode or 0)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        subprocess.run(["docker", "cp", str(source_path), f"{self.container_id}:{target_path}"], check=True)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        subprocess.run(["docker", "cp", f"{source_dir}/.", f"{self.container_id}:{target_dir}"], check=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        subprocess.run(["docker", "cp", f"{self.container_id}:{source_path}", str(target_path)], check=True)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        subprocess.run(["docker", "cp", f"{self.container_id}:{source_dir}/.", str(target_dir)], check=True)


def _observe_calls(agent: Terminus2) -> list[list[str]]:
    """Per model call, the keystrokes executed after it. Terminus2's episodes are not model calls: a reply cut
    off at the token limit is answered inside the same episode by another call. Both wrappers only record."""
    calls: list[list[str]] = []
    llm_call, execute = agent._llm.call, agent._execute_commands

    async def counted_call(*args: Any, **kwargs: Any) -> Any:
        calls.append([])
        return await llm_call(*args, **kwargs)

    async def recorded_execute(commands: list[Any], session: Any) -> Any:
        calls[-1].extend(c.keystrokes for c in commands)
        return await execute(commands, session)

    agent._llm.call = counted_call  # type: ignore[method-assign]
    agent._execute_commands = recorded_execute  # type: ignore[method-assign]
    return calls


async def run(spec: dict[str, Any], trial_dir: Path) -> dict[str, Any]:
    env = DockerExecEnvironment(spec["container_id"], spec["workdir"], trial_dir)
    await env.start(force_build=False)
    agent = Terminus2(logs_dir=trial_dir / "agent", model_name=spec["model"], api_base=spec["api_base"],
                      record_terminal_session=False, llm_kwargs={"api_key": "dummy"},
                      model_info={"input_cost_per_token": spec["price_in"] / 1e6,
                                  "output_cost_per_token": spec["price_out"] / 1e6, "litellm_provider": "openai",
                                  "mode": "chat", "max_input_tokens": 128_000, "max_output_tokens": 8_192})
    await agent.setup(env)
    calls = _observe_calls(agent)
    context = AgentContext()
    error = ""
    try:
        await agent.run(spec["task"], env, context)
    except Exception as exc:  # noqa: BLE001 - reported to the bench, which prints it
        error = f"{type(exc).__name__}: {exc}"
    steps = [s.model_dump(mode="json", exclude_none=True) for s in agent._trajectory_steps]
    # (trajectory steps are episodes; `calls` is per model call, as the bench aligns both sides)
    agent_steps = [s for s in steps if s.get("source") == "agent"]
    names = [[c["function_name"] for c in s.get("tool_calls") or []] for s in agent_steps]
    # Terminus2 returns normally on a confirmed completion (two task_complete in a row) or at max_turns.
    confirmed = len(names) >= 2 and all("mark_task_complete" in n for n in names[-2:])
    status = "error" if error else ("submitted" if confirmed else "ended")
    return {
        "version": importlib.metadata.version("harbor"),
        "agent_version": agent.version(),
        "python": sys.version.split()[0],
        "status": status,
        "error": error,
        "n_episodes": agent._n_episodes,
        "cost": context.cost_usd,
        "steps": agent_steps,
        "calls": calls,
        "env_commands": len(env.commands),
    }


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    with tempfile.TemporaryDirectory(prefix="sbs-harbor-") as trial_dir:  # the agent's logs and trajectory
        result = asyncio.run(run(spec, Path(trial_dir)))
    Path(spec["out"]).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
