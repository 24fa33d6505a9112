"""GSO's own images: used when present under GSO's name, an agent-safe layer derived from them, and one
clear line when an image is neither present, nor pullable, nor buildable.

The "prebuilt" image here is one this test makes in GSO's layout (its name, /testbed with the expert's
commit in .git, /eval.sh naming that commit, the venv activated only from /root/.bashrc), since no
registry answers on these machines.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import grade
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.providers import provider
from harness.tasks import select_tasks
from harness.tasks.gso import image_key
from tests.docker_support import client
from tests.gso_rows import make_gso
from tests.test_runner import run_dir, runner

pytestmark = pytest.mark.docker
MARKER = "/gso-prebuilt-image"  # only the prebuilt image has it: proves which image a container came from


@pytest.fixture(scope="module")
def gso(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    return make_gso(tmp_path_factory.mktemp("gso"))


@pytest.fixture(scope="module")
def prebuilt(gso: tuple[Path, Path, list[dict]]) -> Iterator[tuple[str, dict]]:
    """GSO's image for the first row, in GSO's layout, under GSO's local name."""
    rows, mirror, raw = gso
    (task,) = [t for t in select_tasks(str(rows), "gso", repo_mirror=str(mirror), image="build")
               if t.id == raw[0]["instance_id"]]
    built = provider("docker").ensure_images([task], "debian:bookworm-slim", progress=lambda _m: None)[task.id]
    name = image_key(raw[0])
    container = client().containers.run(built.grading, ["sleep", "infinity"], detach=True, network_mode="none")
    try:
        code, out = container.exec_run(["bash", "-c", f"cd /testbed && git checkout -q -B main {task.base_commit} && "
                                        f"printf 'git checkout {task.opt_commit}\\n' > /eval.sh && touch {MARKER} && "
                                        "echo 'source .venv/bin/activate' >> /root/.bashrc"])
        assert code == 0, out
        repository, _, tag = name.rpartition(":")
        container.commit(repository=repository, tag=tag)
    finally:
        container.remove(force=True)
    yield name, raw[0]
    client().images.remove(name, force=True)


def test_gsos_image_is_used_and_the_agent_gets_a_safe_layer(gso: tuple[Path, Path, list[dict]],
                                                            prebuilt: tuple[str, dict]) -> None:
    rows, mirror, _ = gso
    name, row = prebuilt
    (task,) = [t for t in select_tasks(str(rows), "gso", repo_mirror=str(mirror)) if t.id == row["instance_id"]]
    messages: list[str] = []
    images = provider("docker").ensure_images([task], "debian:bookworm-slim", progress=messages.append)[task.id]
    assert images.grading == name and not any("building" in m for m in messages), messages
    with DockerSandbox.start(images.agent, client=client()) as box:
        assert box.exec(f"test -e {MARKER}").exit_code == 0  # made from GSO's image
        assert box.exec("test -e /eval.sh").exit_code == 1
        assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code != 0
        assert box.exec(f"git log --all --format=%H | grep -c {row['opt_commit']}").output.strip() == "0"
        assert box.exec("git rev-parse HEAD").output.strip() == row["base_commit"]
        assert box.exec("python -c 'import sys; print(sys.prefix)'").output.strip() == "/testbed/.venv"
        assert box.diff() == ""
    # Graded base and patch states start from the history cut, GSO's image otherwise: a build cannot check
    # out the expert's commit there; the expert's state starts from GSO's image, which has it.
    assert images.base and images.base not in (images.grading, images.agent)
    with DockerSandbox.start(images.base, client=client()) as box:
        assert box.exec(f"test -e {MARKER} && test -e /eval.sh").exit_code == 0
        assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code != 0
        assert box.exec("git rev-parse HEAD").output.strip() == row["base_commit"]
    with DockerSandbox.start(images.grading, client=client()) as box:
        assert box.exec(f"git cat-file -e {row['opt_commit']}").exit_code == 0


@pytest.mark.timed  # verdicts on timed code: alone (make test's second pass)
def test_a_run_grades_in_gsos_image(gso: tuple[Path, Path, list[dict]], prebuilt: tuple[str, dict],
                                    tmp_path: Path) -> None:
    rows, mirror, _ = gso
    name, row = prebuilt
    done = runner("tasks=gso", f"tasks.dataset={rows}", f"tasks.repo_mirror={mirror}", "tasks.image=prebuilt",
                  f"tasks.ids=[{row['instance_id']}]", "model=oracle", "scaffold=mini_swe", "rollouts=1",
                  "grading.rounds=2", out=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((run_dir(tmp_path) / "report.json").read_text())
    assert report["summary"]["opt_at_k"]["1"] == 1.0, report["tasks"]


def test_an_image_neither_present_nor_pullable_is_one_line(gso: tuple[Path, Path, list[dict]],
                                                           tmp_path: Path) -> None:
    rows, mirror, raw = gso
    # tasks.image=prebuilt: GSO's image is not here and the registry does not answer
    done = runner("tasks=gso", f"tasks.dataset={rows}", f"tasks.repo_mirror={mirror}", "tasks.image=prebuilt",
                  f"tasks.ids=[{raw[1]['instance_id']}]", out=tmp_path, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(lines) == 1 and "pulling slimshetty/gso:gso.eval.x86_64." in lines[0], done.stderr
    # tasks.image=auto: not present, not pullable, and not buildable (the repository is not in the mirror).
    # A row of its own: an image another test built for the fixture's row would be present.
    row = {**raw[1], "instance_id": f"{raw[1]['instance_id']}-nowhere"}
    alone = tmp_path / "alone.jsonl"
    alone.write_text(json.dumps(row) + "\n")
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    done = runner("tasks=gso", f"tasks.dataset={alone}", f"tasks.repo_mirror={empty}",
                  f"tasks.ids=[{row['instance_id']}]", out=tmp_path / "2", timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(lines) == 1 and "is neither present nor buildable" in lines[0] and "no repository at" in lines[0], \
        done.stderr


NETWORK_PATCH = ("diff --git a/fastsum/__init__.py b/fastsum/__init__.py\n--- a/fastsum/__init__.py\n"
                 "+++ b/fastsum/__init__.py\n@@ -1,5 +1,6 @@\n import time\n+import urllib.request\n \n" + """\
 def total(xs):
-    time.sleep(0.30)
+    urllib.request.urlopen("http://example.com/", timeout=60)
     return sum(xs)
""")


def test_a_patch_that_needs_the_network_fails_with_that_reason(gso: tuple[Path, Path, list[dict]]) -> None:
    rows, mirror, raw = gso
    (task,) = [t for t in select_tasks(str(rows), "gso", repo_mirror=str(mirror), image="build")
               if t.id == raw[0]["instance_id"]]
    images = provider("docker").ensure_images([task], "debian:bookworm-slim", progress=lambda _m: None)[task.id]
    report = grade(task, NETWORK_PATCH, images.grading, GradeConfig(rounds=1, bootstrap=10))
    assert report["status"] == "test_failed", report["reason"]
    assert "needs the network, which is off for this task (tasks.network=none" in report["reason"]
    assert report["wall_time_s"] < 60  # failed at once, not after the 60 s the request would wait
