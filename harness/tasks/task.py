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
    id: str
    path: Path
    repo: str
    api: str
    languages: tuple[str, ...]
    setup_commands: tuple[str, ...]
    install_commands: tuple[str, ...]
    description: str = ""
    tags: tuple[str, ...] = ()
    test_timeout: float = DEFAULT_TEST_TIMEOUT

    @property
    def repo_dir(self) -> Path:
        return self.path / "repo"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def expert_patch(self) -> str:
        return (self.path / "expert.patch").read_text()

    @property
    def prob_script(self) -> str:
        return (self.path / "prob_script.py").read_text()

    @property
    def test_files(self) -> list[Path]:
        return sorted(self.tests_dir.glob("test_*.py"))

    def prompt_vars(self, workdir: str = "/testbed") -> dict[str, Any]:
        """What a task prompt may use. The expert patch and the hidden tests are never among them."""
        return {"workdir": workdir, "repo": self.repo, "api": self.api, "prob_script": self.prob_script.rstrip(),
                "install_commands": list(self.install_commands), "description": self.description or "",
                "languages": list(self.languages)}
