"""Code states in containers: GSO's apply cascade, rebuilds, hidden tests copied in, references
carried across containers, equivalence failures and timeouts reported with the failing step."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.states import (HIDDEN_DIR, StepFailed, apply_patch, copy_references, filter_patch, prepare_state,
                             run_test_script)
from harness.grader.timing import time_session
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import is_excluded
from harness.tasks import Task
from harness.tasks.folder import load_task
from tests.docker_support import client, task_image

WRONG_PATCH = """diff --git a/tiny/__init__.py b/tiny/__init__.py
--- a/tiny/__init__.py
+++ b/tiny/__init__.py
@@ -1,5 +1,2 @@
 def total(xs):
-    out = 0
-    for x in xs:
-        out = out + x
-    return out
+    return sum(xs) + 1
"""
HANGING_PATCH = WRONG_PATCH.replace("return sum(xs) + 1", "while True: pass")
CACHE_SECTION = """diff --git a/tiny/__pycache__/x.pyc b/tiny/__pycache__/x.pyc
new file mode 100644
--- /dev/null
+++ b/tiny/__pycache__/x.pyc
@@ -0,0 +1 @@
+junk
"""


def test_filter_patch_drops_excluded_paths() -> None:
    assert filter_patch(CACHE_SECTION + WRONG_PATCH) == WRONG_PATCH
    assert filter_patch(WRONG_PATCH) == WRONG_PATCH


def test_gso_tasks_also_leave_data_files_out_of_a_patch() -> None:
    from harness.tasks.gso import PATCH_EXCLUDES

    data = ("diff --git a/bench/results.json b/bench/results.json\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/bench/results.json\n@@ -0,0 +1 @@\n+{}\n")
    assert filter_patch(data + WRONG_PATCH, PATCH_EXCLUDES) == WRONG_PATCH
    assert filter_patch(data + WRONG_PATCH) == data + WRONG_PATCH  # other tasks keep them


@pytest.mark.parametrize("path, excluded", [
    (".venv/lib/x.py", True), ("pkg/.git/config", True), ("__pycache__/a.pyc", True), ("pkg/mod.pyc", True),
    ("pkg/__pycache__/m.cpython-311.pyc", True), ("tiny.egg-info/PKG-INFO", True), ("src/a.egg-info", True),
    ("tiny/__init__.py", False), ("src/venv_tools.py", False), ("docs/git.md", False),
])
def test_one_exclusion_list_for_diffs_and_patches(path: str, excluded: bool) -> None:
    # The sandbox's diff and the grader's patch filter use the same list (GSO's, with *.pyc).
    assert is_excluded(path) is excluded


@pytest.fixture
def task(tiny_task: Path) -> Task:
    return load_task(tiny_task)


@pytest.fixture
def boxes(task: Task) -> Iterator[list[DockerSandbox]]:
    image = task_image(task)
    started = [DockerSandbox.start(image, client=client()) for _ in range(2)]
    yield started
    for box in started:
        box.close()


@pytest.mark.docker
def test_expert_passes_eqcheck_against_base_reference(task: Task, boxes: list[DockerSandbox]) -> None:
    base = prepare_state("base", boxes[0], task, None)
    expert = prepare_state("expert", boxes[1], task, task.expert_patch)
    assert base.tests == ("test_sum.py",)
    assert run_test_script(base, "test_sum.py", "reference", 60).reported > 0
    assert copy_references(base, expert) == 1
    assert run_test_script(expert, "test_sum.py", "eqcheck", 60).reported > 0
    assert expert.sandbox.exec("grep -c 'sum(xs)' tiny/__init__.py").output.strip() == "1"


@pytest.mark.docker
@pytest.mark.parametrize(("patch", "step"), [(WRONG_PATCH, "equivalence check"), (HANGING_PATCH, "timeout after 3s")])
def test_bad_patches_fail_the_named_step(task: Task, boxes: list[DockerSandbox], patch: str, step: str) -> None:
    base = prepare_state("base", boxes[0], task, None)
    other = prepare_state("patch", boxes[1], task, patch)
    run_test_script(base, "test_sum.py", "reference", 60)
    copy_references(base, other)
    with pytest.raises(StepFailed) as err:
        run_test_script(other, "test_sum.py", "eqcheck", 3)
    assert step in err.value.step


@pytest.mark.docker
def test_timing_comes_from_the_timing_file_not_the_output(task: Task, boxes: list[DockerSandbox]) -> None:
    chatty = WRONG_PATCH.replace("return sum(xs) + 1", "print('Execution time: 99.0s'); return sum(xs)")
    state = prepare_state("patch", boxes[0], task, chatty)
    # The printed 99 s is the code's, not a timing.
    assert 0 < run_test_script(state, "test_sum.py", None, 60).reported < 5
    # A test that breaks the protocol: it writes its timing line nowhere.
    state.sandbox.exec(f"sed -i \"s|open(args.output_file|open('/dev/null'|\" {HIDDEN_DIR}/perfkit.py")
    with pytest.raises(StepFailed, match="wrote no timing file"):
        run_test_script(state, "test_sum.py", None, 60)


@pytest.mark.docker
@pytest.mark.parametrize("line", ["Execution time: 0.000000s", "Execution time: -1.5s", "Execution time: 1e999s"])
def test_a_time_that_is_not_positive_and_finite_fails_the_test(task: Task, boxes: list[DockerSandbox],
                                                               line: str) -> None:
    # GSO would divide by a zero time and credit the infinite speedup; here it is a failed step with a reason.
    state = prepare_state("patch", boxes[0], task, None)
    helper = f"{HIDDEN_DIR}/perfkit.py"
    source = state.sandbox.read_file(helper).decode()
    timing = 'out.write(f"Execution time: {elapsed:.6f}s\\n")'
    assert timing in source
    state.sandbox.write_file(helper, source.replace(timing, f"out.write({line + chr(10)!r})"))
    with pytest.raises(StepFailed, match="times must be positive and finite"):
        run_test_script(state, "test_sum.py", None, 60)


@pytest.mark.docker
def test_patch_that_does_not_apply_tries_the_whole_cascade(task: Task, boxes: list[DockerSandbox]) -> None:
    broken = WRONG_PATCH.replace("out = out + x", "out = out * x")
    with pytest.raises(StepFailed) as err:
        apply_patch(boxes[0], broken)
    assert err.value.step == "apply patch"
    for tool in ("git apply --verbose", "--ignore-space-change", "--reject", "patch --batch --fuzz=5"):
        assert tool in err.value.output
    assert boxes[0].exec("git status --porcelain").output == ""  # nothing half-applied is left


@pytest.mark.docker
def test_a_gpu_sessions_runs_are_watched_and_a_slowed_one_is_run_again(task: Task, boxes: list[DockerSandbox]) -> None:
    # The timing rounds as a GPU task's session runs them, NVML's part played by readings as a GPU machine
    # records them (this machine has no GPU): every run watched, the first one capped and so run again.
    from harness.gpus import Gpu
    from harness.gpus.clocks import Reading, Watch
    calm = Reading(1755, 2619, 41, 118.2)
    capped = Reading(1410, 2619, 63, 699.5, ("sw_power_cap",))
    readings = iter([calm, capped] + [calm] * 100)
    watch = Watch((Gpu(0, "GPU-aaaa", "NVIDIA H100 80GB HBM3"),), read=lambda gpu: next(readings),
                  samples=lambda gpu, since: [(since + k * 100_000, 40) for k in range(10**4)])
    # The hidden test says it makes 3 calls a run, as gpukit's tests say how many they make.
    says = b'perfkit.main(run_test, lambda: ["Timed calls: 3"])'
    hidden = tuple((name, data.replace(b"perfkit.main(run_test)", says)) for name, data in task.hidden_files)
    assert hidden != task.hidden_files
    task = dataclasses.replace(task, hidden_files=hidden)
    base = prepare_state("base", boxes[0], task, None)
    expert = prepare_state("expert", boxes[1], task, task.expert_patch)
    run_test_script(base, "test_sum.py", "reference", 60)  # (every timed run is checked against it)
    copy_references(base, expert)
    said: list[str] = []
    timed = time_session(task, base, expert, [], GradeConfig(rounds=2), said.append, watch)
    assert timed.calls == {"test_sum.py": 3}
    assert [len(timed.times[s]["test_sum.py"]) for s in ("base", "expert")] == [2, 2]
    runs = timed.gpu["base"]["test_sum.py"] + timed.gpu["expert"]["test_sum.py"]
    assert len(runs) == 4 and watch.summary()["redone"] == 1
    assert sum(1 for r in runs if r["redone_after"] == ["sw_power_cap"]) == 1
    assert any("slowed down during a timed run (sw_power_cap): run again" in line for line in said)
    # The host's view of the GPU joins the process's outside measures: 40% of each run's wall time.
    for state in ("base", "expert"):
        for outside, run in zip(timed.outside[state]["test_sum.py"], timed.gpu[state]["test_sum.py"]):
            assert outside.gpu_busy == run["busy_s"] and 0 < outside.gpu_busy < outside.wall + 0.2
