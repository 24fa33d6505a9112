"""The visible-vs-hidden gap (grader.visible): the spec script the agent saw is timed in the same rounds as the
hidden tests. A patch tuned to the spec's size only (fast there, the old loop everywhere else) shows a gap
well above 1; the expert's change, fast everywhere, a gap near 1. The gap never changes a verdict."""
from __future__ import annotations

import math
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import grade_patches
from harness.grader.visible import gap_report
from harness.tasks.folder import load_task
from tests.conftest import SLOW_SRC, write_task
from tests.docker_support import task_image

# The spec the agent sees sums 150,000 numbers and prints its own timer, as the suite's spec scripts do.
SPEC = textwrap.dedent('''
    import time
    import tiny

    data = list(range(150000))
    start = time.perf_counter()
    total = tiny.total(data)
    print(f"sum: {total}")
    print(f"total time: {time.perf_counter() - start:.6f}s")
''')
# Fast on exactly the visible size, the base's loop on the hidden test's 200,000 numbers.
TUNED_SRC = ("def total(xs):\n    if len(xs) == 150000:\n        return sum(xs)\n    out = 0\n    for x in xs:\n"
             "        out = out + x\n    return out\n")


def _diff(root: Path, new_src: str) -> str:
    scratch = root / ".tuned"
    subprocess.run(["cp", "-r", str(root / "tiny" / "repo"), str(scratch)], check=True)
    subprocess.run("git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm b", shell=True,
                   cwd=scratch, check=True)
    (scratch / "tiny" / "__init__.py").write_text(new_src)
    return subprocess.run(["git", "diff"], cwd=scratch, capture_output=True, text=True, check=True).stdout


@pytest.mark.docker
@pytest.mark.timed  # verdicts on CPU-bound code: alone (make test's second pass)
def test_a_patch_tuned_to_the_visible_spec_shows_a_gap_and_the_experts_does_not(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, prob_script=SPEC, test_timeout=30))
    tuned = _diff(tmp_path, TUNED_SRC)
    assert SLOW_SRC in (tmp_path / "tiny" / "repo" / "tiny" / "__init__.py").read_text()
    config = GradeConfig(rounds=3, bootstrap=300)
    expert, overfit = grade_patches(task, [task.expert_patch, tuned], task_image(task), config)
    assert config.matches(overfit, overfit["patch_sha256"])  # its settings recorded apart from the block: reused
    for report in (expert, overfit):
        assert report["status"] == "passed", report["reason"]
        seen = report["visible_spec"]
        assert seen["status"] == "measured" and seen["rounds"] == 3, seen
    seen = overfit["visible_spec"]
    assert seen["speedup_patch_base"] > 3, seen  # fast on the spec's size
    assert seen["hidden_gm_speedup_patch_base"] < 1.5, seen  # no faster on the hidden size
    assert seen["overfit_gap"] > 3 and seen["overfit_gap_interval"][0] > 2, seen
    assert not overfit["opt_base"]  # its verdict is the hidden tests' alone
    # the expert's change: fast on both, its gap near 1 (the same change is measured as the yardstick)
    assert 0.5 < expert["visible_spec"]["overfit_gap"] < 2, expert["visible_spec"]
    assert 0.5 < seen["expert_gap"] < 2, seen


@pytest.mark.docker
def test_a_failing_spec_script_is_said_and_changes_no_verdict(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, prob_script="import tiny\nraise SystemExit('the spec needs data')\n",
                                test_timeout=30))
    (report,) = grade_patches(task, [task.expert_patch], task_image(task), GradeConfig(rounds=1, bootstrap=50))
    assert report["status"] == "passed" and report["visible_spec"]["status"] == "failed", report
    assert "the base's run of the spec script failed" in report["visible_spec"]["reason"]
    off = grade_patches(task, [task.expert_patch], task_image(task),
                        GradeConfig(rounds=1, bootstrap=50, visible=False))[0]
    assert off["visible_spec"] == {"status": "off", "reason": "grading.visible=false", "overfit_gap": None}
    assert off["visible"] is False and report["visible"] is True  # the setting, as every report records it


def test_the_gap_is_the_visible_speedup_over_the_hidden_one() -> None:
    # hand-computed: visible rounds base 10, patch 2 -> 5x; hidden gm over two tests of 2x and 8x -> 4x
    hidden = {"opt_stats": {"gm_speedup_patch_base": 4.0, "gm_speedup_commit_base": 5.0}, "tests": ["a", "b"],
              "round_times": {"base": {"a": [2.0, 2.0], "b": [8.0, 8.0]}, "patch": {"a": [1.0, 1.0], "b": [1.0, 1.0]},
                              "commit": {"a": [1.0, 1.0], "b": [1.0, 1.0]}}}
    out = gap_report(hidden, [10.0, 10.0], [2.0, 2.0], [2.0, 2.0], GradeConfig(bootstrap=100))
    assert out["speedup_patch_base"] == 5.0 and out["overfit_gap"] == 1.25 and out["expert_gap"] == 1.0
    assert out["overfit_gap_interval"] == pytest.approx([1.25, 1.25])  # identical rounds: no spread
    assert math.isclose(float(np.prod([2.0, 8.0]) ** 0.5), 4.0)
    missing = gap_report(hidden, [10.0, 10.0], [2.0], [2.0, 2.0], GradeConfig(bootstrap=100))
    assert missing["status"] == "failed" and missing["overfit_gap"] is None


def test_a_report_without_the_gap_is_kept_on_resume() -> None:
    # the gap is a diagnostic: a report graded before it existed (or with it off) is not re-timed for it
    old = GradeConfig(visible=False).new_report("t", "diff")
    del old["visible"]
    assert GradeConfig().matches(old, old["patch_sha256"])
    assert not GradeConfig(rounds=3).matches(old, old["patch_sha256"])  # (other settings still count)


@pytest.mark.docker
def test_a_spec_script_far_longer_than_the_tests_is_cut_at_its_budget(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, prob_script="import time\ntime.sleep(60)\n", test_timeout=120))
    (report,) = grade_patches(task, [task.expert_patch], task_image(task), GradeConfig(rounds=2, bootstrap=50))
    assert report["status"] == "passed" and report["visible_spec"]["status"] == "failed", report["visible_spec"]
    assert "ran past 10 s, the visible workload's budget" in report["visible_spec"]["reason"]
    assert report["session"]["wall_time_s"] < 30  # one cut run of the base, none after it: not 60 s a run


def test_the_visible_budget_follows_the_hidden_tests() -> None:
    from harness.grader.timing import visible_budget

    assert visible_budget({"a": [1.0, 9.0], "b": [2.0]}, None) == 12.0  # 4 x (1 + 2): the first round's runs
    assert visible_budget({"a": [0.1]}, None) == 10.0  # at least 10 s
    assert visible_budget({"a": [30.0]}, 60) == 60  # at most the task's test timeout
