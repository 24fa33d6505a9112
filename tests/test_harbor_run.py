"""Harbor tasks end to end, offline: images built from the tasks' Dockerfiles (FROM substituted), every
scaffold, the oracle (solution/solve.sh) and noop, grading in a fresh container, pinned files, binary
diffs, a verifier that runs over its time."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import grade
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.providers import provider
from harness.tasks import Task, select_tasks
from tests.docker_support import client
from tests.test_runner import containers_of, run_dir, runner
from tests.timing_support import near_half

pytestmark = pytest.mark.docker
FIXTURES = Path(__file__).parent / "fixtures" / "harbor"


def _images(tasks: list[Task]) -> dict:
    return provider("docker").ensure_images(tasks, "debian:bookworm-slim", progress=lambda _m: None)


def _task(name: str, root: Path = FIXTURES) -> Task:
    (task,) = [t for t in select_tasks(str(root), "harbor") if t.id == name]
    return task


# (codeact and terminus on the suite's tasks: test_runner.py; here on Harbor tasks in `make bench`)
@pytest.mark.long("Harbor tasks built and run end to end, each graded: ~45 s")
@pytest.mark.parametrize("scaffold", ["mini_swe", pytest.param("codeact", marks=pytest.mark.slow),
                                      pytest.param("terminus", marks=pytest.mark.slow)])
def test_the_oracle_reaches_the_reference_on_every_scaffold(tmp_path: Path, scaffold: str) -> None:
    done = runner("tasks=harbor", f"tasks.path={FIXTURES}", "model=oracle", f"scaffold={scaffold}", "rollouts=1",
                  "grading.rounds=2", out=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    path = run_dir(tmp_path)
    reports = {t: json.loads((path / "grading" / t / "0.json").read_text()) for t in ("ctiming", "sortcount",
                                                                                     "wordstats")}
    assert {t: r["status"] for t, r in reports.items()} == dict.fromkeys(reports, "passed"), reports
    assert reports["sortcount"]["score"] == 0.5 and reports["wordstats"]["score"] == 1.0  # exact: deterministic
    # timed: anchors measured here, the reference scores 0.5; the task's own reward used another machine's
    ctiming = reports["ctiming"]
    assert ctiming["score_source"] == "calibrated" and near_half(ctiming), ctiming["calibration"]
    assert reports["sortcount"]["opt_commit"] and reports["wordstats"]["opt_commit"]  # exact: reached
    # timed: the reference reaches itself, or this machine's noise (±15% over seconds on CI's 2 cores) is
    # flagged as able to flip the verdict, or (three rounds under make test's three workers: CI saw all three
    # ratios below 0.95 once) it is within that noise of itself; a wrong state timed would be far off
    calibration = ctiming["calibration"]
    assert ctiming["opt_commit"] or ctiming["uncertain"]["opt_commit"] or calibration["reference_ratio"] > 0.85, \
        calibration
    assert ctiming["reward"] is not None and ctiming["calibration"]["base"] > ctiming["calibration"]["reference"]
    assert reports["sortcount"]["score_source"] == "reward"  # a count: the task's anchors hold anywhere
    assert reports["wordstats"]["reward_extras"]["baseline"] is None  # extras of any type are kept
    assert not containers_of(done.pid)  # type: ignore[attr-defined]


def test_noop_scores_zero(tmp_path: Path) -> None:
    done = runner("tasks=harbor", f"tasks.path={FIXTURES}", "model=noop", "rollouts=1", out=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((run_dir(tmp_path) / "report.json").read_text())["summary"]
    assert summary["opt_at_k"]["1"] == 0.0 and summary["avg_at_k"]["1"] == 0.0


def test_a_changed_pinned_file_is_an_instruction_violation() -> None:
    task = _task("ctiming")
    image = _images([task])[task.id].agent
    with DockerSandbox.start(image, client=client()) as box:
        assert box.workdir == "/app" and set(box.pins) == {"Makefile", ".build.sha256"}
        # the checker's own record of the Makefile is rewritten too: only the host-side pin catches it
        box.exec("echo 'primes: primes.c' > Makefile && printf '\\tgcc -O3 -o primes primes.c\\n' >> Makefile "
                 "&& sha256sum /app/Makefile > .build.sha256")
        patch = box.diff()
    report = grade(task, patch, image, GradeConfig())
    assert report["status"] == "instruction_violation" and report["score"] == 0.0
    assert "Makefile" in report["reason"] and ".build.sha256" in report["reason"]


def test_a_diff_before_the_first_section_is_refused_before_any_verification() -> None:
    # git apply would apply the traditional diff in the leading text too: it writes the pinned Makefile
    task = _task("ctiming")
    leading = ("fix the build\n--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-x\n+y\n"
               "diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/notes.txt\n"
               "@@ -0,0 +1 @@\n+a\n")
    report = grade(task, leading, _images([task])[task.id].agent, GradeConfig())
    assert report["status"] == "patch_failed" and "a diff of Makefile" in report["reason"], report["reason"]
    assert not report["patch_successfully_applied"]


def test_binary_files_travel_in_the_patch() -> None:
    task = _task("wordstats")
    image = _images([task])[task.id].agent
    solution = dict((name, data) for name, data, _mode in task.solution_files)["solve.sh"]
    with DockerSandbox.start(image, client=client()) as box:
        box.write_file("/app/table.bin", bytes(range(256)) * 4)
        box.write_file("/tmp/solve.sh", solution)
        assert box.exec("bash /tmp/solve.sh").exit_code == 0
        patch = box.diff()
    assert "GIT binary patch" in patch and "wordstats.py" in patch
    with DockerSandbox.start(image, client=client()) as fresh:  # what grading does with it
        fresh.write_file("/tmp/p.diff", patch)
        assert fresh.exec("git apply --binary /tmp/p.diff").exit_code == 0
        assert fresh.read_file("/app/table.bin") == bytes(range(256)) * 4
    assert grade(task, patch, image, GradeConfig())["score"] == 1.0


def test_a_verifier_over_its_time_is_a_clear_status(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    shutil.copytree(FIXTURES / "wordstats", root / "slowcheck")
    toml = root / "slowcheck" / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 120.0", "timeout_sec = 3.0"))
    (root / "slowcheck" / "tests" / "test.sh").write_text(
        "#!/bin/bash\nsleep 4.5\nmkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n")
    task = _task("slowcheck", root)
    image = _images([task])[task.id].agent
    patch = ("diff --git a/wordstats.py b/wordstats.py\n--- a/wordstats.py\n+++ b/wordstats.py\n"
             "@@ -1,2 +1,3 @@\n+# touched\n import re\n from collections import Counter\n")
    report = grade(task, patch, image, GradeConfig())
    assert report["status"] == "verifier_timeout" and "3 s" in report["reason"] and report["score"] == 0.0
    assert report["wall_time_s"] < 40
    # a slower machine's allowance (Harbor's verifier_timeout_multiplier): 6 s, and the report says so
    slower = GradeConfig(verifier_timeout_multiplier=2.0)
    report = grade(task, patch, image, slower)
    assert report["status"] == "passed" and report["score"] == 1.0
    assert report["verifier_timeout_multiplier"] == 2.0
    assert not GradeConfig().matches(report, report["patch_sha256"])  # a stock-timeout run grades it again


@pytest.mark.slow  # (CI's time: test_autolab_fixtures grades calibrated tasks end to end; make bench runs this)
def test_anchors_are_measured_in_the_same_session() -> None:
    task = _task("ctiming")
    image = _images([task])[task.id].agent
    solution = dict((name, data) for name, data, _mode in task.solution_files)["solve.sh"]
    with DockerSandbox.start(image, client=client()) as box:
        box.write_file("/tmp/solve.sh", solution)
        assert box.exec("bash /tmp/solve.sh").exit_code == 0
        patch = box.diff()
    report = grade(task, patch, image, GradeConfig(rounds=3))
    calibration = report["calibration"]
    assert {state: len(values) for state, values in calibration["rounds"].items()} == \
        {"base": 3, "patch": 3, "reference": 3}
    assert calibration["scale"] == "log" and calibration["reference_score"] == 0.5
    assert calibration["read_from"] == "reward.json['time_s']"  # the key [optimization].metric names
    assert near_half(report), calibration  # the reference scores 0.5 on the anchors measured here
    # it reaches itself, or noise that could flip the verdict is flagged (see the scaffold test above)
    assert report["opt_commit"] or report["uncertain"]["opt_commit"], calibration
    assert report["uncertain"]["opt_commit"] == calibration["uncertain"]
    uncalibrated = grade(task, patch, image, GradeConfig(rounds=3, calibrate=False))
    assert "calibration" not in uncalibrated and uncalibrated["score"] == uncalibrated["reward"]


def test_grading_in_place_is_an_option_and_recorded(tmp_path: Path) -> None:
    done = runner("tasks=harbor", f"tasks.path={FIXTURES}", "tasks.ids=[sortcount,wordstats]", "model=oracle",
                  "scaffold=mini_swe", "rollouts=1", "grading.in_place=true", out=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    path = run_dir(tmp_path)
    reports = {t: json.loads((path / "grading" / t / "0.json").read_text()) for t in ("sortcount", "wordstats")}
    assert {t: (r["in_place"], r["status"], r["score"]) for t, r in reports.items()} == \
        {"sortcount": (True, "passed", 0.5), "wordstats": (True, "passed", 1.0)}
    assert not containers_of(done.pid)  # type: ignore[attr-defined]


def test_a_prebuilt_docker_image_is_used_or_named_in_one_line(tmp_path: Path) -> None:
    task = _task("wordstats")
    own = _images([task])[task.id].agent  # stands in for a Terminal-Bench image: any local image with a WORKDIR
    root = tmp_path / "tasks"
    shutil.copytree(FIXTURES / "wordstats", root / "prebuilt")
    shutil.rmtree(root / "prebuilt" / "environment")
    toml = root / "prebuilt" / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]", f'[environment]\ndocker_image = "{own}"'))
    prebuilt = _task("prebuilt", root)
    images = _images([prebuilt])[prebuilt.id]
    with DockerSandbox.start(images.agent, client=client()) as box:
        assert box.workdir == "/app" and box.exec("python3 -c 'import wordstats'").exit_code == 0
    toml.write_text(toml.read_text().replace(own, "optrunner-tests/absent:never"))
    done = runner("tasks=harbor", f"tasks.path={root}", out=tmp_path / "out", timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(lines) == 1 and "optrunner-tests/absent:never" in lines[0] and "pulling" in lines[0], done.stderr


def test_validate_grades_the_reference_solutions_change_as_the_gold_patch(tmp_path: Path) -> None:
    from harness.grader.batch import validate

    task = _task("wordstats")  # no expert patch: its solution/solve.sh is the gold
    assert not task.expert_patch and task.solution_files
    (result,) = validate([task], _images([task]), GradeConfig(rounds=2), 1, tmp_path, log=lambda _m: None)
    assert result.gold_passes and result.empty_fails, (result.gold, result.empty)
    assert result.gold[0]["reward"] == 1.0 and result.empty[0]["status"] == "empty_patch"
    gold = json.loads((tmp_path / "wordstats" / "gold_0.json").read_text())
    assert gold["patch_exists"] and json.loads((tmp_path / "summary.json").read_text())["tasks"]["wordstats"][
        "gold_passes"]
