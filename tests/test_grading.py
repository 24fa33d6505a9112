"""Grading one rollout in real containers: every kind of patch lands in the right GSO status with a
readable reason, and the report keeps GSO's keys."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import grade, opt_p_of
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks import Task, select_tasks
from harness.tasks.folder import load_task
from tests.conftest import write_task
from tests.docker_support import client, task_image
from tests.test_perfrun import HANGING_PATCH, WRONG_PATCH

pytestmark = pytest.mark.docker
QUICK = GradeConfig(rounds=2, bootstrap=200)
SLOW_PATCH = WRONG_PATCH.replace("@@ -1,5 +1,2 @@", "@@ -1,5 +1,4 @@").replace(
    "+    return sum(xs) + 1", "+    import time\n+    time.sleep(0.05)\n+    return sum(xs)")
SYNTAX_PATCH = WRONG_PATCH.replace("    return sum(xs) + 1", "    return sum(xs) +")
GSO_KEYS = {"patch_is_None", "patch_exists", "base_successfully_run", "patch_successfully_applied", "test_passed",
            "base_times", "patch_times", "commit_times", "opt_base", "opt_commit", "opt_stats"}


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return load_task(write_task(tmp_path, test_timeout=5))


def _grade(task: Task, patch: str | None, config: GradeConfig = QUICK) -> dict:
    return grade(task, patch, task_image(task), config)


@pytest.mark.timed  # verdicts on CPU-bound code: alone (make test's second pass)
def test_expert_as_patch_passes_with_gso_keys(task: Task) -> None:
    report = _grade(task, task.expert_patch)
    assert GSO_KEYS <= set(report)
    assert report["status"] == "passed" and report["test_passed"] and report["opt_base"]
    stats = report["opt_stats"]
    assert {"gm_speedup_patch_base", "hm_speedup_patch_commit", "per_test_speedups"} <= set(stats)
    assert stats["gm_speedup_commit_base"] > 2  # the loop-free sum is much faster than the loop
    assert 0.3 < report["score"] <= 1
    lo, hi = report["intervals"]["gm_speedup_patch_base"]
    assert lo <= stats["gm_speedup_patch_base"] <= hi
    assert {"opt_base", "opt_commit"} == set(report["uncertain"])
    assert len(report["round_times"]["patch"]["test_sum.py"]) == 2
    assert report["grader_version"] and report["timing_mode"] == "interleaved"
    assert opt_p_of(report, 0.0) and not opt_p_of(report, 1e9)


@pytest.mark.parametrize(("patch", "status", "needle"), [
    (None, "empty_patch", "empty"),
    ("", "empty_patch", "empty"),
    (WRONG_PATCH.replace("out = out + x", "out = out * x"), "patch_failed", "apply patch failed"),
    (SYNTAX_PATCH, "test_failed", "SyntaxError"),
    (WRONG_PATCH, "test_failed", "equivalence check"),
    (HANGING_PATCH, "test_failed", "timeout after 5s"),
])
def test_bad_patches_are_classified_with_a_reason(task: Task, patch: str | None, status: str, needle: str) -> None:
    report = _grade(task, patch)
    assert report["status"] == status, report["reason"]
    assert needle in report["reason"]
    assert not report["opt_base"] and not report["opt_commit"] and report["score"] == 0.0
    if status == "test_failed" and "timeout" in needle:
        assert report["wall_time_s"] < 60  # the hang was cut off by the per-test timeout


@pytest.mark.timed  # verdicts on CPU-bound code: alone (make test's second pass)
def test_slower_patch_passes_but_is_not_opt_base(task: Task) -> None:
    report = _grade(task, SLOW_PATCH)
    assert report["status"] == "passed"
    assert not report["opt_base"] and not report["opt_commit"] and report["score"] == 0.0
    assert report["opt_stats"]["gm_speedup_patch_base"] < 1


def test_gso_mode_runs_sequential_blocks(task: Task) -> None:
    report = _grade(task, task.expert_patch, GradeConfig(rounds=2, mode="gso", bootstrap=200))
    assert report["status"] == "passed" and report["timing_mode"] == "gso"
    assert all(len(v["test_sum.py"]) == 2 for v in report["round_times"].values())


def test_broken_c_build_is_patch_failed() -> None:
    task = next(t for t in select_tasks("suite") if "c" in t.languages and "smoke" in t.tags)
    box = DockerSandbox.start(task_image(task), client=client())
    try:
        source = box.exec("git ls-files '*.c' | head -1").output.strip()
        box.exec(f"echo 'this is not C;' >> {source}")
        patch = box.diff()
    finally:
        box.close()
    report = grade(task, patch, task_image(task), QUICK)
    assert report["status"] == "patch_failed", report["reason"]
    assert "install command" in report["reason"] and "error" in report["reason"]
