"""ISO-Bench rows (the dataset's columns, on fixture rows of our own) load as service tasks: the parent and
the commit, the engine's server command on local weights, the benchmark command's workload; offline rows are
left out with a warning, and nothing of the expert's change reaches what the agent sees."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.tasks import select_tasks
from harness.tasks.isobench import IsoBenchSource, workload_of
from harness.tasks.task import TaskError

DIFF = ("diff --git a/vllm/core/x.py b/vllm/core/x.py\n--- a/vllm/core/x.py\n+++ b/vllm/core/x.py\n"
        "@@ -1 +1 @@\n-a = 1\n+a = 2\n")


def row(commit: str = "0123456789abcdef0123456789abcdef01234567", *, serving: bool = True,
        repo: str = "vllm-project/vllm", command: str | None = None, **changes: object) -> dict:
    base = {
        "commit_hash": commit, "pr_url": f"https://github.com/{repo}/pull/4242", "pr_date": "2025-01-02",
        "timeline_extracted_at": "2025-03-01", "analysis_extracted_at": "2025-03-02",
        "models": ["meta-llama/Llama-3.1-8B-Instruct"],
        "perf_command": command or ("python benchmarks/benchmark_serving.py --model meta-llama/Llama-3.1-8B-Instruct "
                                    "--dataset-name random --random-input-len 512 --random-output-len 64 "
                                    "--num-prompts 200 --request-rate 8 --max-concurrency 32"),
        "has_serving": serving, "has_latency": not serving, "has_throughput": False, "uses_lm_eval": False,
        "commit_subject": "[Perf] Cache the block table", "commit_message": "SECRET-MESSAGE: cache it",
        "commit_date": "2025-01-03", "files_changed": ["vllm/core/x.py"],
        "stats": {"commit_year": 2025, "num_edited_lines": 2, "num_files": 1, "num_hunks": 1,
                  "num_non_test_edited_lines": 2, "num_non_test_files": 1, "num_test_files": 0,
                  "only_non_test_files": 1, "only_test_files": 0},
        "diff_text": DIFF}
    base.update(changes)
    return base


def write(tmp_path: Path, rows: list[dict]) -> str:
    path = tmp_path / "iso.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_serving_rows_become_service_tasks_with_the_engines_server_and_the_commands_workload(tmp_path: Path) -> None:
    rows = [row(), row("fedcba9876543210fedcba9876543210fedcba98", repo="sgl-project/sglang",
                       command="python -m sglang.bench_serving --backend sglang --dataset-name random "
                               "--random-input-len=1024 --random-output-len=128 --num-prompts 100"),
            row("1111111111111111111111111111111111111111", serving=False)]
    warned: list[str] = []
    tasks = IsoBenchSource(models_dir="/weights", warn=warned.append).select(write(tmp_path, rows))
    assert [t.id for t in tasks] == ["vllm-0123456789ab", "sglang-fedcba987654"]
    assert warned == ["1 of 3 ISO-Bench rows benchmark offline latency or throughput, not serving: left out"]
    vllm, sglang = tasks
    assert (vllm.base_commit, vllm.opt_commit) == ("0123456789abcdef0123456789abcdef01234567^",
                                                   "0123456789abcdef0123456789abcdef01234567")
    assert vllm.repo_url == "https://github.com/vllm-project/vllm.git" and vllm.gpus == 1
    assert vllm.expert_patch == DIFF and vllm.service is not None and sglang.service is not None
    assert vllm.service.start == ("python3 -m vllm.entrypoints.openai.api_server --model "
                                  "/weights/meta-llama/Llama-3.1-8B-Instruct --served-model-name "
                                  "meta-llama/Llama-3.1-8B-Instruct --port 8000 --disable-log-requests")
    assert sglang.service.start.startswith("python3 -m sglang.launch_server --model-path /weights/meta-llama/")
    assert dict(vllm.service.env)["HF_HUB_OFFLINE"] == "1" and vllm.service.model == "meta-llama/Llama-3.1-8B-Instruct"
    w = vllm.service.workload
    assert (w.requests, w.prompt_tokens, w.output_tokens, w.arrival, w.rate, w.concurrency) == \
        (200, (512, 512), (64, 64), "poisson", 8.0, 32)
    assert w.extra_body == {"ignore_eos": True}
    s = sglang.service.workload
    assert (s.requests, s.prompt_tokens, s.output_tokens, s.arrival, s.concurrency) == \
        (100, (1024, 1024), (128, 128), "burst", 0)
    # the agent's view: the repository and the benchmark command, nothing of the expert's change
    shown = json.dumps(vllm.prompt_vars()) + vllm.prob_script
    assert "benchmark_serving.py" in shown
    for secret in ("SECRET-MESSAGE", "Cache the block table", "vllm/core/x.py", "a = 2"):
        assert secret not in shown, secret


@pytest.mark.parametrize("change, message", [
    ({"commit_hash": "abc"}, "column 'commit_hash' should be a 40-character commit sha, got 'abc'"),
    ({"pr_url": "https://gitlab.com/x/y/-/merge_requests/1"}, "column 'pr_url' should be the pull request's"),
    ({"models": []}, "column 'models' is empty"),
    ({"has_serving": "yes"}, "column 'has_serving' should be true or false, got str"),
])
def test_a_bad_row_is_one_line_naming_its_column(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(TaskError) as err:
        select_tasks(write(tmp_path, [row(**change)]), "isobench")
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_rows_of_another_repository_or_only_offline_rows_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="pytorch/pytorch is neither vLLM nor SGLang"):
        select_tasks(write(tmp_path, [row(repo="pytorch/pytorch")]), "isobench")
    with pytest.raises(TaskError, match="no row benchmarks serving"):
        IsoBenchSource(warn=lambda _m: None).select(write(tmp_path, [row(serving=False)]))


def test_a_benchmark_command_without_lengths_takes_the_benchmarks_defaults() -> None:
    w = workload_of("python benchmarks/benchmark_serving.py --model m --dataset-name sharegpt")
    assert (w["requests"], w["prompt_tokens"], w["output_tokens"], w["arrival"]) == (1000, 1024, 128, "burst")
    with pytest.raises(TaskError, match="--num-prompts 'many' is not a number"):
        workload_of("bench --num-prompts many")
