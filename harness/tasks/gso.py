"""GSO's rows as tasks: the Hugging Face dataset `gso-bench/gso` (split `test`), or the same rows from a
local file or folder, read with `datasets`: JSON, JSONL, parquet, or a `save_to_disk` folder.

A row has exactly GSO's 15 fields. A missing or mistyped column is one TaskError naming it; an extra
column is a warning. What the agent may see is the row's repository, API, specification script and
install commands; `gt_diff` (the expert's change), `gt_commit_message`, `opt_commit` and the hidden
tests go to the grader only, and `hints_text` only when hints are asked for.

Images: GSO's own (`gso.eval.<arch>.<id lower>:<tag>`) when present or pullable from `slimshetty/gso`,
otherwise built from the row: the repository's history at `base_commit`, from a local mirror
(`repo_mirror`, holding `owner__name.git`) or GitHub. The agent gets a layer without the later history
and without `/eval.sh`. Tests run as GSO runs them: `/gso_test_<i>.py`, from /testbed, with the
venv's python, under GSO's per-repository run counts and time limits (overridable).
"""
from __future__ import annotations

import datetime
import os
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import urlparse

from harness.tasks.ids import check_id
from harness.tasks.task import IMAGE_POLICIES, NETWORK_POLICIES, TESTBED, Task, TaskError

HUB_DATASET = "gso-bench/gso"
REGISTRY = "slimshetty/gso"  # GSO's images on Docker Hub, tagged gso.eval.<arch>.<id lower>
# GSO's per-repository rules (its eval constants): runs per test (MAX_ITERS, 5 elsewhere) and the time
# limit of one run (MAX_TIME, 300 s elsewhere; None: no limit).
GSO_RUNS_PER_TEST = {"abetlen/llama-cpp-python": 1, "microsoft/onnxruntime": 1, "huggingface/tokenizers": 1}
GSO_TEST_TIMEOUT: dict[str, float | None] = {"abetlen/llama-cpp-python": None, "huggingface/tokenizers": None}
GSO_DEFAULT_TEST_TIMEOUT = 300.0


class Resources(TypedDict):
    """A task's CPUs, memory and build time limit (seconds)."""
    cpus: float
    memory: str
    build_timeout: float


# Resources (GSO's Harbor tasks: 4 CPUs and 16 GB, 8 and 32 GB for its high-resource repositories, whose
# builds GSO also gives 5400 s instead of 3600 s).
HIGH_RESOURCE_REPOS = ("abetlen/llama-cpp-python", "huggingface/tokenizers")
GSO_RESOURCES: Resources = {"cpus": 4.0, "memory": "16g", "build_timeout": 3600.0}
GSO_HIGH_RESOURCES: Resources = {"cpus": 8.0, "memory": "32g", "build_timeout": 5400.0}
# GSO's row: field -> (kind, what a user is told it should be)
FIELDS: dict[str, tuple[str, str]] = {
    "instance_id": ("str", "a string such as 'owner__repo-1a2b3c4'"),
    "repo": ("str", "the repository as 'owner/name'"),
    "base_commit": ("sha", "a commit sha (7 to 40 hex digits)"),
    "opt_commit": ("sha", "a commit sha (7 to 40 hex digits)"),
    "api": ("str", "a string"),
    "prob_script": ("str", "a string"),
    "tests": ("list", "a list of test scripts"),
    "hints_text": ("str", "a string"),
    "setup_commands": ("list", "a list of strings"),
    "install_commands": ("list", "a list of strings"),
    "created_at": ("time", "a date or time"),
    "gt_commit_message": ("str", "a string"),
    "gt_diff": ("str", "a unified diff"),
    "arch": ("str", "a string such as 'x86_64'"),
    "instance_image_tag": ("str", "a string such as 'latest'"),
}
Warn = Callable[[str], None]
# GSO's eval leaves these out of a patch, besides the tooling paths every task leaves out.
PATCH_EXCLUDES = ("*.json", "*.txt", "*.csv", "*.log", "*.pkl")


def image_key(row: dict[str, Any]) -> str:
    """GSO's local image name for a row: ids keep the repository's case, image keys lower-case them."""
    return f"gso.eval.{row['arch']}.{row['instance_id'].lower()}:{row['instance_image_tag']}"


def registry_image(row: dict[str, Any]) -> str:
    """Where GSO publishes a row's image."""
    return f"{REGISTRY}:gso.eval.{row['arch']}.{row['instance_id'].lower()}"


def load_rows(dataset: str, split: str = "test") -> list[dict[str, Any]]:
    """The rows of a local file or folder, or of a dataset on the hub; TaskError (one line) otherwise."""
    path = Path(dataset).expanduser()
    try:
        import datasets
    except ImportError:  # a dependency of the project; only a broken install lacks it
        raise TaskError("reading GSO rows needs the `datasets` package: pip install datasets") from None
    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    try:
        if path.is_dir():
            loaded = datasets.load_from_disk(str(path))
            if isinstance(loaded, datasets.DatasetDict):
                if split not in loaded:
                    raise TaskError(f"{dataset}: no split '{split}' (it has {', '.join(loaded)})")
                loaded = loaded[split]
        elif path.is_file():
            kind = {".json": "json", ".jsonl": "json", ".parquet": "parquet"}.get(path.suffix)
            if kind is None:
                raise TaskError(f"{dataset}: expected a .json, .jsonl or .parquet file, or a save_to_disk folder")
            loaded = datasets.load_dataset(kind, data_files=str(path), split="train")
        elif dataset.startswith((".", "/", "~")) or path.suffix or dataset.count("/") != 1:
            raise TaskError(f"{dataset}: no such file or folder of GSO rows")
        else:
            _check_hub()
            loaded = datasets.load_dataset(dataset, split=split)
    except TaskError:
        raise
    except Exception as err:  # noqa: BLE001 - datasets' many errors (schema, network, format) become one line
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        where = "from the hub (on a machine without it, pass a local file: tasks.dataset=PATH)" \
            if not path.exists() else ""
        raise TaskError(f"{dataset}: cannot read GSO rows {where}: {first}".replace("  ", " ")) from None
    return [dict(row) for row in loaded]


def _check_hub(timeout: float = 5.0) -> None:
    """Fail in seconds, in one line, when the hub does not answer (datasets would retry for half a minute);
    with HF_HUB_OFFLINE set, datasets reads its cache instead."""
    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE"):
        return
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((endpoint.hostname or "huggingface.co", endpoint.port or 443), timeout).close()
    except OSError as err:
        raise TaskError(f"the Hugging Face hub ({endpoint.geturl()}) does not answer ({err.strerror or err}); "
                        "pass the rows as a local file or folder: tasks.dataset=PATH") from None


def check_rows(rows: list[dict[str, Any]], where: str, warn: Warn = lambda _m: None) -> None:
    """GSO's exact columns with their types, and unique ids; TaskError naming the first problem."""
    if not rows:
        raise TaskError(f"{where}: no rows")
    columns = set().union(*(row.keys() for row in rows))
    missing = [name for name in FIELDS if name not in columns]
    if missing:
        raise TaskError(f"{where}: missing column '{missing[0]}' (a GSO row has: {', '.join(FIELDS)})")
    extra = sorted(columns - set(FIELDS))
    if extra:
        warn(f"{where}: ignoring column(s) GSO rows do not have: {', '.join(extra)}")
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        name = row.get("instance_id")
        if isinstance(name, str):  # first: the id names files, images and this row in the messages below
            check_id(f"{where}: column 'instance_id' of row {number}", name)
        label = f"row {number}" + (f" ({name})" if isinstance(name, str) else "")
        for column, (kind, expected) in FIELDS.items():
            if not _typed(row.get(column), kind):
                value = row.get(column)  # (a sha is shown: it reaches git commands)
                got = repr(value)[:80] if kind == "sha" and isinstance(value, str) else type(value).__name__
                raise TaskError(f"{where}: column '{column}' of {label} should be {expected}, got {got}")
        assert isinstance(name, str)  # (a string: checked with the FIELDS above)
        if name in seen:
            raise TaskError(f"{where}: instance_id '{name}' appears twice")
        seen.add(name)


def _typed(value: Any, kind: str) -> bool:
    if kind == "list":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if kind == "time":
        return isinstance(value, (str, datetime.date))
    if kind == "sha":
        return isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{7,40}", value) is not None
    return isinstance(value, str)


def repo_url(repo: str, mirror: str | Path | None = None) -> str:
    """Where a row's repository comes from: `<mirror>/owner__name.git` (offline), else GitHub."""
    owner, _, name = repo.partition("/")
    if mirror is not None:
        return str(Path(mirror).expanduser().resolve() / f"{owner}__{name}.git")
    return f"https://github.com/{repo}.git"


def install_commands(row: dict[str, Any]) -> tuple[str, ...]:
    """GSO runs the install commands as one block after a patch, without its `git clean -xfd` line."""
    return tuple(c for c in row["install_commands"] if c.strip() != "git clean -xfd")


def shown_install_commands(row: dict[str, Any]) -> tuple[str, ...]:
    """What the agent is told to rebuild with (GSO's agent-side filter): no venv creation, no clean, no
    `which python` or `python --version`, and a leading `git clean -xfd &&` cut off."""
    hidden = ("git clean -xfd", "which python", "python --version", "uv venv")
    return tuple(c.replace("git clean -xfd &&", "").strip() for c in row["install_commands"]
                 if not c.startswith(hidden))


@dataclass(frozen=True)
class GsoOptions:
    """How GSO rows become tasks; None means GSO's own rule for the row's repository."""
    hints: bool = False
    mirror: Path | None = None
    image: str = "auto"
    network: str = "none"
    test_timeout: float | None = None  # 0: no limit
    runs_per_test: int | None = None
    cpus: float | None = None
    memory: str | None = None


def to_task(row: dict[str, Any], options: GsoOptions = GsoOptions()) -> Task:
    """A row as a Task. Tests are named and run as GSO runs them; the expert's change is `gt_diff` and
    its state `opt_commit`; hints reach the prompt only when asked for."""
    names = tuple(f"gso_test_{i}.py" for i in range(len(row["tests"])))
    repo = row["repo"]
    needs = GSO_HIGH_RESOURCES if repo in HIGH_RESOURCE_REPOS else GSO_RESOURCES
    timeout = GSO_TEST_TIMEOUT.get(repo, GSO_DEFAULT_TEST_TIMEOUT) if options.test_timeout is None \
        else (options.test_timeout or None)
    return Task(
        id=row["instance_id"], repo=repo, api=row["api"], languages=("python",),
        setup_commands=tuple(row["setup_commands"]), install_commands=install_commands(row),
        install_block=True, shown_install_commands=shown_install_commands(row), patch_excludes=PATCH_EXCLUDES,
        prob_script=row["prob_script"], expert_patch=row["gt_diff"],
        hidden_files=tuple((name, test.encode()) for name, test in zip(names, row["tests"])), test_names=names,
        description=row["hints_text"] if options.hints else "", tags=("gso",), source="gso",
        base_commit=row["base_commit"], opt_commit=row["opt_commit"], repo_url=repo_url(repo, options.mirror),
        prebuilt_image=image_key(row), registry_image=registry_image(row), image_policy=options.image,
        agent_hides=("/eval.sh",), test_dir="/", test_cwd=TESTBED, test_python=f"{TESTBED}/.venv/bin/python",
        test_timeout=timeout, runs_per_test=options.runs_per_test or GSO_RUNS_PER_TEST.get(repo),
        network=options.network, cpus=options.cpus or needs["cpus"], memory=options.memory or needs["memory"],
        build_timeout=needs["build_timeout"],
    )


class GsoSource:
    """Task source `gso`: the selector is the dataset (a hub id or a local file or folder)."""
    name = "gso"

    def __init__(self, split: str = "test", hints: bool = False, repo_mirror: str | None = None,
                 image: str = "auto", network: str = "none", test_timeout: float | None = None,
                 runs_per_test: int | None = None, cpus: float | None = None, memory: str | None = None,
                 warn: Warn | None = None) -> None:
        self.split = split
        self.warn = warn or (lambda message: print(f"warning: {message}", file=sys.stderr, flush=True))
        mirror = Path(repo_mirror).expanduser() if repo_mirror else None
        if mirror is not None and not mirror.is_dir():
            raise TaskError(f"tasks.repo_mirror={repo_mirror}: no such folder (it should hold owner__name.git)")
        if image not in IMAGE_POLICIES:
            raise TaskError(f"tasks.image={image}: choose one of {', '.join(IMAGE_POLICIES)}")
        if network not in NETWORK_POLICIES:
            raise TaskError(f"tasks.network={network}: choose one of {', '.join(NETWORK_POLICIES)}")
        if test_timeout is not None and test_timeout < 0:
            raise TaskError(f"tasks.test_timeout={test_timeout}: a number of seconds, 0 for no limit")
        if runs_per_test is not None and runs_per_test < 1:
            raise TaskError(f"tasks.runs_per_test={runs_per_test}: at least 1")
        if cpus is not None and cpus <= 0:
            raise TaskError(f"tasks.cpus={cpus}: a positive number of CPUs")
        self.options = GsoOptions(hints, mirror, image, network, test_timeout, runs_per_test, cpus, memory)

    def select(self, selector: str) -> list[Task]:
        dataset = selector.strip() or HUB_DATASET
        rows = load_rows(dataset, self.split)
        check_rows(rows, dataset, self.warn)
        return [to_task(row, self.options) for row in rows]
