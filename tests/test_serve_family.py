"""The service family (`tasks=serve`, harness/suite_serve) end to end: the oracle's and the no-op's rollouts
through the runner graded (passed, empty_patch); graded directly and alone (`timed`), each task's expert
patch reaches the expert, its weaker patch is opt_base only, the report's serving block holds what it
promises (docs/tasks.md), and servers that answer short or answer something else are not credited however
fast they are."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import yaml

from harness.grader.config import GradeConfig
from harness.grader.grade import grade_patches
from harness.tasks.folder import select_tasks
from harness.tasks.task import Task
from tests.docker_support import task_image
from tests.test_fence import rewrite
from tests.test_runner import results, runner, verdicts

pytestmark = pytest.mark.docker
FAMILY = Path(__file__).resolve().parents[1] / "harness" / "suite_serve"
# Hack patches: (task, what the base's module says, what the hack says instead, why it must not be credited)
HACKS = {
    "tokstream": [("half", "    for _ in range(max_tokens):\n", "    for _ in range(max_tokens // 2):\n",
                   "shorter than asked"),
                  ("canned", "        word = pick(successors(context[-1]), context)\n",
                   "        word = context[-1]\n", "quality gate")],
    "kvsearch": [("fewer", "doc_id))[:k]\n", "doc_id))[:k // 2]\n", "shorter than asked"),
                 ("unranked", "    index = build_index(DOCS)\n",
                  "    return [f\"d{i}\" for i in range(k)]\n    index = build_index(DOCS)\n", "quality gate"),
                 # wrong (and fast) for the warm-up and the workload, whose size the agent's copy of the load
                 # generator tells it, right for whatever comes after (the quality prompts)
                 ("workload_only", "def search(query, k):\n",
                  "import itertools\n\n_SEEN = itertools.count(1)\n\n\ndef search(query, k):\n"
                  "    if next(_SEEN) <= 68:\n        return [f\"d{i}\" for i in range(k)]\n"
                  "    return _search(query, k)\n\n\ndef _search(query, k):\n", "quality gate")],
}


def family() -> dict[str, Task]:
    return {t.id: t for t in select_tasks("serve")}


def hack(task: Task, old: str, new: str) -> str:
    module = f"{task.repo}/__init__.py"
    source = (FAMILY / task.id / "repo" / module).read_text()
    assert old in source, (task.id, old)
    return rewrite(module, source, source.replace(old, new))


def smaller_family(root: Path, requests: int = 64) -> Path:
    """The family's folders with fewer requests per launch (CI's time; the bench grades the real ones)."""
    for task_dir in sorted(p for p in FAMILY.iterdir() if (p / "task.yaml").is_file()):
        shutil.copytree(task_dir, root / task_dir.name)
        meta = yaml.safe_load((root / task_dir.name / "task.yaml").read_text())
        meta["service"]["workload"]["requests"] = requests
        (root / task_dir.name / "task.yaml").write_text(yaml.safe_dump(meta))
    return root


@pytest.mark.long("two service tasks through the runner for the oracle and the noop, every launch serving 64 "
                  "requests: 45-63 s beside make test's other processes")
def test_the_oracle_reaches_the_expert_on_every_service_task_and_the_noop_nothing(tmp_path: Path) -> None:
    tasks = smaller_family(tmp_path / "family")
    done = runner("-m", "model=oracle,noop", "scaffold=mini_swe", f"tasks.selector={tasks}", "rollouts=1",
                  "grading.rounds=2", "sweep_name=family", out=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = {yaml.safe_load((p.parent / "config.yaml").read_text())["model"]["id"]: p.parent
            for p in (tmp_path / "sweeps" / "family").rglob("results.jsonl")}
    oracle = results(runs["oracle"])
    assert sorted(r["instance_id"] for r in oracle) == ["kvsearch", "tokstream"]
    # (the verdicts are the timed test's below: beside make test's other processes a server's throughput
    # halved in one launch here, with two rounds too few to flag it)
    for record in oracle:
        assert record["grading"]["status"] == "passed", verdicts(runs["oracle"])
        report = json.loads((runs["oracle"] / "grading" / record["instance_id"] / "0.json").read_text())
        assert report["serving"]["primary"] == family()[record["instance_id"]].service.primary  # type: ignore[union-attr]
        assert {run["completed"] for run in report["serving"]["runs"]["patch"]} == {64}
        assert len(report["serving"]["seeds"]) == 2 and report["serving"]["quality_differs"] == 0.0
    summary = json.loads((runs["oracle"] / "report.json").read_text())["summary"]
    assert summary["n_rollouts"] == 2 and summary["statuses"] == {"passed": 2}, summary
    noop = json.loads((runs["noop"] / "report.json").read_text())["summary"]
    assert noop["opt_at_k"]["1"] == 0.0 and noop["statuses"] == {"empty_patch": 2}


@pytest.mark.timed  # verdicts on timed servers: make test runs it with no other test beside it
@pytest.mark.parametrize("task_id", ["tokstream", "kvsearch"])
def test_each_task_credits_its_expert_and_weaker_patch_as_they_deserve_and_no_hack(task_id: str) -> None:
    task = family()[task_id]
    assert task.service is not None
    # Fewer requests per launch than the task asks (CI's time): the verdicts' margins are per request, and the
    # stability the full workload buys is tests.bench.serving's to show. (64 and 4 warm-up: workload_only's 68)
    service = dataclasses.replace(task.service, workload=dataclasses.replace(task.service.workload, requests=64))
    task = dataclasses.replace(task, service=service)
    weaker = (FAMILY / task_id / "weaker.patch").read_text()
    hacks = HACKS[task_id]
    patches = [task.expert_patch, weaker, *(hack(task, old, new) for _, old, new, _ in hacks)]
    reports = grade_patches(task, patches, task_image(task), GradeConfig(rounds=2, bootstrap=200))
    gold, second = reports[:2]
    # (the expert's own patch against the expert: a tie, which a loaded machine may leave uncertain)
    assert gold["status"] == "passed" and gold["opt_base"], gold["reason"]
    # (or, two rounds alone on two cores put both of a tie's rounds 9% apart once: within that noise of itself)
    primary = gold["serving"]["metrics"][task.service.primary]
    assert gold["opt_commit"] or gold["uncertain"]["opt_commit"] or primary["speedup"]["patch_commit"] > 0.85, primary
    assert second["status"] == "passed" and second["opt_base"] and not second["opt_commit"], second["serving"]
    serving = gold["serving"]
    assert serving["primary"] == task.service.primary and set(serving["metrics"]) == set(task.service.reported)
    assert len(serving["seeds"]) == 2 and task.service.visible_seed not in serving["seeds"]
    assert serving["quality_differs"] == 0.0 and serving["visible_seed"]["value"] is not None
    asked = task.service.workload.requests
    assert all(run["completed"] == asked and run["short"] == 0 and run["ready_s"] > 0
               for state in ("base", "patch", "commit") for run in serving["runs"][state])
    # the base does several times the expert's work per request: the primary metric says so, and every
    # metric is better for it
    assert serving["metrics"][task.service.primary]["speedup"]["patch_base"] > 2, serving["metrics"]
    for name, metric in serving["metrics"].items():
        assert metric["speedup"]["patch_base"] > 1 and len(metric["rounds"]["base"]) == 2, (name, metric)
        lo, hi = metric["intervals"]["patch_base"]
        assert lo <= hi and hi > 1, (name, metric)
    for (name, _, _, why), report in zip(hacks, reports[2:]):
        assert report["status"] == "test_failed" and why in report["reason"], (name, report["reason"])


def test_the_agents_copy_of_the_load_generator_measures_its_server_on_the_visible_seed() -> None:
    from harness.sandbox.docker.sandbox import DockerSandbox
    from harness.serving.kit import KIT_DIR, kit_files
    from tests.docker_support import client

    task = family()["tokstream"]
    assert task.service is not None
    box = DockerSandbox.start(task_image(task), client=client())
    try:
        box.write_files(kit_files(task.service))
        box.exec(f"(setsid python3 server.py {task.service.port} > /tmp/server.log 2>&1 &)", timeout=30)
        done = box.exec(f"for i in $(seq 100); do python3 -c 'import socket; socket.create_connection("
                        f"(\"127.0.0.1\", {task.service.port}))' 2>/dev/null && break; sleep 0.1; done; "
                        f"python3 {KIT_DIR}/bench.py --requests 12", timeout=120)
    finally:
        box.close()
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert f"seed {task.service.visible_seed}: 12 completed, 0 failed, 0 short" in lines, done.output
    assert any(line.startswith("output_throughput ") and line.endswith("(primary)") for line in lines), done.output
    # a copy that needs nothing of this project: no import of harness
    assert not any(b"import harness" in data or b"from harness" in data for data in kit_files(task.service).values())
