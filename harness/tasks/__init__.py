"""Task sources, registered by name: each turns a selector into `Task`s of one shape (`task.py`).

`suite` (folder.py) reads the folder format: the bundled suite (`suite`, `smoke`, task ids) or a path to
a folder of task folders. `gso` (gso.py) reads GSO's rows, `harbor` (harbor.py) Harbor task directories
(AutoLab, Terminal-Bench), `isobench` (isobench.py) ISO-Bench's rows as service tasks. Sources are
imported on first use.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any, Protocol

from harness.tasks.task import Task, TaskError

SOURCES = {"suite": "harness.tasks.folder:FolderSource", "gso": "harness.tasks.gso:GsoSource",
           "harbor": "harness.tasks.harbor:HarborSource", "isobench": "harness.tasks.isobench:IsoBenchSource"}


class TaskSource(Protocol):
    name: str

    def select(self, selector: str) -> list[Task]:
        """The tasks a selector names; TaskError (one line) when it names none or a task is bad."""
        ...


def task_source(name: str, **options: Any) -> TaskSource:
    """A source by name, given those of `options` it takes (gso: split, hints, repo_mirror); the others
    belong to other sources and are left out."""
    if name not in SOURCES:
        raise TaskError(f"unknown task source {name!r}; known: {', '.join(SOURCES)}")
    module, _, cls_name = SOURCES[name].partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    takes = inspect.signature(cls).parameters
    return cls(**{k: v for k, v in options.items() if k in takes})


def select_tasks(selector: str = "suite", source: str = "suite", **options: Any) -> list[Task]:
    return task_source(source, **options).select(selector)


__all__ = ["SOURCES", "Task", "TaskError", "TaskSource", "select_tasks", "task_source"]
