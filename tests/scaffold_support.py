"""Shared pieces for scaffold tests: scripted models, one episode in a fresh container, and comparing
patches by their effect on the base tree (two diffs of the same change may differ in form)."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.models.scripted import Script, oracle_steps
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import SandboxLimits
from harness.tasks import Task
from scaffolds.episode import Episode, Scaffold
from scaffolds.limits import Limits
from tests.docker_support import client, task_image


def script_model(steps: list[dict[str, Any]], **config: Any) -> Model:
    return Model(ModelConfig(name="scripted/script", **config), script=Script(steps=steps))


def task_script(task: Task, trajectory: list[dict[str, Any]] | None = None) -> Script:
    """What a scripted model plays from for one task: its expert patch, rebuild and spec script."""
    return Script(patch=task.expert_patch, install_commands=task.install_commands, spec_script=task.prob_script,
                  trajectory=trajectory)


def task_oracle_steps(task: Task) -> list[dict[str, Any]]:
    return oracle_steps(task.expert_patch, task.install_commands, task.prob_script)


def bound_model(name: str, task: Task, trajectory: list[dict[str, Any]] | None = None, **config: Any) -> Model:
    """`scripted/oracle`, `scripted/noop` or `scripted/replay`, bound to one task."""
    return Model(ModelConfig(name=name, **config), script=task_script(task, trajectory))


def run_episode(scaffold: Scaffold, task: Task, model: Model, limits: Limits = Limits(snapshot_every=0)
                ) -> tuple[Episode, str]:
    """One episode in a fresh container; returns it with the workspace diff at the end."""
    with DockerSandbox.start(task_image(task), SandboxLimits(), client=client()) as box:
        episode = scaffold.run(task, box, model, limits)
        return episode, box.diff()


def tree_after(task: Task, patch: str) -> dict[str, bytes]:
    """Every file of the base tree with `patch` applied (on the host, with git)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        subprocess.run(["cp", "-r", str(task.repo_dir), str(root)], check=True)
        if patch.strip():
            subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=root, check=True)
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def same_effect(task: Task, patch_a: str, patch_b: str) -> bool:
    return tree_after(task, patch_a) == tree_after(task, patch_b)


def actions(episode: Episode) -> list[dict[str, Any]]:
    return [action for step in episode.step_records for action in step.actions]
