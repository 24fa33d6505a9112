"""Harbor's Terminus2 on a task, started inside the sandbox it works in. It runs on the agent's own interpreter,
beside Harbor's packages in the agent's folder (terminus_2.py puts it there); the project never imports it.

Harbor runs an agent from outside an environment (Docker through compose, Daytona, Modal ...) that it drives
with `exec`; none of those is the sandbox this runs in, so the environment here is the smallest
`BaseEnvironment` over this machine: `exec` is `bash -c COMMAND` in a working directory, stderr merged into
stdout, with a timeout (what Harbor's Docker environment runs through `docker exec` on Unix); a command asked
to run as another user runs as the sandbox's user (there is no switching user here). Files move with a copy.

Everything else is Terminus2 as Harbor ships it, with its defaults except: the model and its `api_base` (the
gateway: `openai/<name>` through its LiteLLM wrapper), `model_info` (the context size; prices 0, since the
gateway prices every call), no asciinema recording (nothing to install it from offline), and `max_turns` = the
run's step limit.

usage: terminus_2 --model NAME --api-base URL --task FILE [--max-turns N] [--logs DIR] [--context N]
                  [--shell-env FILE]
exit status 0 when Terminus2 returns (it confirmed completion or used its turns), 1 when it raised.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from pathlib import Path

from harbor.agents.terminus_2 import Terminus2
from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import EnvironmentPaths, TrialPaths


class HereEnvironment(BaseEnvironment):
    """Harbor's environment interface over the machine this process runs on."""

    def __init__(self, workdir: str, trial_dir: Path, shell_env: dict[str, str]) -> None:
        self.shell_env = shell_env
        super().__init__(environment_dir=trial_dir, environment_name="optrunner", session_id="optrunner__here",
                         trial_paths=TrialPaths(trial_dir=trial_dir),
                         task_env_config=EnvironmentConfig(workdir=workdir))

    @staticmethod
    def type() -> str:
        return "optrunner-here"

    def _validate_definition(self) -> None:
        pass  # nothing to build: the sandbox is already running

    async def start(self, force_build: bool) -> None:
        # Harbor's environments mount its log folders; Terminus2 pipes its tmux pane into the agent's
        for folder in (EnvironmentPaths.agent_dir, EnvironmentPaths.verifier_dir):
            Path(folder).mkdir(parents=True, exist_ok=True)

    async def stop(self, delete: bool) -> None:
        pass  # the rollout removes the sandbox

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        merged = {**self.shell_env, **(self._merge_env(env) or {})}
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", command, cwd=cwd or self.task_env_config.workdir or "/", env=merged,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=timeout_sec or None)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        return ExecResult(stdout=out.decode(errors="replace") if out else None, stderr=None,
                          return_code=proc.returncode or 0)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        shutil.copy(source_path, target_path)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        shutil.copy(source_path, target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)


async def run(args: argparse.Namespace) -> int:
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)  # Harbor's trial makes the agent's log folder before it starts
    saved = Path(args.shell_env).read_bytes().split(b"\0") if args.shell_env else []
    shell_env = dict(item.decode(errors="replace").partition("=")[::2] for item in saved if b"=" in item)
    env = HereEnvironment(os.getcwd(), logs / "trial", shell_env or dict(os.environ))
    await env.start(force_build=False)
    agent = Terminus2(logs_dir=logs, model_name=f"openai/{args.model}", api_base=args.api_base,
                      max_turns=args.max_turns or None, record_terminal_session=False,
                      llm_kwargs={"api_key": os.environ.get("OPENAI_API_KEY", "")},
                      model_info={"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                                  "litellm_provider": "openai", "mode": "chat",
                                  "max_input_tokens": args.context, "max_output_tokens": 8_192})
    await agent.setup(env)
    try:
        await agent.run(Path(args.task).read_text(), env, AgentContext())
    except Exception as exc:  # noqa: BLE001 - its one line is what the rollout's record says
        print(f"terminus-2 raised {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="terminus_2")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--max-turns", type=int, default=0)
    parser.add_argument("--logs", default="/tmp/optrunner-agent/terminus")
    parser.add_argument("--context", type=int, default=128_000)
    parser.add_argument("--shell-env", default="", help="the terminal's environment (`env -0`'s output)")
    sys.exit(asyncio.run(run(parser.parse_args())))
