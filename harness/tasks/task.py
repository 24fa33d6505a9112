"""The one shape every task source produces: a `Task`, and the error for a bad task or selector."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TEST_TIMEOUT = 120.0


class TaskError(ValueError):
    """A task folder or a task selector is invalid; the message is the one line to show."""


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
    test_timeout: float = DEFAULT_TEST_TIMEOUT
    source: str = "suite"  # the task source that made it
    path: Path | None = None  # folder tasks: the task's folder, whose repo/ is the base tree
    base_commit: str | None = None  # tasks taken from a repository's history (GSO rows)
    opt_commit: str | None = None  # the expert's commit there (grading only)
    repo_url: str | None = None  # where that history is: a local (bare) repository or a git URL
    install_block: bool = False  # run install_commands as one shell block (GSO) instead of one by one
    shown_install_commands: tuple[str, ...] | None = None  # what the prompt shows, if not install_commands
    patch_excludes: tuple[str, ...] = ()  # more globs of paths a graded patch may not touch (GSO: data files)

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

    def prompt_vars(self, workdir: str = "/testbed") -> dict[str, Any]:
        """What a task prompt may use. The expert patch and the hidden tests are never among them."""
        return {"workdir": workdir, "repo": self.repo, "api": self.api, "prob_script": self.prob_script.rstrip(),
                "install_commands": list(self.install_commands if self.shown_install_commands is None
                                         else self.shown_install_commands),
                "description": self.description or "",
                "languages": list(self.languages)}
