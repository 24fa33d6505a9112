"""ISO-Bench's rows as service tasks: vLLM and SGLang commits graded by serving metrics.

A row (the Hugging Face dataset `Lossfunk/ISO-Bench`, configs `vllm` and `sglang`, or the same rows in a
local JSON, JSONL or parquet file) names a merged commit (`commit_hash`, `pr_url`), the benchmark command
its authors measured it with (`perf_command`, e.g. vLLM's `benchmarks/benchmark_serving.py ...`), the
models (`models`), and the expert's change (`diff_text`). Rows whose benchmark serves (`has_serving`)
become service tasks (harness.serving): the base is the commit's parent, the expert the commit; the server
is the engine's OpenAI-compatible one started on the first model from a local weights folder
(`models_dir`: nothing is downloaded at grading); the workload is the benchmark command's (prompt and
output lengths, number of prompts, request rate, concurrency), sent by the grader's client on held-out
seeds instead of the command's own client. Other rows (offline latency or throughput scripts) are left
out with one warning line.

What the agent sees: the repository, the benchmark command and the model, never the commit's message,
subject, files or diff. This source builds no image here: a GPU host with the engine's build needs does
(docs/benchmarks.md).
"""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

from harness.serving.spec import Service, ServiceError, load_service
from harness.tasks.gso import Warn, load_rows
from harness.tasks.task import Task, TaskError

HUB_DATASET = "Lossfunk/ISO-Bench"
# field -> (type, what a user is told it should be)
FIELDS: dict[str, tuple[type, str]] = {
    "commit_hash": (str, "a 40-character commit sha"), "pr_url": (str, "the pull request's GitHub URL"),
    "models": (list, "a list of model names"), "perf_command": (str, "the benchmark command line"),
    "has_serving": (bool, "true or false"), "commit_subject": (str, "a string"),
    "commit_message": (str, "a string"), "files_changed": (list, "a list of paths"),
    "diff_text": (str, "a unified diff"),
}
PR_URL = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+)/pull/\d+")
PORT = 8000
# How each engine starts its OpenAI-compatible server, and how a state is built from its source tree.
ENGINES: dict[str, dict[str, Any]] = {
    "vllm": {"serve": "python3 -m vllm.entrypoints.openai.api_server --model {model} --served-model-name {name} "
                      "--port {port} --disable-log-requests",
             "build": ("pip install -e . --no-build-isolation",)},
    "sglang": {"serve": "python3 -m sglang.launch_server --model-path {model} --served-model-name {name} "
                        "--port {port}",
               "build": ("pip install -e 'python[all]'",)},
}
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def check_row(row: dict[str, Any], where: str) -> None:
    for name, (kind, expected) in FIELDS.items():
        if name not in row:
            raise TaskError(f"{where}: missing column '{name}' ({expected})")
        if not isinstance(row[name], kind):
            raise TaskError(f"{where}: column '{name}' should be {expected}, got {type(row[name]).__name__}")
    if not re.fullmatch(r"[0-9a-f]{40}", row["commit_hash"]):
        raise TaskError(f"{where}: column 'commit_hash' should be {FIELDS['commit_hash'][1]}, "
                        f"got {row['commit_hash']!r}")
    if not PR_URL.match(row["pr_url"]):
        raise TaskError(f"{where}: column 'pr_url' should be {FIELDS['pr_url'][1]}, got {row['pr_url']!r}")
    if not row["models"]:
        raise TaskError(f"{where}: column 'models' is empty: a serving task needs its model")


def _flags(command: str) -> dict[str, str]:
    """--name value and --name=value pairs of a command line (a bare flag maps to "")."""
    words = shlex.split(command)
    out: dict[str, str] = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            if not eq:
                value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else ""
            out[name.replace("_", "-")] = value
    return out


def workload_of(perf_command: str) -> dict[str, Any]:
    """The workload a serving benchmark command asks for, in the service block's terms: random prompts of
    --random-input-len tokens answered with --random-output-len (vLLM's and SGLang's random dataset; a
    ShareGPT run is approximated by its defaults), --num-prompts of them, at --request-rate (inf: at once)
    with at most --max-concurrency in flight."""
    flags = _flags(perf_command)

    def number(*names: str, default: float) -> float:
        for name in names:
            if flags.get(name):
                try:
                    return float(flags[name])
                except ValueError:
                    raise TaskError(f"perf_command: --{name} {flags[name]!r} is not a number") from None
        return default

    rate = number("request-rate", default=float("inf"))
    workload: dict[str, Any] = {
        "requests": int(number("num-prompts", default=1000)),
        "prompt_tokens": int(number("random-input-len", "input-len", "sharegpt-input-len", default=1024)),
        "output_tokens": int(number("random-output-len", "output-len", "sharegpt-output-len", default=128)),
        "arrival": "burst" if rate == float("inf") else "poisson", "warmup": 4,
        "extra_body": {"ignore_eos": True},  # (the benchmarks' random dataset asks for every token)
    }
    if rate != float("inf"):
        workload["rate"] = rate
    concurrency = int(number("max-concurrency", default=0))
    if concurrency:
        workload["concurrency"] = concurrency
    return workload


def to_task(row: dict[str, Any], models_dir: str, where: str) -> Task:
    match = PR_URL.match(row["pr_url"])
    assert match is not None  # (check_row)
    owner, name = match.groups()
    engine = name.lower()
    if engine not in ENGINES:
        raise TaskError(f"{where}: {owner}/{name} is neither vLLM nor SGLang; this source knows {', '.join(ENGINES)}")
    model = row["models"][0]
    weights = f"{models_dir.rstrip('/')}/{model}"
    try:
        service: Service = load_service({
            "start": ENGINES[engine]["serve"].format(model=shlex.quote(weights), name=shlex.quote(model), port=PORT),
            "port": PORT, "env": OFFLINE, "ready": "/health", "ready_timeout_s": 900, "request_timeout_s": 600,
            "model": model, "workload": workload_of(row["perf_command"]), "primary": "output_throughput",
            "metrics": ["ttft_p50", "ttft_p99", "tpot_p50", "itl_p50", "e2el_p90", "request_throughput"],
            "quality": 0.0, "quality_prompts": 8})
    except ServiceError as err:
        raise TaskError(f"{where}: {err}") from None
    commit = row["commit_hash"]
    return Task(
        id=f"{engine}-{commit[:12]}", repo=f"{owner}/{name}", api=engine, languages=("python",),
        setup_commands=tuple(ENGINES[engine]["build"]), install_commands=tuple(ENGINES[engine]["build"]),
        prob_script=f"# The serving benchmark this repository is measured with ({model}):\n{row['perf_command']}\n",
        expert_patch=row["diff_text"], tags=("isobench", engine), source="isobench",
        base_commit=f"{commit}^", opt_commit=commit, repo_url=f"https://github.com/{owner}/{name}.git",
        image_policy="build", gpus=1, network="offline", service=service)


class IsoBenchSource:
    """Task source `isobench`: the selector is the dataset (a hub id or a local file of rows)."""
    name = "isobench"

    def __init__(self, split: str = "train", models_dir: str | None = None, warn: Warn | None = None) -> None:
        self.split = split
        self.models_dir = models_dir or "/models"
        self.warn = warn or (lambda message: print(f"warning: {message}", file=sys.stderr, flush=True))

    def select(self, selector: str) -> list[Task]:
        dataset = selector.strip() or HUB_DATASET
        rows = load_rows(dataset, self.split)
        tasks, offline = [], 0
        for i, row in enumerate(rows):
            where = f"{Path(dataset).name} row {i}"
            check_row(row, where)
            if not row["has_serving"]:
                offline += 1
                continue
            tasks.append(to_task(row, self.models_dir, where))
        if offline:
            self.warn(f"{offline} of {len(rows)} ISO-Bench rows benchmark offline latency or throughput, not "
                      "serving: left out")
        if not tasks:
            raise TaskError(f"{dataset}: no row benchmarks serving (has_serving); nothing to grade as a service")
        return tasks
