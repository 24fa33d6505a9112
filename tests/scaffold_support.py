"""Shared pieces for scaffold tests: scripted models, one episode in a fresh container, and comparing
patches by their effect on the base tree (two diffs of the same change may differ in form)."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness.sandbox import DockerSandbox, SandboxLimits
from harness.tasks import Task
from scaffolds import scripted
from scaffolds.episode import Episode, Limits, Scaffold
from scaffolds.model import Model, ModelConfig
from tests.docker_support import client, task_image


def script_model(steps: list[dict[str, Any]], **config: Any) -> Model:
    return Model(ModelConfig(name="scripted/script", kwargs={"extra_body": {"steps": steps}}, **config))


def bound_model(name: str, task: Task, **bind: Any) -> Model:
    """`scripted/oracle`, `scripted/noop` or `scripted/replay`, bound to one task."""
    return Model(ModelConfig(name=name, kwargs={"extra_body": scripted.bind(name, task, **bind)}))


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
