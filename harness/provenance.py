"""Where a result came from: this tool's version and source revision, the libraries and Python it ran on,
the sandbox engine and the exact images, the machine, and the grading settings, as plain JSON/YAML values.

Every probe is best-effort: an absent git, a package that is not installed, an engine that does not answer
or an unreadable /proc gives null, never an exception (recording where a result came from must not lose
the result). The runner adds this to config.yaml and its reports (runner.provenance); `python -m harness
grade` and `validate` add it to their summary.json.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import gpus

if TYPE_CHECKING:
    from harness.grader.config import GradeConfig
    from harness.sandbox.interface import TaskImages
    from harness.sandbox.providers import SandboxProvider

DISTRIBUTION = "optrunner"  # pyproject.toml's [project] name
# What a result's numbers may depend on, by distribution name (docker is docker-py).
PACKAGES = ("litellm", "docker", "hydra-core", "omegaconf", "numpy")
SOURCE_ROOT = Path(__file__).resolve().parent.parent  # the checkout the code runs from, when it is one
GIT_TIMEOUT_S = 10


def collect(sandboxes: "SandboxProvider | None" = None, images: Mapping[str, "TaskImages"] | None = None,
            grading: "GradeConfig | None" = None) -> dict[str, Any]:
    """The provenance of what this process does: `images` are the task images it uses (task id -> its
    images), `grading` its grading settings; the engine is asked through `sandboxes`, whose name is recorded
    beside it (a result names the provider that ran it, e.g. docker or bwrap)."""
    from harness.sandbox.providers import isolates
    return {"tool": tool(), "python": platform.python_version(), "packages": packages(),
            "sandbox_provider": sandboxes.name if sandboxes is not None else None,
            # False: nothing isolated what ran (sandbox=unsandboxed), which every report then says
            "isolated": isolates(sandboxes.name) if sandboxes is not None else None,
            "engine": engine_version(sandboxes), "images": image_ids(sandboxes, images or {}),
            "adapted": {task_id: list(pair.adapted) for task_id, pair in (images or {}).items() if pair.adapted},
            "machine": machine(), "grading": grading_settings(grading)}


# Written by setup.py into a built package: the revision it was built from (an installed copy has no .git).
BUILD_STAMP = Path(__file__).resolve().parent / "build_stamp.json"


def tool() -> dict[str, Any]:
    return {"name": DISTRIBUTION, "version": package_version(DISTRIBUTION), **source_state()}


def source_state() -> dict[str, Any]:
    """{revision, dirty} of the code that runs: the checkout's, else the one its package was built from (then
    `built: true`); both null when neither is known."""
    state = git_state(SOURCE_ROOT)
    if state["revision"] is None and state["dirty"] is None:
        try:
            stamp = json.loads(BUILD_STAMP.read_text())
            return {"revision": stamp.get("revision"), "dirty": stamp.get("dirty"), "built": True}
        except (OSError, ValueError, AttributeError):
            pass
    return state


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def packages(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    # Read from the installed metadata: no import, so litellm's seconds-long import is not paid here.
    return {name: package_version(name) for name in names}


def git_state(root: Path) -> dict[str, Any]:
    """{revision, dirty} of the checkout at `root`; both null when it is not one (an installed copy:
    a parent folder's repository, such as a project holding the virtualenv, must not be taken for ours)
    or git is absent. One `git status` call gives both the commit and the uncommitted changes."""
    unknown: dict[str, Any] = {"revision": None, "dirty": None}
    if not (root / ".git").exists():  # a directory, or a file in a worktree
        return unknown
    try:
        done = subprocess.run(["git", "-C", str(root), "status", "--porcelain=v2", "--branch"],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return unknown
    if done.returncode != 0:  # e.g. a repository owned by another user (safe.directory)
        return unknown
    lines = done.stdout.splitlines()
    oid = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    # Untracked files count: a new module changes what runs as much as an edited one.
    dirty = any(not line.startswith("#") for line in lines)
    return {"revision": oid if oid and oid != "(initial)" else None, "dirty": dirty}


def engine_version(sandboxes: "SandboxProvider | None") -> str | None:
    return sandboxes.engine_version() if sandboxes is not None else None


def image_ids(sandboxes: "SandboxProvider | None", images: Mapping[str, "TaskImages"]) -> dict[str, dict[str, Any]]:
    """task id -> {image name: image id} for the images it uses (agent and grading, once when they are one):
    a tag can be rebuilt or re-pulled, the id names the exact image."""
    ids: dict[str, str | None] = {}

    def lookup(name: str) -> str | None:
        if name not in ids:
            ids[name] = sandboxes.image_id(name) if sandboxes is not None else None
        return ids[name]

    return {task_id: {name: lookup(name) for name in dict.fromkeys((pair.agent, pair.grading))}
            for task_id, pair in images.items()}


def machine() -> dict[str, Any]:
    """The machine, its GPUs included where it has any (models, driver, CUDA, the clock policy)."""
    found = gpus.system()
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "memory_bytes": memory_bytes(),
            "os": platform.platform(), "hostname": socket.gethostname(), **({"gpus": found} if found else {})}


def cpu_model() -> str | None:
    for line in _read_lines("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return platform.processor() or None  # not Linux, or an architecture whose cpuinfo names no model


def memory_bytes() -> int | None:
    for line in _read_lines("/proc/meminfo"):
        fields = line.split()
        if fields[:1] == ["MemTotal:"] and len(fields) >= 2 and fields[1].isdigit():
            return int(fields[1]) * 1024  # the kernel writes kB and means KiB
    return None


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []


def grading_settings(grading: "GradeConfig | None") -> dict[str, Any] | None:
    """Every grading setting as resolved (stat `auto` already chosen), with the grader's version."""
    if grading is None:
        return None
    from harness.grader.config import GRADER_VERSION  # light: no numpy, no Docker

    return {**dataclasses.asdict(grading), "grader_version": GRADER_VERSION}
