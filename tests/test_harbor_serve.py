"""Harbor task directories that declare a service (`[optrunner.service]` in task.toml): loaded into the service
kind, gated by tests/test.sh, then graded by their servers against the untouched environment's and the reference
solution's (harness.grader.reward_serving), end to end through the runner."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import grade_patches
from harness.sandbox.providers import provider
from harness.tasks import Task, TaskError, select_tasks
from tests.test_fence import rewrite
from tests.test_runner import containers_of, run_dir, runner, verdicts

FIXTURES = Path(__file__).parent / "fixtures" / "harbor_serve"
MODULE = FIXTURES / "autocomplete" / "environment" / "src" / "complete.py"


def _task(root: Path = FIXTURES) -> Task:
    (task,) = select_tasks(str(root), "harbor")
    return task


def _lighter(root: Path, requests: int = 150) -> Path:
    """The fixture with fewer requests per launch (CI's time: its serving is CPU-bound beside every other test;
    the verdicts asserted here have a margin of several times, not a few per cent)."""
    shutil.copytree(FIXTURES / "autocomplete", root / "autocomplete")
    toml = root / "autocomplete" / "task.toml"
    assert "requests = 600\n" in toml.read_text()
    toml.write_text(toml.read_text().replace("requests = 600\n", f"requests = {requests}\n"))
    return root


def _edit(*changes: tuple[str, str]) -> str:
    """A patch of the task's complete.py: each (old, new) replaced."""
    source = changed = MODULE.read_text()
    for old, new in changes:
        assert old in changed, old
        changed = changed.replace(old, new)
    return rewrite("complete.py", source, changed)


def test_the_service_table_makes_a_service_task() -> None:
    task = _task()
    assert task.service is not None and task.reward_check is not None  # both: the gate, then the server
    assert task.service.start == "python3 server.py 8000" and task.service.primary == "request_throughput"
    assert task.service.workload.requests == 600 and task.service.workload.arrival == "concurrency"
    assert task.service.reported == ("request_throughput", "e2el_p50", "e2el_p90")


@pytest.mark.parametrize("table, line, why", [
    ("[optrunner.service]\nport = 8000\n", "", "service.start should be the command"),
    ("[optrunner.service]\nstart = \"python3 s.py\"\nport = 70000\n", "", "service.port should be a TCP port"),
    ("[optrunner.service]\nstart = \"s\"\nport = 1\nprimary = \"speed\"\n", "", "service.primary should be one of"),
    ("[optrunner.service]\nstart = \"s\"\nport = 1\n[optrunner.service.workload]\nrequests = 0\n", "",
     "service.workload.requests is 0"),
    ("[optrunner]\nservice = \"python3 server.py\"\n", "", "service should be a mapping"),
])
def test_a_bad_service_table_is_one_line_naming_the_file(tmp_path: Path, table: str, line: str, why: str) -> None:
    root = tmp_path / "autocomplete"
    shutil.copytree(FIXTURES / "autocomplete", root)
    toml = (root / "task.toml").read_text()
    (root / "task.toml").write_text(toml[:toml.index("# The service")] + table)
    with pytest.raises(TaskError) as err:
        _task(root)
    message = str(err.value)
    assert message.startswith(f"{root / 'task.toml'}: [optrunner] ") and why in message and "\n" not in message


@pytest.mark.docker
def test_the_reference_is_credited_and_a_server_that_answers_short_is_not(tmp_path: Path) -> None:
    task = _task(_lighter(tmp_path))
    image = provider("docker").ensure_images([task], "debian:bookworm-slim", progress=lambda _m: None)[task.id]
    solved = _edit(("WORDS = make_words()\n", "WORDS = make_words()\nVOCABULARY = sorted(set(WORDS))\n"),
                   ("    vocabulary = sorted(set(WORDS))\n", "    vocabulary = VOCABULARY\n"))
    # complete() stays right (test.sh passes: the reward is 1), the server answers fewer words than asked
    short = rewrite("server.py", (MODULE.parent / "server.py").read_text(),
                    (MODULE.parent / "server.py").read_text().replace(
                        'int(request.get("max_tokens") or 16))', 'int(request.get("max_tokens") or 16) // 2)'))
    wrong = _edit(("    return [vocabulary", "    return [vocabulary[0]] + [vocabulary"),)  # test.sh's gate
    gold, half, broken = grade_patches(task, [solved, short, wrong], image.agent, GradeConfig(rounds=2, bootstrap=200))
    assert gold["status"] == "passed" and gold["score_source"] == "serving" and gold["reward"] == 1.0, gold["reason"]
    serving = gold["serving"]
    assert serving["primary"] == "request_throughput" and len(serving["seeds"]) == 2
    assert task.service is not None and task.service.visible_seed not in serving["seeds"]
    # sorting 40,000 words per request against once: several times the throughput, whatever the load beside it
    assert gold["opt_base"] and serving["metrics"]["request_throughput"]["speedup"]["patch_base"] > 2, serving
    # the reference's own change against the reference: a tie, which two rounds beside make test's other
    # processes cannot call (seen: 2.07 when one of the reference's launches was slowed); the folder family's
    # timed test asserts that verdict, run alone. Here: not slower than the reference beyond such noise.
    assert serving["metrics"]["request_throughput"]["speedup"]["patch_commit"] > 0.5, serving["metrics"]
    assert all(run["completed"] == 150 and run["short"] == 0 for state in ("base", "patch", "commit")
               for run in serving["runs"][state])
    assert half["status"] == "test_failed" and "shorter than asked" in half["reason"], half["reason"]
    assert half["reward"] == 1.0 and half["score"] == 0.0 and not half["opt_base"]
    # test.sh's reward is the gate: below grading.success, no server is measured
    assert broken["status"] == "test_failed" and broken["reward"] == 0.0 and "serving" not in broken, broken
    assert "grading.success" in broken["reason"] and broken["score"] == 0.0 and not broken["opt_base"]


@pytest.mark.docker
def test_the_runner_grades_a_harbor_service_task_end_to_end(tmp_path: Path) -> None:
    # (the no-op on Harbor tasks: test_harbor_run.py; an empty patch is refused before any service starts)
    done = runner("tasks=harbor", f"tasks.path={_lighter(tmp_path / 'tasks')}", "model=oracle", "rollouts=1",
                  "grading.rounds=2", out=tmp_path / "out", timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    path = run_dir(tmp_path / "out")
    oracle = json.loads((path / "grading" / "autocomplete" / "0.json").read_text())
    assert oracle["status"] == "passed" and oracle["score_source"] == "serving", verdicts(path)
    assert oracle["serving"]["quality_differs"] == 0.0 and oracle["opt_base"], oracle["serving"]["metrics"]
    summary = json.loads((path / "report.json").read_text())["summary"]
    assert summary["n_rollouts"] == 1 and summary["statuses"] == {"passed": 1}, summary
    assert not containers_of(done.pid)  # type: ignore[attr-defined]
