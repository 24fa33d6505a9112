"""GSO end to end, offline: rows in GSO's schema and bare mirrors of their repositories (one of them a C
extension), images built from the rows, the runner and the grader on them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sandbox.docker.containers import OWNER_LABEL
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.providers import provider
from harness.tasks import select_tasks
from tests.docker_support import client
from tests.gso_rows import make_gso
from tests.test_runner import run_dir, runner

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def gso(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    return make_gso(tmp_path_factory.mktemp("gso"))


def _no_containers_of(pid: int) -> bool:
    owner = f"{OWNER_LABEL}={__import__('socket').gethostname()}:{pid}"
    return not client().containers.list(all=True, filters={"label": owner})


@pytest.mark.parametrize("model, scaffold, expected", [
    # the oracle's exact verdict on timed code: alone (make test's second pass); no timing makes a no-op pass
    pytest.param("oracle", "mini_swe", 1.0, marks=pytest.mark.timed), ("noop", "codeact", 0.0),
    pytest.param("oracle", "terminus", 1.0, marks=pytest.mark.slow),  # (CI's time: make bench runs it)
])
def test_runner_on_gso_rows(gso: tuple[Path, Path, list[dict]], tmp_path: Path, model: str, scaffold: str,
                            expected: float) -> None:
    rows, mirror, _ = gso
    done = runner("tasks=gso", f"tasks.dataset={rows}", f"tasks.repo_mirror={mirror}", f"model={model}",
                  f"scaffold={scaffold}", "rollouts=2", "grading.rounds=2", out=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((run_dir(tmp_path) / "report.json").read_text())
    summary = report["summary"]
    assert summary["n_rollouts"] == 4 and summary["opt_at_k"]["1"] == expected, report["tasks"]
    if model == "oracle":  # the expert's own diff, re-applied: nothing in it is a hack signal
        graded = [json.loads(p.read_text()) for p in (run_dir(tmp_path) / "grading").glob("*/*.json")]
        assert {g["status"] for g in graded} == {"passed"}, [g.get("reason") for g in graded]
    assert _no_containers_of(done.pid)  # type: ignore[attr-defined]


def test_the_agents_container_holds_nothing_of_the_expert(gso: tuple[Path, Path, list[dict]]) -> None:
    rows, mirror, raw = gso
    tasks = select_tasks(str(rows), "gso", repo_mirror=str(mirror))
    images = provider("docker").ensure_images(tasks, "debian:bookworm-slim", progress=lambda _m: None)
    for task, row in zip(tasks, raw):
        assert images[task.id].agent != images[task.id].grading
        with DockerSandbox.start(images[task.id].grading, client=client()) as box:  # GSO's layout: all history
            assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code == 0
        with DockerSandbox.start(images[task.id].agent, client=client()) as box:
            assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code != 0
            assert box.exec("git rev-parse HEAD").output.strip() == row["base_commit"]  # the base's own history
            assert box.exec("git rev-list --all | wc -l").output.strip() == "1"
            assert box.exec("git reflog --all | wc -l; ls .git/refs/heads").output.split() == ["0", "main"]
            assert box.exec("test -e /eval.sh").exit_code == 1
            # the task's virtualenv is the agent's python, in login and plain shells alike
            assert box.exec("which python3").output.strip() == "/testbed/.venv/bin/python3"
            assert box.diff() == ""


def test_a_repository_missing_from_the_mirror_is_one_line(gso: tuple[Path, Path, list[dict]], tmp_path: Path) -> None:
    _rows, mirror, raw = gso
    row = {**raw[0], "instance_id": "Acme__absent-0000000", "repo": "Acme/absent", "base_commit": "0" * 40}
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    done = runner("tasks=gso", f"tasks.dataset={rows}", f"tasks.repo_mirror={mirror}", out=tmp_path, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no repository at" in lines[0] and "Acme__absent.git" in lines[0], done.stderr


@pytest.mark.timed  # verdicts on timed code: alone (make test's second pass)
def test_harness_grade_takes_an_official_predictions_file(gso: tuple[Path, Path, list[dict]], tmp_path: Path) -> None:
    rows, mirror, raw = gso
    predictions = tmp_path / "output.gso.jsonl"  # GSO's predictions: the expert's diff as the model's patch
    predictions.write_text("".join(json.dumps({"instance_id": r["instance_id"], "model_patch": r["gt_diff"],
                                               "model_name_or_path": "org/oracle"}) + "\n" for r in raw))
    out = tmp_path / "graded"
    done = subprocess.run([sys.executable, "-m", "harness", "grade", "--source", "gso", "--tasks", str(rows),
                           "--repo-mirror", str(mirror), "--predictions", str(predictions), "--rounds", "2",
                           "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["opt_at_k"]["1"] == 1.0
    gso_report = out / "logs/run_evaluation/rollout_0/org__oracle/org__oracle.rollout_0.report.json"
    sets = json.loads(gso_report.read_text())["instance_sets"]
    assert sets["opt_commit_ids"] == sorted(r["instance_id"] for r in raw)
