"""Harbor task directories as tasks (AutoLab, Terminal-Bench): `task.toml`, `instruction.md` (the whole
prompt), `environment/Dockerfile` and the files it copies (or `[environment].docker_image`, a prebuilt
image), `tests/test.sh` (copied to /tests only for verification) and optionally `solution/solve.sh`.

The selector is a folder holding task directories, or one task directory. Every malformed `task.toml`,
missing file or unsupported feature is one TaskError line naming the file; a task that needs GPUs on a
machine without them is skipped with a warning, not failed. Resources beyond this machine's are clamped,
with a warning. AutoLab's `[optimization]` table (which Harbor ignores) is kept for the grader; an
`[optrunner]` table may name more `pinned` files (relative to the working directory), and an
`[optrunner.service]` table makes the task a service task (harness.serving.spec, the same fields as a folder
task's `service:`): tests/test.sh still checks the patch first, then its server is measured against the
untouched environment's and the reference solution's (grader.reward_serving).
"""
from __future__ import annotations

import os
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import gpus
from harness.dockerfile import read
from harness.serving.spec import Service, ServiceError, load_service
from harness.tasks.ids import check_id
from harness.tasks.task import RewardCheck, Task, TaskError, refuse_links_out

Warn = Callable[[str], None]
# Files a task builds from, or records its own integrity in: the agent may not change them.
BUILD_FILES = ("Makefile", "makefile", "GNUmakefile", "CMakeLists.txt", "Cargo.toml", "Cargo.lock", "go.mod",
               "go.sum", "build.sh", "setup.py", "setup.cfg", "pyproject.toml", "meson.build", "*.sha256",
               "*.sha256sum", "*.md5", "checksums*")
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def _memory(env: dict[str, Any], where: str) -> str | None:
    """`memory` ("2G", "512M") or `memory_mb`, in Docker's notation (megabytes: "2048m")."""
    if "memory_mb" in env:
        value = env["memory_mb"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise TaskError(f"{where}: [environment].memory_mb should be a positive number, got {value!r}")
        return f"{int(value)}m"
    if "memory" not in env:
        return None
    match = _MEMORY.match(str(env["memory"]))
    if not match:
        raise TaskError(f"{where}: [environment].memory should look like '2G' or '512M', got {env['memory']!r}")
    number, unit = match.groups()
    scale = {"": 1 / 1024 ** 2, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 ** 2}[unit.lower()]
    return f"{max(6, int(float(number) * scale))}m"


def _clamped_memory(memory: str | None, name: str, warn: Warn) -> str | None:
    """At most this machine's memory, with a warning when a task asks for more."""
    if memory is None:
        return None
    machine_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024 ** 2
    if int(memory.removesuffix("m")) > machine_mb:
        warn(f"{name}: it asks for {memory} of memory, this machine has {machine_mb}m: clamped")
        return f"{machine_mb}m"
    return memory


def _number(table: dict[str, Any], key: str, where: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskError(f"{where}: {key} should be a positive number of seconds, got {value!r}")
    return float(value)


def dockerfile_workdir(dockerfile: str) -> str:
    """The last WORKDIR of a Dockerfile (relative ones joined), "/" without one: where the agent works."""
    workdir = "/"
    for instruction in read(dockerfile):  # (a heredoc's body or a continued line is no instruction of its own)
        if instruction.keyword == "WORKDIR" and instruction.arguments.strip():
            path = instruction.arguments.strip().strip('"')
            workdir = path if path.startswith("/") else os.path.join(workdir, path)
    return workdir


def _files(folder: Path) -> tuple[tuple[str, bytes, int], ...]:
    """Every file under `folder`: (relative path, bytes, mode)."""
    return tuple((str(p.relative_to(folder)), p.read_bytes(), p.stat().st_mode & 0o777)
                 for p in sorted(folder.rglob("*")) if p.is_file())


def _read_config(toml_path: Path, where: str) -> dict[str, Any]:
    """task.toml, its tables checked to be tables."""
    try:
        config = tomllib.loads(toml_path.read_text())
    except FileNotFoundError:
        raise TaskError(f"{where}: no task.toml") from None
    except tomllib.TOMLDecodeError as err:
        raise TaskError(f"{toml_path}: not valid TOML ({err})") from None
    for table in ("metadata", "agent", "verifier", "environment", "optimization", "optrunner"):
        if not isinstance(config.get(table, {}), dict):
            raise TaskError(f"{toml_path}: [{table}] should be a table")
    return config


def _verifier_extras(config: dict[str, Any], toml_path: Path) -> tuple[dict[str, str], list[str], Service | None]:
    """[verifier.env], this tool's [optrunner].pinned paths and its [optrunner.service] (a service task)."""
    verifier_env = config.get("verifier", {}).get("env", {})
    if not isinstance(verifier_env, dict) or not all(isinstance(v, str) for v in verifier_env.values()):
        raise TaskError(f"{toml_path}: [verifier.env] should map names to strings")
    pinned = config.get("optrunner", {}).get("pinned", [])
    if not isinstance(pinned, list) or not all(isinstance(p, str) for p in pinned):
        raise TaskError(f"{toml_path}: [optrunner].pinned should be a list of paths")
    service = None
    if (raw_service := config.get("optrunner", {}).get("service")) is not None:
        try:
            service = load_service(raw_service)
        except ServiceError as err:
            raise TaskError(f"{toml_path}: [optrunner] {err}") from None
    return verifier_env, pinned, service


def load_task(folder: Path, warn: Warn, named: bool = False) -> Task | None:
    """One task directory; None when it is skipped (it needs GPUs this machine lacks; refused instead when
    the user `named` it), TaskError when it is malformed."""
    # The directory's name is the task's id: that of the directory itself (`tasks.path=.` or `sub/..` name
    # the folder they point to, not "." or ".."), refused before anything else is read.
    task_id = check_id(f"Harbor task directory in {str(folder.parent)!r}", os.path.basename(os.path.abspath(folder)))
    where = str(folder)
    refuse_links_out(folder, where)
    toml_path = folder / "task.toml"
    config = _read_config(toml_path, where)
    env, verifier = config.get("environment", {}), config.get("verifier", {})
    count, types = env.get("gpus") or 0, env.get("gpu_types") or []
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise TaskError(f"{toml_path}: [environment].gpus should be a number of GPUs, got {count!r}")
    if not isinstance(types, list) or not all(isinstance(t, str) and t.strip() for t in types):
        raise TaskError(f"{toml_path}: [environment].gpu_types should be a list of GPU names, got {types!r}")
    if why := gpus.misfit(count, types, gpus.inventory()):
        if named:
            raise TaskError(f"{task_id}: {why}; run it on a machine with such GPUs")
        warn(f"{task_id}: skipped, {why}")
        return None
    instruction = folder / "instruction.md"
    if not instruction.is_file():
        raise TaskError(f"{where}: no instruction.md (the task's prompt)")
    test_sh = folder / "tests" / "test.sh"
    if not test_sh.is_file():
        raise TaskError(f"{where}: no tests/test.sh (the verifier)")
    dockerfile = folder / "environment" / "Dockerfile"
    image = env.get("docker_image")
    if image is not None and not isinstance(image, str):
        raise TaskError(f"{toml_path}: [environment].docker_image should be an image name")
    if not image and not dockerfile.is_file():
        raise TaskError(f"{where}: no environment/Dockerfile and no [environment].docker_image")
    verifier_env, pinned, service = _verifier_extras(config, toml_path)
    cpus = env.get("cpus")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0):
        raise TaskError(f"{toml_path}: [environment].cpus should be a positive number, got {cpus!r}")
    machine = float(os.cpu_count() or 1)
    if cpus and cpus > machine:
        warn(f"{task_id}: it asks for {cpus:g} CPUs, this machine has {machine:g}: clamped")
        cpus = machine
    solution = folder / "solution"
    workdir = dockerfile_workdir(dockerfile.read_text()) if dockerfile.is_file() and not image else ""
    check = RewardCheck(
        tests=_files(folder / "tests"), timeout=_number(verifier, "timeout_sec", str(toml_path)) or 600.0,
        env=tuple(sorted(verifier_env.items())), pinned=tuple(BUILD_FILES) + tuple(pinned),
        optimization=tuple(sorted((k, v) for k, v in config.get("optimization", {}).items())),
    )
    return Task(
        id=task_id, repo=task_id, api="", languages=(),
        setup_commands=(), install_commands=(), instruction=instruction.read_text(), workdir=workdir,
        reward_check=check, source="harbor", path=folder,
        tags=tuple(str(t) for t in config.get("metadata", {}).get("tags", [])),
        environment=folder / "environment" if not image else None, prebuilt_image=image or None,
        registry_image=image or None, solution_files=_files(solution) if (solution / "solve.sh").is_file() else (),
        agent_timeout=_number(config.get("agent", {}), "timeout_sec", str(toml_path)),
        cpus=float(cpus) if cpus else None, memory=_clamped_memory(_memory(env, str(toml_path)), task_id, warn),
        network="allowed" if env.get("allow_internet") else "none", gpus=count, gpu_types=tuple(types),
        service=service,
    )


class HarborSource:
    """Task source `harbor`: the selector is a folder of task directories, or one."""
    name = "harbor"

    def __init__(self, warn: Warn | None = None) -> None:
        self.warn = warn or (lambda message: print(f"warning: {message}", file=sys.stderr, flush=True))

    def select(self, selector: str) -> list[Task]:
        if not selector.strip():
            raise TaskError("the harbor source needs a folder: tasks.path=DIR (task directories, or one)")
        root = Path(selector).expanduser()
        if not root.is_dir():
            raise TaskError(f"{selector}: no such folder of Harbor task directories")
        folders = [root] if (root / "task.toml").exists() else \
            sorted(p for p in root.iterdir() if p.is_dir() and (p / "task.toml").exists())
        if not folders:
            raise TaskError(f"{selector}: no task directories (folders holding a task.toml)")
        named = folders == [root]  # one task directory: the user asked for it
        tasks = [task for folder in folders if (task := load_task(folder, self.warn, named)) is not None]
        if not tasks:
            raise TaskError(f"{selector}: every task was skipped")
        return tasks
