"""Task sources, registered by name: each turns a selector into `Task`s of one shape (`task.py`).

`suite` (folder.py) reads the folder format: the bundled suite (`suite`, `smoke`, task ids) or a path to
a folder of task folders. Sources are imported on first use.
"""
from __future__ import annotations

import importlib
from typing import Protocol

from harness.tasks.task import Task, TaskError

SOURCES = {"suite": "harness.tasks.folder:FolderSource"}


class TaskSource(Protocol):
    name: str

    def select(self, selector: str) -> list[Task]:
        """The tasks a selector names; TaskError (one line) when it names none or a task is bad."""
        ...


def task_source(name: str) -> TaskSource:
    if name not in SOURCES:
        raise TaskError(f"unknown task source {name!r}; known: {', '.join(SOURCES)}")
    module, _, cls = SOURCES[name].partition(":")
    return getattr(importlib.import_module(module), cls)()


def select_tasks(selector: str = "suite", source: str = "suite") -> list[Task]:
    return task_source(source).select(selector)


__all__ = ["SOURCES", "Task", "TaskError", "TaskSource", "select_tasks", "task_source"]
