"""The one shape every task source produces: a `Task`, and the error for a bad task or selector."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.layout import TESTBED
from harness.serving.spec import Service

DEFAULT_TEST_TIMEOUT = 120.0
IMAGE_POLICIES = ("auto", "prebuilt", "build")
# What graded tests may reach: nothing; nothing but with libraries told to read their caches; the network.
NETWORK_POLICIES = ("none", "offline", "allowed")
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class TaskError(ValueError):
    """A task folder or a task selector is invalid; the message is the one line to show."""


def refuse_links_out(root: Path, where: str) -> None:
    """TaskError naming the first symlink under `root` whose target lies outside it: a task's files are
    copied into containers, and a link to `/proc/self/environ` or `~/.ssh` would carry this machine's
    secrets along. Links within the task are fine."""
    inside = root.resolve()
    for folder, dirs, files in os.walk(root):  # does not descend into linked folders: each is checked here
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_symlink() and not path.resolve().is_relative_to(inside):
                raise TaskError(f"{where}: {path.relative_to(root)} is a symlink to {os.readlink(path)}, outside "
                                "the task directory; copy what it points to into the task instead")


@dataclass(frozen=True)
class RewardCheck:
    """A verifier that writes a reward (Harbor's tests/test.sh), instead of timed hidden tests."""
    tests: tuple[tuple[str, bytes, int], ...]  # the tests/ folder: (relative path, bytes, mode), copied to /tests
    timeout: float  # seconds the verifier may run
    env: tuple[tuple[str, str], ...] = ()  # its environment
    pinned: tuple[str, ...] = ()  # globs (relative to the working directory) of files the agent may not change
    optimization: tuple[tuple[str, Any], ...] = ()  # AutoLab's [optimization]: metric, direction, anchors


@dataclass(frozen=True)
class Task:
    """A task as every layer sees it, whatever its source: what the agent may see (prompt variables,
    the base tree's recipe) and what only the grader may see (hidden tests, the expert's change)."""
    id: str
    repo: str
    api: str
    languages: tuple[str, ...]
    setup_commands: tuple[str, ...]
    install_commands: tuple[str, ...]
    prob_script: str = ""  # the specification script the agent is shown
    expert_patch: str = ""  # the expert's change as a unified diff: never in an agent's container
    hidden_files: tuple[tuple[str, bytes], ...] = ()  # copied in only for grading, by relative name
    test_names: tuple[str, ...] = ()  # the test scripts among the hidden files, in order
    description: str = ""  # an optional bottleneck hint, shown only when a scaffold opts in
    tags: tuple[str, ...] = ()
    test_timeout: float | None = DEFAULT_TEST_TIMEOUT  # seconds one test run may take; None: no limit
    source: str = "suite"  # the task source that made it
    path: Path | None = None  # folder tasks: the task's folder, whose repo/ is the base tree
    base_commit: str | None = None  # tasks taken from a repository's history (GSO rows)
    opt_commit: str | None = None  # the expert's commit there (grading only)
    repo_url: str | None = None  # where that history is: a local (bare) repository or a git URL
    install_block: bool = False  # run install_commands as one shell block (GSO) instead of one by one
    shown_install_commands: tuple[str, ...] | None = None  # what the prompt shows, if not install_commands
    patch_excludes: tuple[str, ...] = ()  # more globs of paths a graded patch may not touch (GSO: data files)
    protected: tuple[str, ...] = ()  # more globs of paths a patch is flagged for touching (grader.guards)
    allow_protected: tuple[str, ...] = ()  # globs exempt from that (a task that needs a .pth)
    # Images made elsewhere (GSO's): the grading image when present locally or pullable; the agent gets
    # a derived layer without `agent_hides` and without history after the base commit.
    prebuilt_image: str | None = None  # the local name (GSO: gso.eval.x86_64.<id>:latest)
    registry_image: str | None = None  # where to pull it from when it is not present
    image_policy: str = "auto"  # auto: prebuilt if present or pullable, else built; prebuilt | build: only that
    agent_hides: tuple[str, ...] = ()  # paths in the prebuilt image the agent must not see (GSO: /eval.sh)
    # How the grader runs the hidden tests: where they are copied, from which directory, how often.
    test_dir: str = "/hidden_tests"
    test_cwd: str | None = None  # None: the test's own directory
    test_python: str = "python3"  # a path that does not exist falls back to python3
    runs_per_test: int | None = None  # a cap on timing rounds (GSO: 1 for its slowest repositories)
    network: str = "none"  # what graded tests may reach: one of NETWORK_POLICIES
    cpus: float | None = None  # what the task needs at least (agent and grading containers)
    gpus: int = 0  # GPUs it needs (harness.gpus): its rollouts and timing runs get their own
    gpu_types: tuple[str, ...] = ()  # which (a GPU whose name contains one), any when empty
    memory: str | None = None
    build_timeout: float = 3600.0
    # Tasks that come as a whole instruction, an environment and a verifier script (Harbor directories)
    instruction: str = ""  # the whole prompt; the scaffold only frames it
    workdir: str = TESTBED  # where the agent works ("" : the image's own WORKDIR)
    reward_check: RewardCheck | None = None  # the verifier, when it writes a reward instead of timing tests
    service: Service | None = None  # a service task: its server measured by serving metrics (harness.serving)
    environment: Path | None = None  # a Dockerfile's build context, to build the image from
    solution_files: tuple[tuple[str, bytes, int], ...] = ()  # a reference solution (solve.sh and its files)
    agent_timeout: float | None = None  # the task's own wall-clock limit for the agent

    @property
    def install_steps(self) -> tuple[str, ...]:
        """The rebuild after a change, as the commands to run in order."""
        if self.install_block and self.install_commands:
            return ("\n".join(self.install_commands),)
        return self.install_commands

    @property
    def repo_dir(self) -> Path:
        """The base source tree of a folder task."""
        if self.path is None:
            raise TaskError(f"task {self.id} ({self.source}) has no base tree folder")
        return self.path / "repo"

    def prompt_vars(self, workdir: str = TESTBED) -> dict[str, Any]:
        """What a task prompt may use. The expert patch and the hidden tests are never among them."""
        return {"workdir": workdir, "repo": self.repo, "api": self.api, "prob_script": self.prob_script.rstrip(),
                "install_commands": list(self.install_commands if self.shown_install_commands is None
                                         else self.shown_install_commands),
                "description": self.description or "",
                "languages": list(self.languages), "instruction": self.instruction}
