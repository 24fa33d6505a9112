"""The folder task format (the bundled suite and users' own tasks): loading, validating, selecting.

A task is a folder (see harness/suite/README.md): task.yaml, repo/, expert.patch, prob_script.py,
tests/. Every problem found on load is reported as one line naming the task, the field or file, and
what is expected, so a user can fix their own task folders without reading a traceback.
"""
from __future__ import annotations

import contextvars
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness import gpus
from harness.serving.spec import ServiceError, load_service
from harness.tasks.ids import check_id
from harness.tasks.task import DEFAULT_TEST_TIMEOUT, Task, TaskError, refuse_links_out

SUITE_DIR = Path(__file__).resolve().parent.parent / "suite"
GPU_SUITE_DIR = SUITE_DIR.with_name("suite_gpu")  # tasks=gpu: the GPU task family (gpus: 1 each)
SERVE_SUITE_DIR = SUITE_DIR.with_name("suite_serve")  # tasks=serve: service tasks (harness.serving)
LANGUAGES = {"python", "c", "cpp", "cython", "rust"}
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass
class _Fields:
    """Typed access to task.yaml that turns every mistake into a TaskError naming the field."""
    where: str
    raw: dict[str, Any]
    used: set[str] = field(default_factory=set)

    def get(self, name: str, kind: type | tuple[type, ...], expected: str, required: bool = True,
            default: Any = None) -> Any:
        self.used.add(name)
        if name not in self.raw or self.raw[name] is None:
            if required:
                raise TaskError(f"{self.where}: missing field '{name}' (expected {expected})")
            return default
        value = self.raw[name]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise TaskError(f"{self.where}: field '{name}' should be {expected}, got {value!r}")
        return value

    def strings(self, name: str, required: bool = True) -> tuple[str, ...]:
        value = self.get(name, list, "a list of strings", required=required, default=[])
        if not all(isinstance(item, str) and item.strip() for item in value):
            raise TaskError(f"{self.where}: field '{name}' should be a list of non-empty strings, got {value!r}")
        return tuple(value)


def _read_yaml(path: Path, where: str) -> dict[str, Any]:
    """task.yaml as a mapping; TaskError (one line, with the line of a YAML error) otherwise."""
    yaml_path = path / "task.yaml"
    if not yaml_path.is_file():
        raise TaskError(f"{where}: missing file task.yaml in {path}")
    try:
        raw = yaml.safe_load(yaml_path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise TaskError(f"{where}: task.yaml is not valid YAML{line}: {getattr(err, 'problem', err)}") from None
    if not isinstance(raw, dict):
        raise TaskError(f"{where}: task.yaml should be a mapping of fields (id, repo, api, ...)")
    return raw


def load_task(path: Path) -> Task:
    path = Path(path)
    where = f"task {path.name!r}"  # repr: a folder name with a newline still gives one line
    raw = _read_yaml(path, where)
    f = _Fields(where, raw)
    task_id = check_id(f"{where}: field 'id'", f.get("id", str, "a string such as 'spanindex'"))
    if not ID_PATTERN.fullmatch(task_id):  # the suite's own, stricter rule (lower case)
        raise TaskError(f"{where}: field 'id' should match {ID_PATTERN.pattern}, got {task_id!r}")
    if task_id != path.name:
        raise TaskError(f"{where}: field 'id' is {task_id!r} but the folder is named {path.name!r}; make them equal")
    languages = f.strings("languages")
    unknown = [lang for lang in languages if lang not in LANGUAGES]
    if unknown or not languages:
        raise TaskError(f"{where}: field 'languages' should list some of {sorted(LANGUAGES)}, got {list(languages)!r}")
    fields = dict(
        id=task_id,
        repo=f.get("repo", str, "the library's name"),
        api=f.get("api", str, "the API under test, e.g. 'pkg.func'"),
        languages=languages,
        setup_commands=f.strings("setup_commands", required=False),
        install_commands=f.strings("install_commands", required=False),
        description=f.get("description", str, "a string", required=False, default=""),
        tags=f.strings("tags", required=False),
        protected=f.strings("protected", required=False),
        allow_protected=f.strings("allow_protected", required=False),
        test_timeout=float(f.get("test_timeout", (int, float), "a number of seconds", required=False,
                                 default=DEFAULT_TEST_TIMEOUT)),
        gpus=f.get("gpus", int, "a number of GPUs (0 or more)", required=False, default=0),
        gpu_types=f.strings("gpu_types", required=False),
    )
    service = None
    if raw.get("service") is not None:
        f.used.add("service")
        try:
            service = load_service(raw["service"])
        except ServiceError as err:
            raise TaskError(f"{where}: {err}") from None
    if fields["gpus"] < 0:
        raise TaskError(f"{where}: field 'gpus' should be 0 or more, got {fields['gpus']}")
    extra = sorted(set(raw) - f.used)
    if extra:
        raise TaskError(f"{where}: unknown field '{extra[0]}' in task.yaml (known: id, repo, api, description, "
                        "languages, setup_commands, install_commands, tags, test_timeout, protected, "
                        "allow_protected, gpus, gpu_types, service)")
    refuse_links_out(path, where)
    path = path.resolve()
    _check_files(path, where, tests_needed=service is None)
    _check_expert_applies(path, where)
    tests = path / "tests"
    hidden = tuple((str(p.relative_to(tests)), p.read_bytes()) for p in sorted(tests.rglob("*"))
                   if p.is_file() and "__pycache__" not in p.parts)
    return Task(**fields, prob_script=(path / "prob_script.py").read_text(),
                expert_patch=(path / "expert.patch").read_text(), hidden_files=hidden,
                test_names=tuple(p.name for p in sorted(tests.glob("test_*.py"))), source="suite", path=path,
                service=service)


def _check_files(path: Path, where: str, tests_needed: bool = True) -> None:
    repo = path / "repo"
    if not repo.is_dir() or not any(repo.iterdir()):
        raise TaskError(f"{where}: missing folder repo/ (the base source tree)")
    for name in ("expert.patch", "prob_script.py"):
        if not (path / name).is_file():
            raise TaskError(f"{where}: missing file {name}")
    if not (path / "expert.patch").read_text().strip():
        raise TaskError(f"{where}: expert.patch is empty (expected a unified diff against repo/)")
    if tests_needed and (not (path / "tests").is_dir() or not any((path / "tests").glob("test_*.py"))):
        raise TaskError(f"{where}: missing hidden tests: expected tests/test_*.py files")


def _check_expert_applies(task_path: Path, where: str) -> None:
    # A scratch copy outside any git work tree: `git apply` inside one would resolve paths from its root.
    with tempfile.TemporaryDirectory(prefix="optrunner-check-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(task_path / "repo", copy)
        done = subprocess.run(["git", "apply", "--check", str(task_path / "expert.patch")], cwd=copy,
                              capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "GIT_DIR": "/nonexistent"})
    if done.returncode != 0:
        first = (done.stderr or done.stdout).strip().splitlines()[:1] or ["no output"]
        raise TaskError(f"{where}: expert.patch does not apply to repo/ with 'git apply': {first[0]}")


def load_dir(path: Path) -> list[Task]:
    """A task folder itself, or a folder of task folders (those that need GPUs this machine lacks skipped)."""
    if (path / "task.yaml").is_file():
        return on_this_machine([load_task(path)], asked_by_name=True)
    tasks = load_dir_all(path)
    if not tasks:
        raise TaskError(f"--tasks {path}: no task folders (with a task.yaml) found there")
    return on_this_machine(tasks)


# Set while tasks are only listed (`optrunner tasks`): a task this machine cannot run is still shown.
LISTING: contextvars.ContextVar[bool] = contextvars.ContextVar("listing", default=False)


def on_this_machine(tasks: list[Task], asked_by_name: bool = False) -> list[Task]:
    """`tasks` without those needing GPUs this machine lacks: each skipped in one line, or refused when the
    user named it."""
    if LISTING.get():
        return tasks
    machine = gpus.inventory()
    out = []
    for task in tasks:
        why = gpus.misfit(task.gpus, task.gpu_types, machine)
        if why is None:
            out.append(task)
        elif asked_by_name:
            raise TaskError(f"task {task.id}: {why}; run it on a machine with such GPUs")
        else:
            print(f"warning: {task.id}: skipped, {why}", file=sys.stderr, flush=True)
    if tasks and not out:
        raise TaskError(f"every task was skipped ({len(tasks)} need GPUs this machine lacks)")
    return out


def select_tasks(selector: str = "suite", suite_dir: Path = SUITE_DIR) -> list[Task]:
    """`suite`, `smoke`, `gpu`, `serve`, a comma-separated list of suite ids, or a path to a folder of tasks."""
    selector = selector.strip()
    looks_like_path = selector.startswith((".", "~", "/")) or "/" in selector
    if looks_like_path or (selector not in ("suite", "smoke") and "," not in selector
                           and not (suite_dir / selector).is_dir() and Path(selector).is_dir()):
        as_path = Path(selector).expanduser()
        if not as_path.is_dir():
            raise TaskError(f"--tasks {selector}: no such directory")
        return load_dir(as_path)
    if selector == "gpu":  # the GPU task family: skipped, each in one line, where there is no GPU
        return load_dir(GPU_SUITE_DIR)
    if selector == "serve":  # the service family
        return load_dir(SERVE_SUITE_DIR)
    suite = load_dir_all(suite_dir)
    if selector == "suite":
        return on_this_machine(suite)
    if selector == "smoke":
        return on_this_machine([t for t in suite if "smoke" in t.tags])
    by_id = {t.id: t for t in suite}
    wanted = [part.strip() for part in selector.split(",") if part.strip()]
    unknown = [w for w in wanted if w not in by_id]
    if unknown or not wanted:
        raise TaskError(f"--tasks: unknown task id '{unknown[0] if unknown else selector}' "
                        f"(known: suite, smoke, gpu, serve, {', '.join(sorted(by_id))}, or a path to a task folder)")
    return on_this_machine([by_id[w] for w in wanted], asked_by_name=True)  # (named: refused, not skipped)


def load_dir_all(path: Path) -> list[Task]:
    """Every task folder in `path`, whatever this machine has."""
    return [load_task(p) for p in sorted(path.iterdir()) if p.is_dir() and (p / "task.yaml").is_file()]


class FolderSource:
    """Task source `suite`: the bundled suite (`suite`, `smoke`, ids) or any folder of task folders."""
    name = "suite"

    def select(self, selector: str) -> list[Task]:
        return select_tasks(selector)
